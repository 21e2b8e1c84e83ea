"""The main screen's keys: its bindings (a binding's tooltip is its line in the help screen),
which are a recording's and which a running process's, and the help's lines made from them."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from .time_keys import TIME_ACTIONS, TIME_KEYS

# The help screen is made from these: a binding's tooltip is its line there.
SCREEN_KEYS: list[BindingType] = [
    # First, so that the footer of a narrow terminal still shows them.
    Binding("question_mark", "help", "Help", key_display="?", tooltip="this help"),
    Binding("q", "app.quit", "Quit", tooltip="quit"),
    Binding("1", "sort('own_pct')", "%Own", tooltip="sort by %Own (or click a column header)"),
    Binding("2", "sort('total_pct')", "%Total", tooltip="sort by %Total"),
    Binding("3", "sort('own_time')", "OwnTime", tooltip="sort by OwnTime"),
    Binding("4", "sort('total_time')", "TotalTime", tooltip="sort by TotalTime"),
    Binding("l,L", "toggle_lines", "Lines", key_display="L", tooltip="show lines instead of functions, and back"),
    Binding("m", "next_mode", "Mode",
            tooltip="what times measure: cpu (the kernel's count), wall (every thread), gil (the GIL holder)"),
    Binding("r,R", "reset", "Reset", key_display="R", tooltip="reset all statistics"),
    Binding("T", "toggle_tree", "Tree",
            tooltip="the call tree: hot paths from the threads' start, opened along the hottest; from a "
                    "function, along its hottest path (T or Esc: back to the table)"),
    Binding("t", "toggle_threads", "Threads",
            tooltip="show or hide the threads; Enter on one shows only its functions"),
    Binding("a", "all_threads", "All threads", show=False, tooltip="all threads again"),
    Binding("P", "next_process", "Process",
            tooltip="with --subprocesses: one process after another, then all again"),
    Binding("slash", "filter", "Filter", key_display="/",
            tooltip="filter functions and files by a text or regular expression (Enter applies)"),
    Binding("c", "clear_filter", "Clear filter", show=False, tooltip="clear the filter"),
    Binding("plus,equals_sign", "refresh_rate(-1)", "Faster", key_display="+", show=False,
            tooltip="refresh the screen more often"),
    Binding("minus", "refresh_rate(1)", "Slower", key_display="-", show=False,
            tooltip="refresh the screen less often"),
    Binding("A", "toggle_tasks", "Tasks",
            tooltip="asyncio tasks (CPython 3.14+): show each task as a frame above its coroutines, and back"),
    Binding("p", "pause", "Pause", tooltip="pause the screen (sampling goes on); p again shows what came in"),
    Binding("d", "stacks_now", "Stacks now",
            tooltip="every thread's stack as it is now, with each frame's arguments and locals (the thread "
                    "the view is narrowed to, if it is)"),
    Binding("e", "export", "Export",
            tooltip="export everything since the reset: collapsed stacks and speedscope JSON, here"),
    Binding("escape", "close_panel", "Close", show=False),
    Binding("B", "baseline", "Baseline",
            tooltip="compare with a baseline: the totals so far become it, and the table shows each "
                    "function's change per second since (B again: the plain table); e then also writes "
                    "the comparison as text and JSON"),
    Binding("b", "back", "Hosts",
            tooltip="back to the table of the host's Python processes (Esc too, with nothing open)"),
    # A recording shown again (pytop FILE): its time cursor.
    *TIME_KEYS,
]
REPLAY_ACTIONS = TIME_ACTIONS  # a recording's keys: not a running process's
REPLAY_HELP = {"reset": "a recording: the totals start at the cursor (again: from the recording's start)",
               "export": "export the totals shown (the range up to the cursor): collapsed stacks and "
                         "speedscope JSON, here",
               "baseline": "compare with a baseline: the range shown becomes it; move the cursor (R starts "
                           "another range) and the table shows each function's change per second against it "
                           "(B again: the plain table)"}
LIVE_ACTIONS = {"stacks_now", "refresh_rate", "pause"}  # of a running process: not a recording's
# Keys the table and panels handle themselves.
WIDGET_KEYS = [
    ("Enter, click", "callers and callees of a function; Enter on one goes to it, Esc closes"),
    ("↑ ↓ PgUp PgDn", "scroll the table (the mouse wheel too)"),
    ("Ctrl-C", "quit"),
]

def key_help(back: bool = True, replay: bool | None = None) -> list[tuple[str, str]]:
    """One line per key with a tooltip, then the widgets' keys (the back key's if `back`;
    a recording's keys or a live view's, or both with `replay` None)."""
    rows = [(b.key_display or b.key, REPLAY_HELP.get(b.action, b.tooltip) if replay else b.tooltip)
            for b in SCREEN_KEYS if isinstance(b, Binding) and b.tooltip and (back or b.action != "back")
            and shown_in(b.action.split("(")[0], replay)]
    return rows + WIDGET_KEYS

def shown_in(action: str, replay: bool | None) -> bool:
    """Is the key of `action` offered: in a recording (replay), a live view (not), or both (None)?"""
    if replay is None:
        return True
    return action not in (LIVE_ACTIONS if replay else REPLAY_ACTIONS)
