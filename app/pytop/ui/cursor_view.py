"""A list of lines with a cursor, drawn through Textual's Line API (a ScrollView that renders only
the lines in sight): what the function table (linetable.py) and the call tree (calltree.py)
share. The cursor moves by line, by page and to either end; it is kept in sight; a click moves
it, and a click on the cursor's line chooses it (Enter does in the subclasses' own bindings).

A subclass says how many lines it has (`line_count`), how many fixed lines come before them
(HEADER_LINES: a table's header), and what choosing, a click on the header and a move do."""

from __future__ import annotations

from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView


class CursorView(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up", "cursor(-1)", show=False),
        Binding("down", "cursor(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "cursor(-1000000000)", show=False),
        Binding("end", "cursor(1000000000)", show=False),
    ]
    HEADER_LINES = 0  # lines drawn above the first line (a table's header: line 0)

    cursor = 0

    @property
    def line_count(self) -> int:
        raise NotImplementedError

    # ---- what subclasses do --------------------------------------------------------------------

    def cursor_moved(self, was: int) -> None:
        """The cursor went from line `was` to self.cursor (the same line, perhaps)."""

    def choose(self) -> None:
        """Enter, or a click on the cursor's line."""

    def click_header(self, x: int) -> None:
        """A click on the header, `x` cells from its left."""

    # ---- moving ----------------------------------------------------------------------------

    def move_cursor(self, index: int) -> None:
        """The cursor to line `index` (clamped to the lines there are), kept in sight."""
        if not self.line_count:
            return
        was, scrolled = self.cursor, self.scroll_offset
        self.cursor = max(0, min(self.line_count - 1, index))
        self.scroll_to_cursor()
        if self.scroll_offset == scrolled:  # only the two lines the cursor left and reached change
            self.refresh_line(was + self.HEADER_LINES)
            self.refresh_line(self.cursor + self.HEADER_LINES)
        else:
            self.refresh()
        self.cursor_moved(was)

    def scroll_to_cursor(self) -> None:
        """The cursor's line in sight, with the header lines above it when it is the first."""
        if self.line_count:
            self.scroll_to_region(Region(0, self.cursor, 1, 1 + self.HEADER_LINES), animate=False, force=True)

    def fit_to_lines(self) -> None:
        """The scrolled size, after the lines changed (the caller redraws them). Setting it is a
        layout pass, which repaints every widget on the screen: on a live server whose table
        gained or lost a row most refreshes, half the screen's CPU. When the scrollbar stays
        shown or hidden as it was, only its length and the furthest scroll change, and those
        are set here instead."""
        size = Size(self.size.width, self.line_count + self.HEADER_LINES)
        if size == self.virtual_size:
            return
        room = self.container_size.height
        same_bars = size.width == self.virtual_size.width and (size.height > room) == (self.virtual_size.height > room)
        if not (self.is_mounted and room and same_bars):
            self.virtual_size = size
            return
        self.set_reactive(CursorView.virtual_size, size)  # no layout pass
        if self.show_vertical_scrollbar:
            self.vertical_scrollbar.window_virtual_size = size.height
        if self.scroll_y > self.max_scroll_y:  # fewer lines than the view was scrolled past
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(self.cursor + step * max(1, self.size.height - 1 - self.HEADER_LINES))

    def on_click(self, event: Click) -> None:
        if event.y < self.HEADER_LINES:
            self.click_header(event.x)
            return
        index = self.scroll_offset.y + event.y - self.HEADER_LINES
        if 0 <= index < self.line_count:
            if index == self.cursor:
                self.choose()
            else:
                self.move_cursor(index)

    def on_resize(self) -> None:
        self.fit_to_lines()
