"""The model's copy of a tool result: duplicate rows collapsed, capped head and tail, and a note saying so.

The person always gets the full output elsewhere; this copy exists so one huge dump cannot evict the
rest of the conversation, and the note keeps the model from mistaking a cut table for a complete one.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from cloud.config import Settings
from cloud.prompts import message

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


def render_for_model(output: str, max_chars: int = DEFAULT_MAX_CHARS, host_cut: bool = False) -> str:
    """The model's copy of an output. `host_cut`: the host itself stopped keeping output at its own cap,
    so the text ends wherever the cap fell (usually inside a line) and nothing after it exists anywhere."""
    if not output.strip() and not host_cut:
        return EMPTY_OUTPUT
    partial = host_cut and not output.endswith("\n")
    whole, _, tail = output.rpartition("\n") if partial else (output, "", "")
    # The partial last line stays as it is, where it is: never merged into a repeated row.
    text, removed = collapse_repeated_lines(whole.rstrip("\n"))
    if partial:
        text = text + "\n" + tail if text else tail
    text, lines_cut, chars_cut = cap_head_tail(text, max_chars)
    notes = []
    if removed:
        notes.append(f"{removed:,} repeated rows were collapsed into their first occurrence (counts shown as [xN])")
    if chars_cut:
        seen = message("note_person_sees_host_cut") if host_cut else "the person sees the full output"
        notes.append(f"the output was capped for AI processing: the middle {lines_cut:,} lines "
                     f"({chars_cut:,} characters) were elided; {seen}. "
                     "Filter or aggregate in the script if you need the elided rows")
    if host_cut:
        text = text.rstrip("\n") + "\n" + message("marker_host_cut_partial" if partial else "marker_host_cut")
        notes.append(message("note_host_cut", chars=len(output), lines=output.count("\n") + (1 if partial else 0)))
    if notes:
        text += "\n\n[Note: " + "; ".join(notes) + ".]"
    return text


def describe_run(result: dict[str, Any], mode: str, report: str, settings: Settings, *, image_caption: str | None,
                 notes: list[str], extra: list[str], decision: dict[str, Any] | None = None) -> str:
    """The model's copy of an execute_result: outcome first, then errors, output, change report, notes."""
    took = _took(result.get("duration_ms") or 0)
    if result.get("committed") and isinstance(result.get("commit_ms"), (int, float)) \
            and isinstance(result.get("script_ms"), (int, float)):
        took = f"script {_took(result['script_ms'])}, commit {_took(result['commit_ms'])}"
    if decision and decision["decision"] == "discard" and decision.get("undecided"):
        lines = [message("outcome_discarded_undecided", reason=decision.get("comment", ""))]
    elif decision and decision["decision"] == "discard":
        comment = decision.get("comment")
        lines = [message("outcome_discarded", comment=f" Their comment: {comment}" if comment else "")]
    elif result.get("timed_out"):
        lines = [message("outcome_timed_out", timeout=settings.script_timeout_s)]
    elif mode == "collect":
        lines = [message("outcome_collect" if result.get("ok") else "outcome_collect_failed", took=took)]
    elif result.get("committed") and result.get("unchanged"):
        lines = [message("outcome_unchanged", took=took)]
    else:
        lines = [message("outcome_committed" if result.get("committed") else "outcome_rolled_back", took=took)]
    external = result.get("external_changes")
    if external:
        lines.insert(0, message("section_external", summary=external["summary"]))
    if result.get("blocked"):
        lines.append(message("section_blocked", items=", ".join(result["blocked"])))
    if result.get("dialogs"):
        lines.append(message("section_dialogs", lines="\n".join(
            f"- {d['message']} ({'dismissed' if d['dismissed'] else 'left open'})" for d in result["dialogs"])))
    error = result.get("error")
    if error:
        where = f" (line {error['line']})" if error.get("line") else ""
        lines.append(message("section_error", type=error.get("type", "Error"), message=error.get("message", ""), where=where))
        if error.get("traceback"):
            lines.append(message("section_traceback", traceback=render_for_model(error["traceback"], 4000)))
    failures = result.get("failures") or []
    if failures:
        rendered = render_for_model("\n".join(f"- {f.get('severity', 'warning')}: {f.get('message', '')}" for f in failures), 4000)
        lines.append(message("section_failures", count=len(failures), lines=rendered))
    lines.append(message("section_output", output=render_for_model(
        result.get("stdout", ""), settings.max_result_chars, host_cut=bool(result.get("stdout_truncated")))))
    if mode == "automate":
        if result.get("committed"):
            rendered = render_for_model(report, settings.max_result_chars) if report.strip() \
                else message("empty_report")
            lines.append(message("section_report", report=rendered))
        elif decision and report:
            lines.append(message("section_discarded_report",
                                 report=render_for_model(report, settings.max_result_chars)))
        else:
            lines.append(message("section_no_report"))
    if image_caption and result.get("committed"):
        lines.append(image_caption)
    if notes:
        lines.append(message("section_notes", lines="\n".join(f"- {n}" for n in notes)))
    lines.extend(extra)
    return "\n\n".join(lines)


def _took(ms: float) -> str:
    """A duration as the person reads it: 23 ms, 8.4 s."""
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"
