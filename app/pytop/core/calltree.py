"""The call tree: every counted stack as a path from its outermost frame in, merged where paths
share a start, with each node's total (its subtree) and own (samples taken in it) time. Pure.

Stacks known to be incomplete (cut at the depth limit, or read while they changed) do not start
at a thread's start: they go under a node of their own rather than pass for a root. Nodes below
MIN_SHARE of the whole are folded into one "(smaller calls)" node per parent, so that a tree of
a long run stays a size a screen can rebuild every refresh.
"""

from __future__ import annotations

from collections.abc import Callable

from .aggregate import Counts, StackBook, timed_stacks
from .model import RowKey, TreeNode

ROOT: RowKey = ("(all threads)", "", 0, 0)
CUT: RowKey = ("(stacks cut short: outer frames unknown)", "", 0, 0)
SMALLER: RowKey = ("(smaller calls)", "", 0, 0)
MIN_SHARE = 0.001  # of the root's total


class _Building:
    __slots__ = ("total", "own", "children")

    def __init__(self) -> None:
        self.total = 0.0
        self.own = 0.0
        self.children: dict[RowKey, _Building] = {}


def call_tree(counts: Counts, book: StackBook, by_line: bool, mode: str = "cpu",
              keep: Callable[[int], bool] | None = None) -> TreeNode:
    """keep: which threads' stacks count (None: all)."""
    root = _Building()
    for info, seconds in timed_stacks(counts, book, mode, keep):
        node = root
        node.total += seconds
        if info.incomplete:
            node = node.children.setdefault(CUT, _Building())
            node.total += seconds
        for function, filename, line in reversed(info.frames):  # outermost first
            node = node.children.setdefault((function, filename, line if by_line else 0, info.pid), _Building())
            node.total += seconds
        node.own += seconds
    return _freeze(ROOT, root, MIN_SHARE * root.total)


def _freeze(key: RowKey, node: _Building, smallest: float) -> TreeNode:
    big = [(k, child) for k, child in node.children.items() if child.total >= smallest]
    small = [child for child in node.children.values() if child.total < smallest]
    children = [_freeze(k, child, smallest) for k, child in sorted(big, key=lambda kc: (-kc[1].total, kc[0]))]
    if small:
        rest = sum(child.total for child in small)
        children.append(TreeNode(SMALLER, rest, rest, ()))
    return TreeNode(key, node.total, node.own, tuple(children))


def hottest_path(node: TreeNode, through: RowKey | None = None) -> tuple[RowKey, ...]:
    """Keys from the root's child down the hottest branch; with `through`, the hottest path that
    reaches that function (down to its first occurrence), or () if none does."""
    if through is None:
        hottest: list[RowKey] = []
        while node.children:
            node = node.children[0]
            hottest.append(node.key)
        return tuple(hottest)
    best: tuple[float, tuple[RowKey, ...]] = (-1.0, ())
    stack: list[tuple[TreeNode, tuple[RowKey, ...]]] = [(child, (child.key,)) for child in node.children]
    while stack:
        current, path = stack.pop()
        if current.key == through:
            if current.total > best[0]:
                best = (current.total, path)
            continue
        stack.extend((child, (*path, child.key)) for child in current.children)
    return best[1]
