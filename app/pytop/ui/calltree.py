"""The call tree view (T): hot paths from the threads' start, total and own time per node,
opened along the hottest path, or along the hottest path to the function that was selected.

Drawn through Textual's Line API (a ScrollView that renders only the lines in sight), from a
flat list of the open nodes' lines made with a loop: a tree of any depth opens at once, where a
widget that builds a line per node by recursion failed past a few hundred levels. The figures
come first, in fixed columns, then the name indented by depth (up to MAX_INDENT levels; deeper
lines say their depth). A run of direct recursion is one line, "×N" deep.

Rebuilt from each snapshot's tree; what the user opened and where the cursor is are kept as
keys along paths (a trie of open keys), so a refresh changes the figures and not the place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.strip import Strip

from ..core.calltree import hottest_path, hottest_path_through
from ..core.model import RowKey, TreeNode
from ..report import format as fmt
from .callers import describe
from .cursor_view import CursorView

Path = tuple[RowKey, ...]
MAX_INDENT = 24  # levels of indentation drawn; deeper lines say their depth
FIGURES = 31  # width of the figures' columns


@dataclass
class Line:
    node: TreeNode
    depth: int
    parent: int  # index of its parent's line, -1 for a top one


class Opened:
    """The keys of open nodes, as a trie along their paths (no path is stored whole)."""

    def __init__(self) -> None:
        self.children: dict[RowKey, Opened] = {}

    def along(self, path: Path) -> None:
        node = self
        for key in path:
            node = node.children.setdefault(key, Opened())


class CallTreeView(CursorView):
    BINDINGS = [  # the cursor's keys are CursorView's
        Binding("right", "open", show=False),
        Binding("left", "close", show=False),
        Binding("space,enter", "open_or_close", show=False),
    ]
    COMPONENT_CLASSES = {"calltree--cursor"}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root: TreeNode | None = None
        self.opened: Opened | None = None  # None: along the hottest path, until the user acts
        self.wanted: RowKey | None = None  # open the tree along this function's hottest path
        self.cursor_path: list[RowKey] = []
        self.cursor = 0
        self.lines: list[Line] = []
        self.cwd: str | None = None
        self.full = False

    # ---- what is shown ---------------------------------------------------------------------

    def open_at(self, key: RowKey | None) -> None:
        """The next tree shown opens along `key`'s hottest path (None: the hottest of all)."""
        self.wanted = key
        self.opened = None

    def show_tree(self, root: TreeNode, cwd: str | None, full: bool) -> None:
        self.root, self.cwd, self.full = root, cwd, full
        if self.opened is None or self.wanted is not None:
            # Opened along the function's hottest path and on down where its time goes (a
            # function at the root, Thread.run say, once opened with nothing below it shown).
            wanted = self.wanted
            to_wanted = hottest_path(root, wanted) if wanted is not None else ()
            path = hottest_path_through(root, wanted) if wanted is not None and to_wanted else hottest_path(root)
            self.opened = self.opened or Opened()
            self.opened.along(path)
            self.cursor_path = list(to_wanted or path[:1])
            self.wanted = None
        self._relayout()

    def _relayout(self) -> None:
        """The open nodes' lines, the cursor kept on its path (or the nearest line above)."""
        self.lines = []
        if self.root is None or self.opened is None:
            self.fit_to_lines()
            self.refresh()
            return
        work: list[tuple[TreeNode, int, int, Opened | None]] = [
            (child, 0, -1, self.opened.children.get(child.key)) for child in reversed(self.root.children)]
        while work:  # depth first, children hottest first
            node, depth, parent, opened = work.pop()
            self.lines.append(Line(node, depth, parent))
            if opened is not None:
                at = len(self.lines) - 1
                work.extend((child, depth + 1, at, opened.children.get(child.key)) for child in reversed(node.children))
        self.cursor = self._line_of(self.cursor_path)
        self.fit_to_lines()
        self.scroll_to_cursor()
        self.refresh()

    def _line_of(self, path: list[RowKey]) -> int:
        """The line at the end of `path`, or of as much of it as is open."""
        found, depth = 0, 0
        for i, line in enumerate(self.lines):
            if line.depth == depth and depth < len(path) and line.node.key == path[depth]:
                found, depth = i, depth + 1
                if depth == len(path):
                    break
            elif line.depth < depth:
                break  # past the subtree the path was in
        return found

    def _path_of(self, index: int) -> list[RowKey]:
        path = []
        while 0 <= index < len(self.lines):
            path.append(self.lines[index].node.key)
            index = self.lines[index].parent
        return path[::-1]

    def _opened_at(self, path: list[RowKey], create: bool) -> Opened | None:
        node = self.opened
        for key in path:
            if node is None:
                return None
            node = node.children.setdefault(key, Opened()) if create else node.children.get(key)
        return node

    @property
    def cursor_node(self) -> TreeNode | None:
        return self.lines[self.cursor].node if 0 <= self.cursor < len(self.lines) else None

    def line_text(self, index: int) -> str:
        return self._text(index).plain

    # ---- drawing ---------------------------------------------------------------------------

    def _text(self, index: int) -> Text:
        line = self.lines[index]
        node = line.node
        total = self.root.total if self.root is not None else 0.0
        share = 100.0 * node.total / total if total else 0.0
        text = Text(f"{fmt.percent(share):>6} {fmt.seconds(node.total):>7}  ", style="bold")
        text.append(f"own {fmt.seconds(node.own):>6}  ", style="dim")
        indent = min(line.depth, MAX_INDENT)
        text.append("  " * indent)
        if line.depth > MAX_INDENT:
            text.append(f"[{line.depth}] ", style="dim")
        opened = self._is_open(index)
        text.append("▾ " if node.children and opened else "▸ " if node.children else "  ", style="dim")
        text.append_text(describe(node.key, self.cwd, self.full))
        if node.repeat > 1:
            text.append(f" ×{node.repeat:,} deep", style="bold magenta")
        return text

    def _is_open(self, index: int) -> bool:
        """Its children are shown (they follow it)."""
        return index + 1 < len(self.lines) and self.lines[index + 1].parent == index

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        base = self.rich_style
        if self.root is None and y == 0:  # until the first tree comes (built off this thread)
            return Strip([Segment("  building the call tree...", base + Style(dim=True))]).crop_extend(0, width, base)
        if not 0 <= index < len(self.lines):
            return Strip.blank(width, base)
        text = self._text(index)
        style = base + self.get_component_rich_style("calltree--cursor") if index == self.cursor else base
        segments = [Segment(s.text, style + s.style if s.style else style) for s in text.render(self.app.console)]
        return Strip(segments).crop_extend(self.scroll_offset.x, self.scroll_offset.x + width, style)

    # ---- moving and opening ----------------------------------------------------------------

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def select_line(self, index: int) -> None:
        """Put the cursor on line `index` (clamped to the lines there are)."""
        self.move_cursor(index)

    def cursor_moved(self, was: int) -> None:
        self.cursor_path = self._path_of(self.cursor)

    def choose(self) -> None:
        self.action_open_or_close()

    def _set_open(self, index: int, open_: bool) -> None:
        if self.opened is None or not 0 <= index < len(self.lines) or not self.lines[index].node.children:
            return
        path = self._path_of(index)
        if open_:
            self._opened_at(path, create=True)
        else:
            parent = self._opened_at(path[:-1], create=False)
            if parent is not None:
                parent.children.pop(path[-1], None)
        self.cursor_path = path
        self._relayout()

    def action_open(self) -> None:
        if self._is_open(self.cursor):
            self.move_cursor(self.cursor + 1)  # open already: into it
        else:
            self._set_open(self.cursor, True)

    def action_close(self) -> None:
        if self._is_open(self.cursor):
            self._set_open(self.cursor, False)
        elif 0 <= self.cursor < len(self.lines) and self.lines[self.cursor].parent >= 0:
            self.move_cursor(self.lines[self.cursor].parent)  # closed already: to its parent

    def action_open_or_close(self) -> None:
        if self.lines:
            self._set_open(self.cursor, not self._is_open(self.cursor))


