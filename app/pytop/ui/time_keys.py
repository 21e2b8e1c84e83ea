"""The keys that move a recording's time cursor: the same in the live view's screen (a run shown
again, or the past of one being recorded) and in the host's table shown again."""

from __future__ import annotations

from textual.binding import Binding

# (the actions each screen defines: seek(looks or windows), seek_seconds(s), seek_edge(-1 or 1), go_to)
TIME_KEYS = [
    Binding("left_square_bracket", "seek(-1)", "Back", key_display="[",
            tooltip="a recording: one window back in time ([ and ] step, { and } by a minute)"),
    Binding("right_square_bracket", "seek(1)", "Forward", key_display="]",
            tooltip="a recording: one window forward in time"),
    Binding("left_curly_bracket", "seek_seconds(-60)", "-1 min", key_display="{", show=False,
            tooltip="a recording: a minute back"),
    Binding("right_curly_bracket", "seek_seconds(60)", "+1 min", key_display="}", show=False,
            tooltip="a recording: a minute forward"),
    Binding("less_than_sign", "seek_edge(-1)", "Start", key_display="<", show=False,
            tooltip="a recording: its first window"),
    Binding("greater_than_sign", "seek_edge(1)", "End", key_display=">", show=False,
            tooltip="a recording: its last window"),
    Binding("g", "go_to", "Go to", show=False,
            tooltip="a recording: go to a time, as 14:05:30 (the clock) or 5m30s (from its start)"),
]
TIME_ACTIONS = frozenset({"seek", "seek_seconds", "seek_edge", "go_to"})
