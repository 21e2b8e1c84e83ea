"""The call tree: every counted stack as a path from its outermost frame in, merged where paths
share a start, with each node's total (its subtree) and own (samples taken in it) time. Pure.

Made from the engine's per-node sums over its stack tree (Engine.aggregate with nodes): the
stack tree is already this tree, keyed by (code, line) at each level; here nodes of one level are
merged by function (or line), a task's pseudo-frame is left out while tasks are hidden, and a run
of direct recursion (a node whose only child is the same function) is folded into one node that
says how deep it goes. Every walk is a loop, never a recursion: a stack may be 50,000 frames deep.

Stacks known to be incomplete (cut at the depth limit, or read while they changed) do not start
at a thread's start: they go under a node of their own rather than pass for a root. Nodes below
MIN_SHARE of the whole are folded into one "(smaller calls)" node per parent.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Mode, RowKey, TreeNode
from .records import COARSE_FRAME, STACK_COARSE, STACK_INCOMPLETE, NodeRow
from .stack_book import StackBook
from .tally import mode_column

ROOT: RowKey = ("(all threads)", "", 0, 0)
CUT: RowKey = ("(stacks cut short: outer frames unknown)", "", 0, 0)
COARSE: RowKey = (COARSE_FRAME, "", 0, 0)  # their frames a set, in no call order
SMALLER: RowKey = ("(smaller calls)", "", 0, 0)
MIN_SHARE = 0.001  # of the root's total


class _Building:
    """A node of the tree being made: the stack-tree nodes merged into it."""

    __slots__ = ("key", "total", "own", "nodes", "children", "repeat", "frozen")

    def __init__(self, key: RowKey) -> None:
        self.key = key
        self.total = 0.0
        self.own = 0.0
        self.nodes: list[int] = []
        self.children: list[_Building] = []
        self.repeat = 1
        self.frozen: TreeNode | None = None


class _Sums:
    """Per stack-tree node: own and total seconds, and children, for the rows' nodes."""

    def __init__(self, rows: Iterable[NodeRow], book: StackBook, mode: Mode) -> None:
        col = mode_column(mode)
        rows = [row for row in rows if book.known(row.node)]
        self.own = {row.node: row.own[col] / 1e9 for row in rows}
        self.total = {row.node: row.total[col] / 1e9 for row in rows}
        self.children: dict[int, list[int]] = {}
        self.roots: list[int] = []
        parents = book.parent
        for row in rows:
            parent = parents[row.node]
            if parent:
                kids = self.children.get(parent)
                if kids is None:
                    self.children[parent] = [row.node]
                else:
                    kids.append(row.node)
            else:
                self.roots.append(row.node)


def _shown_children(node: int, sums: _Sums, book: StackBook) -> list[int]:
    """A node's children as shown: a hidden task frame gives way to its own children."""
    out: list[int] = []
    pending = list(sums.children.get(node, ()))
    while pending:
        child = pending.pop()
        if book.hidden(child):
            pending.extend(sums.children.get(child, ()))
        else:
            out.append(child)
    return out


def _group(parent: _Building, sums: _Sums, book: StackBook, by_line: bool) -> dict[RowKey, _Building]:
    """The children of a tree node: its stack-tree nodes' children, merged by key."""
    groups: dict[RowKey, _Building] = {}
    for node in parent.nodes:
        for child in _shown_children(node, sums, book):
            key = book.key(child, by_line)
            group = groups.get(key)
            if group is None:
                group = groups[key] = _Building(key)
            group.nodes.append(child)
            group.total += sums.total.get(child, 0.0)
            group.own += sums.own.get(child, 0.0) + _hidden_own(child, sums, book)
    return groups


def _hidden_own(node: int, sums: _Sums, book: StackBook) -> float:
    """Own time of hidden task frames right below `node`: while tasks are hidden, it is its."""
    if book.tasks:
        return 0.0
    extra = 0.0
    pending = [c for c in sums.children.get(node, ()) if book.hidden(c)]
    while pending:
        child = pending.pop()
        extra += sums.own.get(child, 0.0)
        pending.extend(c for c in sums.children.get(child, ()) if book.hidden(c))
    return extra


