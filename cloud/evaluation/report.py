"""The report of an evaluation: results.json (what the admin console reads), report.md, and report.html (one
self-contained page: inline CSS and SVG charts, no script, no network), plus each run's transcript."""
from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Sequence
from pathlib import Path
from string import Template
from typing import Any

from cloud.evaluation.charts import bar_chart
from cloud.evaluation.runner import TaskRun, transcript_name, write_transcript
from cloud.evaluation.tasks import Suite

TEMPLATES = Path(__file__).with_name("templates")
RESULTS_FILE = "results.json"


def default_out() -> Path:
    return Path("eval-results") / dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")


def _rate(rows: Sequence[TaskRun]) -> float:
    counted = [r for r in rows if r.status != "error"]
    return sum(r.passed for r in counted) / len(counted) if counted else 0.0


def _by_tag(results: Sequence[TaskRun]) -> list[tuple[str, str, float]]:
    tags = sorted({t for r in results for t in r.tags})
    models = list(dict.fromkeys(r.model for r in results))
    return [(tag, model, _rate([r for r in results if r.model == model and tag in r.tags]))
            for tag in tags for model in models if any(r.model == model and tag in r.tags for r in results)]


def charts(results: Sequence[TaskRun]) -> list[tuple[str, str]]:
    """(title, inline SVG) for every chart of the report."""
    models = list(dict.fromkeys(r.model for r in results))
    multi = len(models) > 1

    def label(r: TaskRun) -> str:
        return f"{r.task}#{r.repeat}" + (f" · {r.model}" if multi else "")

    return [
        ("Pass rate per model", bar_chart([(m, _rate([r for r in results if r.model == m])) for m in models],
                                          percent=True, name="chart-models")),
        ("Pass rate per tag", bar_chart([(f"{tag} · {m}" if multi else tag, v) for tag, m, v in _by_tag(results)],
                                        percent=True, name="chart-tags")),
        ("Cost per task run (USD)", bar_chart([(label(r), r.cost) for r in results], unit="$", name="chart-cost")),
        ("Wall time per task run (s)", bar_chart([(label(r), r.seconds) for r in results], unit="s",
                                                 name="chart-time")),
        ("Model turns per task run", bar_chart([(label(r), float(r.turns)) for r in results], name="chart-turns")),
    ]


def write_report(out: Path, suite: Suite, results: list[TaskRun], summary: dict[str, Any]) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    for run in results:
        write_transcript(run, out)
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    data = {"suite": str(suite.root), "created": created, "summary": summary,
            "runs": [{**r.to_json(), "transcript": transcript_name(r)} for r in results]}
    paths = {"json": out / RESULTS_FILE, "markdown": out / "report.md", "html": out / "report.html"}
    paths["json"].write_text(json.dumps(data, indent=1))
    paths["markdown"].write_text(markdown(suite, results, summary, created))
    paths["html"].write_text(html_page(suite, results, summary, created))
    return paths


def _model_rows(summary: dict[str, Any]) -> list[list[str]]:
    rows = []
    for model, b in summary["models"].items():
        rate = "n/a" if b["pass_rate"] is None else f"{b['pass_rate']:.1%}"
        rows.append([model, rate, str(b["passed"]), str(b["failed"]), str(b["errors"]), str(b["input_tokens"]),
                     str(b["cached_tokens"]), str(b["output_tokens"]), f"${b['cost']:.4f}", f"{b['seconds']:.1f}"])
    return rows


MODEL_HEAD = ["Model", "Pass rate", "Passed", "Failed", "Errors", "Input tok", "Cached tok", "Output tok", "Cost",
              "Time (s)"]
RUN_HEAD = ["Task", "Model", "#", "Result", "Turns", "Tool calls", "Fixes", "Input tok", "Output tok", "Cost",
            "Time (s)", "Detail"]


def _run_row(r: TaskRun) -> list[str]:
    return [r.task, r.model, str(r.repeat), r.status.upper(), str(r.turns), str(r.tool_calls), str(r.fixes),
            str(r.input_tokens), str(r.output_tokens), f"${r.cost:.4f}", f"{r.seconds:.1f}",
            " ".join(r.detail.split())[:200]]


def markdown(suite: Suite, results: list[TaskRun], summary: dict[str, Any], created: str) -> str:
    def table(head: list[str], rows: list[list[str]]) -> str:
        def cell(text: str) -> str:
            return text.replace("|", "\\|")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])

    runs = []
    for r in results:
        row = _run_row(r)
        row[0] = f"[{r.task}]({transcript_name(r)})"
        runs.append(row)
    skipped = "".join(f"- {s['task']}: {s['why']}\n" for s in summary.get("skipped", []))
    return Template((TEMPLATES / "report.md").read_text()).substitute(
        suite=suite.root, created=created, models=table(MODEL_HEAD, _model_rows(summary)),
        runs=table(RUN_HEAD, runs), skipped=skipped or "none\n")


def html_page(suite: Suite, results: list[TaskRun], summary: dict[str, Any], created: str) -> str:
    esc = html.escape

    def table(head: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
        top = "".join(f"<th>{esc(h)}</th>" for h in head)
        body = "".join(f"<tr class=\"{(classes or [''] * len(rows))[i]}\">" + "".join(f"<td>{c}</td>" for c in row)
                       + "</tr>" for i, row in enumerate(rows))
        return f"<table><thead><tr>{top}</tr></thead><tbody>{body}</tbody></table>"

    runs = []
    for r in results:
        row = [esc(c) for c in _run_row(r)]
        row[0] = f"<a href=\"{esc(transcript_name(r))}\">{esc(r.task)}</a>"
        runs.append(row)
    figures = "".join(f"<figure><figcaption>{esc(title)}</figcaption>{svg}</figure>"
                      for title, svg in charts(results))
    skipped = "".join(f"<li>{esc(s['task'])}: {esc(s['why'])}</li>" for s in summary.get("skipped", []))
    return Template((TEMPLATES / "report.html").read_text()).substitute(
        suite=esc(str(suite.root)), created=esc(created), charts=figures,
        models=table(MODEL_HEAD, [[esc(c) for c in row] for row in _model_rows(summary)]),
        runs=table(RUN_HEAD, runs, [r.status for r in results]), skipped=skipped or "<li>none</li>")
