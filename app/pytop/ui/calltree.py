"""The call tree view (T): hot paths from the threads' start, total and own time per node,
opened along the hottest path, or along the hottest path to the function that was selected.

Rebuilt from each snapshot's tree; what the user opened and where the cursor is are kept as
paths of keys, so a refresh changes the figures and not the place."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode as UINode

from ..core.calltree import hottest_path
from ..core.model import RowKey, TreeNode
from ..report import format as fmt
from .callers import describe

Path = tuple[RowKey, ...]


def prefixes(path: Path) -> set[Path]:
    return {path[:i] for i in range(1, len(path) + 1)}


class CallTreeView(Tree[Path]):
    def __init__(self, **kwargs: object) -> None:
        super().__init__("call tree", **kwargs)  # type: ignore[arg-type]
        self.show_root = False
        self.guide_depth = 2
        self.opened: set[Path] | None = None  # None: along the hottest path, until the user acts
        self.wanted: RowKey | None = None  # open the tree along this function's hottest path
        self.cursor_path: Path = ()
        self.nodes: dict[Path, TreeNode] = {}
        self.cwd: str | None = None
        self.full = False
        self.total = 0.0
        self._building = False

    def open_at(self, key: RowKey | None) -> None:
        """The next tree shown opens along `key`'s hottest path (None: the hottest of all)."""
        self.wanted = key
        self.opened = None

    def show(self, root: TreeNode, cwd: str | None, full: bool) -> None:
        self.cwd, self.full, self.total = cwd, full, root.total
        if self.opened is None or self.wanted is not None:
            path = hottest_path(root, self.wanted) or hottest_path(root)
            self.opened = (self.opened or set()) | prefixes(path[:-1] if self.wanted else path)
            self.cursor_path = path if self.wanted else path[:1]
            self.wanted = None
        self.nodes = {}
        self._building = True
        try:
            self.clear()
            cursor = self._grow(self.root, root, ())
        finally:
            self._building = False
        if cursor is not None:  # once the lines of the new nodes are laid out
            self.call_after_refresh(self.move_cursor, cursor)

    def _grow(self, ui: UINode[Path], node: TreeNode, path: Path) -> UINode[Path] | None:
        """Nodes are added down the opened paths only; a closed node gets its children when it
        is opened. Returns the node at the cursor's path, if it was added."""
        cursor = None
        for child in node.children:
            here = (*path, child.key)
            self.nodes[here] = child
            opened = self.opened is not None and here in self.opened
            item = ui.add(self.label(child), data=here, expand=opened, allow_expand=bool(child.children))
            if here == self.cursor_path:
                cursor = item
            if opened:
                cursor = self._grow(item, child, here) or cursor
        return cursor

    def label(self, node: TreeNode) -> Text:
        share = 100.0 * node.total / self.total if self.total else 0.0
        text = Text(f"{fmt.percent(share):>6} {fmt.seconds(node.total):>7}  ", style="bold")
        text.append(f"own {fmt.seconds(node.own):>6}  ", style="dim")
        text.append_text(describe(node.key, self.cwd, self.full))
        return text

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Path]) -> None:
        if self._building or event.node.data is None:
            return
        path = event.node.data
        self.opened = (self.opened or set()) | {path}
        node = self.nodes.get(path)
        if node is not None and not event.node.children:
            self._grow(event.node, node, path)

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[Path]) -> None:
        if self._building or event.node.data is None or self.opened is None:
            return
        self.opened.discard(event.node.data)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Path]) -> None:
        if not self._building and event.node.data is not None:
            self.cursor_path = event.node.data