def _fold_recursion(building: _Building, sums: _Sums, book: StackBook, by_line: bool) -> None:
    """A straight run of direct recursion (each node the only child of one of the same function,
    or line), folded into `building` without grouping each level: a recursion 50,000 deep is a
    loop over integers."""
    function, line, hidden = book.function, book.line, book.hidden
    while len(building.nodes) == 1:
        node = building.nodes[0]
        kids = sums.children.get(node)
        if kids is None or len(kids) != 1:
            return
        child = kids[0]
        if function[child] != function[node] or (by_line and line[child] != line[node]) or hidden(child):
            return
        building.repeat += 1
        building.own += sums.own.get(child, 0.0)
        building.nodes = kids


def call_tree(rows: Iterable[NodeRow], book: StackBook, by_line: bool, mode: Mode = "cpu") -> TreeNode:
    """The tree of the stacks whose per-node sums are `rows`."""
    sums = _Sums(rows, book, mode)
    root = _Building(ROOT)
    cut = _Building(CUT)
    coarse = _Building(COARSE)
    holders = (root, cut, coarse)
    for node in sums.roots:
        root.total += sums.total.get(node, 0.0)
        kind = book.kind[node]
        holder = coarse if kind & STACK_COARSE else cut if kind & STACK_INCOMPLETE else root
        if holder is not root:
            holder.total += sums.total.get(node, 0.0)
        if book.function[node]:  # a kind without frames (a thread in C, ...): a node of its own
            pseudo = _Building(book.key(node, by_line))
            pseudo.total = pseudo.own = sums.total.get(node, 0.0)
            holder.children.append(pseudo)
        else:
            holder.nodes.append(node)
    smallest = MIN_SHARE * root.total
    # Grow level by level, from a work list: no recursion, whatever the depth.
    work = list(holders)
    while work:
        building = work.pop()
        held = not any(building is holder for holder in holders)
        if held:
            _fold_recursion(building, sums, book, by_line)
        groups = _group(building, sums, book, by_line)
        while len(groups) == 1 and held:
            (only,) = groups.values()
            if only.key != building.key:
                break
            building.repeat += 1  # direct recursion: one node that says how deep
            building.own += only.own
            building.nodes = only.nodes
            groups = _group(building, sums, book, by_line)
        building.children.extend(groups.values())
        work.extend(child for child in groups.values() if child.total >= smallest)
    root.children.extend(holder for holder in (cut, coarse) if holder.total)
    return _freeze(root, smallest)


def _freeze(root: _Building, smallest: float) -> TreeNode:
    """The immutable tree, children hottest first, small ones folded; made from the leaves up."""
    order: list[_Building] = []
    work = [root]
    while work:  # parents before children
        node = work.pop()
        order.append(node)
        work.extend(child for child in node.children if child.total >= smallest or child.key in (CUT, COARSE))
    for node in reversed(order):
        big = [c for c in node.children if c.frozen is not None]
        small = [c for c in node.children if c.frozen is None]
        children = [c.frozen for c in sorted(big, key=lambda c: (-c.total, c.key)) if c.frozen is not None]
        if small:
            rest = sum(c.total for c in small)
            children.append(TreeNode(SMALLER, rest, rest, ()))
        node.frozen = TreeNode(node.key, node.total, node.own, tuple(children), node.repeat)
        node.children = []  # what it held is in its frozen node now
    assert root.frozen is not None
    return root.frozen


def hottest_path_through(node: TreeNode, through: RowKey) -> tuple[RowKey, ...]:
    """The hottest path that reaches function `through`, on down its hottest branch below it
    (where its time goes); () if none reaches it."""
    path = hottest_path(node, through)
    for key in path:
        node = next(child for child in node.children if child.key == key)
    return path + hottest_path(node) if path else ()


def hottest_path(node: TreeNode, through: RowKey | None = None) -> tuple[RowKey, ...]:
    """Keys from the root's child down the hottest branch; with `through`, the hottest path that
    reaches that function (down to its first occurrence), or () if none does."""
    if through is None:
        hottest: list[RowKey] = []
        while node.children:
            node = node.children[0]
            hottest.append(node.key)
        return tuple(hottest)
    best_total = -1.0
    best: tuple[RowKey, ...] = ()
    path: list[RowKey] = []
    work: list[tuple[TreeNode, int]] = [(child, 0) for child in node.children]
    while work:  # depth first, the path so far kept once (a deep tree's paths are long)
        current, depth = work.pop()
        del path[depth:]
        path.append(current.key)
        if current.key == through:
            if current.total > best_total:
                best_total, best = current.total, tuple(path)
            continue
        work.extend((child, depth + 1) for child in current.children)
    return best
