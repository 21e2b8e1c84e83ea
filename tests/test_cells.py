"""Cells are terminal columns, not characters: a CJK thread or function name takes two columns a
character, and a table cut by characters shifted every column after it."""

from __future__ import annotations

from rich.cells import cell_len

from pytop.ui.linetable import cell_parts


def width(parts: list[tuple[str, str]]) -> int:
    return sum(cell_len(text) for text, _ in parts)


def test_a_wide_name_is_cut_and_padded_to_its_columns() -> None:
    for room in range(0, 20):
        for right in (False, True):
            assert width(cell_parts("工作线程-数据库", room, right)) == room
            assert width(cell_parts((("线程", "bold"), (" worker", ""), ("日本語", "dim")), room, right)) == room


def test_narrow_text_is_kept_whole() -> None:
    assert cell_parts("handler-0", 12, False) == [("handler-0", ""), ("   ", "")]
    assert cell_parts("日本", 6, True) == [("  ", ""), ("日本", "")]
