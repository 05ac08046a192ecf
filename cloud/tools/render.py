"""The model's copy of a tool result: duplicate rows collapsed, capped head and tail, and a note saying so.

The person always gets the full output elsewhere; this copy exists so one huge dump cannot evict the
rest of the conversation, and the note keeps the model from mistaking a cut table for a complete one.
"""
from __future__ import annotations

from collections import Counter

DEFAULT_MAX_CHARS = 20_000
HEAD_SHARE = 0.6
EMPTY_OUTPUT = "(the script printed nothing)"


def collapse_repeated_lines(text: str) -> tuple[str, int]:
    """Keep the first occurrence of each repeated line, suffixed with its count; return (text, rows removed)."""
    lines = text.split("\n")
    counts = Counter(lines)
    if len(counts) == len(lines):
        return text, 0
    out, seen = [], set()
    for line in lines:
        n = counts[line]
        if n == 1:
            out.append(line)
        elif line not in seen:
            seen.add(line)
            out.append(f"{line}  [x{n}]" if line.strip() else line)
    return "\n".join(out), len(lines) - len(out)


def cap_head_tail(text: str, max_chars: int) -> tuple[str, int, int]:
    """Keep whole lines from the head and tail within max_chars; return (text, lines elided, chars elided)."""
    if len(text) <= max_chars:
        return text, 0, 0
    head_budget = int(max_chars * HEAD_SHARE)
    tail_budget = max_chars - head_budget
    head_end = text.rfind("\n", 0, head_budget)
    head_end = head_budget if head_end <= 0 else head_end
    tail_start = text.find("\n", len(text) - tail_budget)
    tail_start = len(text) - tail_budget if tail_start < 0 else tail_start + 1
    head, elided, tail = text[:head_end], text[head_end:tail_start], text[tail_start:]
    # Whole lines elided: the span's newlines, less one (a span between two kept lines holds both of
    # their line ends); none when the cut falls inside a single long line.
    lines = max(0, elided.count("\n") - 1)
    marker = f"\n... [{lines:,} lines / {len(elided):,} characters elided] ...\n"
    return head + marker + tail, lines, len(elided)


def render_for_model(output: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    if not output.strip():
        return EMPTY_OUTPUT
    text, removed = collapse_repeated_lines(output.rstrip("\n"))
    text, lines_cut, chars_cut = cap_head_tail(text, max_chars)
    notes = []
    if removed:
        notes.append(f"{removed:,} repeated rows were collapsed into their first occurrence (counts shown as [xN])")
    if chars_cut:
        notes.append(f"the output was capped for AI processing: the middle {lines_cut:,} lines "
                     f"({chars_cut:,} characters) were elided; the person sees the full output. "
                     "Filter or aggregate in the script if you need the elided rows")
    if notes:
        text += "\n\n[Note: " + "; ".join(notes) + ".]"
    return text
