"""Text from outside pytop made safe to show: a target's function, file and thread names, its
command line, another user's command lines. Pure.

A target can name a function or a thread anything, and a local user can run a program with any
arguments: a control character in them, sent to the terminal, is a command to it (OSC 52 sets
its clipboard, OSC 2 its window title, ESC[2J clears it), and a newline forges lines of a report
or an export. Every such string passes through visible() as it enters pytop, so no view, report
or export ever holds one: control characters (C0, DEL, C1) and the characters that reorder text
(bidirectional overrides and isolates) are shown as escapes, as Python's repr shows them. It is
plain text, never markup: the screen draws it through rich.text.Text, never a markup parser.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls; bidirectional embeddings, overrides and isolates ("Trojan
# Source"); the line and paragraph separators.
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every character that would act instead of show written as an escape."""
    return _HIDDEN.sub(_escape, text) if _HIDDEN.search(text) else text


def visible_or_none(text: str | None) -> str | None:
    return None if text is None else visible(text)


def visible_command(text: str) -> str:
    """A command line for one line of text: a `-c` script's newlines shown as ⏎ and its tabs as
    spaces (a program's own, not an attack), then visible()."""
    return visible(text.replace("\r\n", "\n").replace("\n", " ⏎ ").replace("\t", " "))
