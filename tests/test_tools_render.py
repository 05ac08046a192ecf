"""The model's copy of a tool result: repeated rows collapsed with counts, head and tail kept, a note saying so."""
from __future__ import annotations

import time

from cloud.tools.render import EMPTY_OUTPUT, cap_head_tail, collapse_repeated_lines, render_for_model


def test_short_unique_output_is_left_alone():
    text = "door D1\ndoor D2\n"
    assert render_for_model(text, 1000) == "door D1\ndoor D2"


def test_empty_or_blank_output_is_stated_explicitly():
    for output in ("", "\n", "   \n\t\n"):
        assert render_for_model(output) == EMPTY_OUTPUT == "(the script printed nothing)"


def test_repeated_rows_keep_their_first_occurrence_with_a_count_and_the_note_gives_the_number():
    output = "header\n" + "IfcWall | Basic 200\n" * 500 + "IfcDoor | D1\n" + "IfcWall | Basic 200\n" * 10 + "end\n"
    rendered = render_for_model(output, 10_000)
    assert rendered.split("\n")[:4] == ["header", "IfcWall | Basic 200  [x510]", "IfcDoor | D1", "end"]
    assert "[Note: 509 repeated rows were collapsed into their first occurrence (counts shown as [xN]).]" in rendered
    assert "capped" not in rendered


def test_collapse_counts_rows_removed():
    text, removed = collapse_repeated_lines("a\nb\na\nc\nb\na")
    assert text == "a  [x3]\nb  [x2]\nc" and removed == 3
    assert collapse_repeated_lines("a\nb") == ("a\nb", 0)


def test_long_output_keeps_whole_lines_from_head_and_tail_and_states_what_was_elided():
    rows = [f"row {n:05} | {'#' * 60}" for n in range(2000)]
    output = "\n".join(rows)
    rendered = render_for_model(output, 5_000)
    body, note = rendered.split("\n\n[Note: ")
    head, tail = body.split("\n... [")[0], body.split("elided] ...\n")[1]
    assert head.split("\n") == rows[:len(head.split("\n"))]
    assert tail.split("\n") == rows[-len(tail.split("\n")):]
    kept = len(head.split("\n")) + len(tail.split("\n"))
    elided_chars = len(output) - len(head) - len(tail)
    assert f"the middle {2000 - kept:,} lines ({elided_chars:,} characters) were elided" in note
    assert "the person sees the full output" in note and "Filter or aggregate" in note
    assert len(head) <= 3_000 and len(tail) <= 2_000 and len(head) > len(tail)


def test_cap_head_tail_is_exact_about_lines_and_characters():
    text = "\n".join(str(n) * 10 for n in range(10))  # ten lines of ten characters
    capped, lines, chars = cap_head_tail(text, 40)
    assert capped == "0000000000\n1111111111\n... [7 lines / 78 characters elided] ...\n9999999999"
    assert (lines, chars) == (7, len(text) - 21 - 10)  # lines 2..8 are gone; the span holds their line ends
    assert cap_head_tail("short", 40) == ("short", 0, 0)
    one_long_line = cap_head_tail("x" * 50, 20)
    assert one_long_line[1:] == (0, 30)  # cut inside one line: no whole line is gone


def test_both_notes_appear_when_a_result_is_collapsed_and_capped():
    output = "".join(f"unique {n} {'x' * 50}\n" for n in range(1000)) + "same\n" * 1000
    rendered = render_for_model(output, 4_000)
    assert "999 repeated rows were collapsed" in rendered and "were elided" in rendered
    assert "same  [x1000]" in rendered  # the collapsed row sits in the kept tail


def test_sixty_thousand_duplicate_heavy_rows_render_quickly():
    output = "".join(f"IfcDoor | Level {n % 3} | {'x' * 80}{' | #' + str(n) if n % 50 == 0 else ''}\n"
                     for n in range(60_000))
    assert len(output) > 5_000_000
    started = time.perf_counter()
    rendered = render_for_model(output, 20_000)
    elapsed = time.perf_counter() - started
    assert len(rendered) < 21_000
    assert elapsed < 1.0  # the benchmark pins the real target (50 ms); this only catches a quadratic slip


def test_output_cut_by_the_host_says_where_and_that_the_last_line_is_partial_and_never_claims_the_full_output():
    cut = "".join(f"row {n}\n" for n in range(5000)) + "row 50"  # the host's cap fell inside a line
    text = render_for_model(cut, 2000, host_cut=True)
    assert "row 50\n[output cut off here by the host: the line above is partial" in text
    assert f"after {len(cut):,} characters (5,001 lines)" in text and "lost, to the person as well" in text
    assert "the person sees the full output" not in text and "the person sees everything the host kept" in text


def test_output_cut_by_the_host_at_a_line_end_is_not_called_partial():
    text = render_for_model("a\nb\n", host_cut=True)
    assert "b\n[output cut off here by the host]" in text and "partial" not in text.split("[Note:")[0]
