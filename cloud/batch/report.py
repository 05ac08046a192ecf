"""The batch's summary: per file outcome, changes by kind, validation findings and time, written as
Markdown and as a self-contained HTML page with an inline SVG chart (templates in cloud/batch/templates),
and the `--json` lines."""
from __future__ import annotations

import html
import json
from pathlib import Path
from string import Template
from typing import Any

from cloud.batch.jobs import BatchSpec, sha256_text

TEMPLATES = Path(__file__).with_name("templates")
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
BAR_HEIGHT, BAR_GAP, LABEL_WIDTH, CHART_WIDTH = 16, 4, 220, 420
COLOURS = {"committed": "#2e7d32", "unchanged": "#9e9e9e", "failed": "#c62828"}


def wording() -> dict[str, str]:
    return json.loads((TEMPLATES / "wording.json").read_text(encoding="utf-8"))


def outcome(result: dict[str, Any]) -> str:
    if not result.get("ok"):
        return "failed"
    return "committed" if result.get("committed") else "unchanged"


def json_line(result: dict[str, Any]) -> dict[str, Any]:
    return {"file": result.get("file"), "ok": bool(result.get("ok")), "committed": bool(result.get("committed")),
            "outcome": outcome(result), "changes": result.get("changes", {}), "error": result.get("error"),
            "seconds": result.get("seconds")}


def summary(spec: BatchSpec, results: list[dict[str, Any]], wall_seconds: float) -> dict[str, Any]:
    outcomes = [outcome(r) for r in results]
    return {"summary": True, "batch_id": spec.batch_id, "files": len(spec.files),
            "committed": outcomes.count("committed"), "unchanged": outcomes.count("unchanged"),
            "failed": outcomes.count("failed"), "missing": len(spec.files) - len(results),
            "seconds": round(wall_seconds, 3),
            "files_per_minute": round(len(results) * 60 / wall_seconds, 2) if wall_seconds > 0 else None,
            "report_md": str(Path(spec.state_dir, REPORT_MD)), "report_html": str(Path(spec.state_dir, REPORT_HTML))}


def _counts(mapping: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(mapping.items()) if v) or wording()["none"]


def _findings(result: dict[str, Any]) -> str:
    findings = result.get("validation") or []
    rules = result.get("rules") or {}
    checked = ""
    if rules.get("bcf"):  # the rule set over the resulting model, and its BCF archive (cloud/batch/findings.py)
        counts = ", ".join(f"{n} {s}" for s, n in (rules.get("counts") or {}).items() if n) or wording()["none"]
        checked = f"rule set '{rules.get('name')}': {counts}; BCF {rules['bcf']}"
    if not findings:
        return checked or wording()["none"]
    return (checked + "; " if checked else "") + "; ".join(str(f.get("message") or f.get("rule") or f) for f in findings[:5]) + (
        f" (+{len(findings) - 5})" if len(findings) > 5 else "")


def _task(spec: BatchSpec) -> str:
    words = wording()
    if spec.script is not None:
        task = words["task_script"].format(name=spec.script_name or "script", sha=sha256_text(spec.script)[:12],
                                           policy=spec.policy)
    else:
        task = words["task_prompt"].format(model=spec.model, policy=spec.policy, prompt=spec.prompt)
    if spec.ids:
        from cloud.ids_document import ids_summary

        ids = ids_summary(spec.ids) or {}
        task += " " + words["task_ids"].format(title=ids.get("title") or words["untitled"],
                                               specifications=ids.get("specifications"), validation=spec.validation)
    return task


def _cells(spec: BatchSpec, result: dict[str, Any]) -> list[str]:
    return [spec.relative(result["file"]), wording()[f"outcome_{outcome(result)}"], _counts(result.get("changes", {})),
            _counts(result.get("change_kinds", {})), _findings(result), f"{result.get('seconds', 0):.2f}",
            (result.get("error") or "").splitlines()[0][:200] if result.get("error") else ""]


def _fields(spec: BatchSpec, results: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes = [outcome(r) for r in results]
    return {"title": spec.batch_id, "total": len(spec.files), "committed": outcomes.count("committed"),
            "unchanged": outcomes.count("unchanged"), "failed": outcomes.count("failed"),
            "seconds": f"{sum(r.get('seconds') or 0 for r in results):.1f}"}


def markdown(spec: BatchSpec, results: list[dict[str, Any]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")
    rows = "\n".join("| " + " | ".join(cell(c) for c in _cells(spec, r)) + " |" for r in results)
    return Template((TEMPLATES / REPORT_MD).read_text(encoding="utf-8")).substitute(
        _fields(spec, results), task=_task(spec), rows=rows)


def chart(spec: BatchSpec, results: list[dict[str, Any]]) -> str:
    """Seconds per file as horizontal bars, coloured by outcome."""
    longest = max([r.get("seconds") or 0 for r in results] + [0.001])
    height = len(results) * (BAR_HEIGHT + BAR_GAP) + BAR_GAP
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL_WIDTH + CHART_WIDTH + 60}" '
             f'height="{height}" role="img" aria-label="seconds per file">']
    for i, r in enumerate(results):
        y = BAR_GAP + i * (BAR_HEIGHT + BAR_GAP)
        seconds = r.get("seconds") or 0
        width = max(1, round(CHART_WIDTH * seconds / longest))
        name = html.escape(spec.relative(r["file"]))
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + BAR_HEIGHT - 4}" text-anchor="end" '
                     f'font-size="12">{name}</text>')
        parts.append(f'<rect x="{LABEL_WIDTH}" y="{y}" width="{width}" height="{BAR_HEIGHT}" '
                     f'fill="{COLOURS[outcome(r)]}"><title>{name}: {outcome(r)}, {seconds:.2f} s</title></rect>')
        parts.append(f'<text x="{LABEL_WIDTH + width + 4}" y="{y + BAR_HEIGHT - 4}" font-size="11">'
                     f'{seconds:.1f} s</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def page(spec: BatchSpec, results: list[dict[str, Any]]) -> str:
    rows = "\n".join(f'<tr class="{outcome(r)}">' + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(spec, r))
                     + "</tr>" for r in results)
    fields = {k: html.escape(str(v)) for k, v in _fields(spec, results).items()}
    return Template((TEMPLATES / REPORT_HTML).read_text(encoding="utf-8")).substitute(
        fields, task=html.escape(_task(spec)), chart=chart(spec, results), rows=rows)


def write_reports(spec: BatchSpec, results: list[dict[str, Any]]) -> None:
    ordered = sorted(results, key=lambda r: spec.relative(r["file"]))
    Path(spec.state_dir).mkdir(parents=True, exist_ok=True)
    Path(spec.state_dir, REPORT_MD).write_text(markdown(spec, ordered), encoding="utf-8")
    Path(spec.state_dir, REPORT_HTML).write_text(page(spec, ordered), encoding="utf-8")
