"""`nexus eval SUITE --model SPEC ...`: run a task suite against one or more models and write a report.

Exit status 0 whatever the score; 2 when the harness itself cannot run (a bad suite, a bad option); 130 after
Ctrl-C (the runs under way are cancelled and the report covers those that ended)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from cloud.cli.common import fail
from cloud.cli.protocol_stdout import protocol_stdout
from ifc_host.launcher import add_isolation_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="run a task suite against models and report the scores")
    p.add_argument("suite", help="a suite folder (tasks/*.json), or an ifc-bench CSV with --import-csv")
    p.add_argument("--model", action="append", dest="models", metavar="SPEC",
                   help="model spec (repeatable); scripted:DIR plays DIR/<task id>.json")
    p.add_argument("--repeat", type=int, default=1, help="runs of each task per model")
    p.add_argument("--parallel", type=int, default=1, help="task runs at the same time")
    p.add_argument("--tags", action="append", default=[], metavar="T",
                   help="only tasks with this tag (repeatable, or comma-separated)")
    p.add_argument("--out", help="report folder (default: eval-results/<time>)")
    p.add_argument("--json", action="store_true", help="one JSON object per task run, then a summary")
    p.add_argument("--import-csv", metavar="SUITE_DIR",
                   help="turn the ifc-bench CSV given as SUITE into a suite folder here, then stop")
    add_isolation_argument(p)
    p.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    with protocol_stdout() as out:  # before the task runs' threads start
        return _eval(args, out)


def _eval(args: argparse.Namespace, stdout: TextIO) -> int:
    from cloud.evaluation.ifcbench import ImportError_, import_csv
    from cloud.evaluation.report import default_out, write_report
    from cloud.evaluation.runner import Interrupted, TaskRun, run_all, summarise
    from cloud.evaluation.tasks import SuiteError, load_suite

    if args.import_csv:
        try:
            count = import_csv(Path(args.suite), Path(args.import_csv))
        except ImportError_ as exc:
            return fail(str(exc), 2)
        print(f"Wrote {count} tasks to {args.import_csv}", file=stdout)
        return 0
    if not args.models:
        return fail("give at least one --model SPEC", 2)
    if args.repeat < 1 or args.parallel < 1:
        return fail("--repeat and --parallel must be at least 1", 2)
    tags = [t for group in args.tags for t in group.split(",") if t]
    try:
        suite = load_suite(args.suite, tags or None)
    except SuiteError as exc:
        return fail(str(exc), 2)
    out = Path(args.out) if args.out else default_out()
    for task_id, why in suite.skipped:
        print(f"skipped {task_id}: {why}", file=sys.stderr)
    if not suite.tasks:
        return fail("no task to run (check --tags)", 2)

    def show(run: TaskRun) -> None:
        if args.json:
            print(json.dumps(run.to_json()), file=stdout, flush=True)
        else:
            mark = {"pass": "PASS ", "fail": "FAIL ", "error": "ERROR"}[run.status]
            detail = f"  {run.detail.splitlines()[0]}" if run.detail else ""
            print(f"{mark} {run.task} [{run.model}] {run.seconds:.1f}s{detail}", file=stdout, flush=True)

    interrupted = False
    try:
        results = run_all(suite.tasks, args.models, repeat=args.repeat, parallel=args.parallel, on_result=show,
                          isolation=args.isolation)
    except Interrupted as stopped:  # Ctrl-C: the runs under way were cancelled; report what ended
        results, interrupted = stopped.results, True
        print("nexus: interrupted; writing the report of the runs that ended", file=sys.stderr)
    summary = summarise(results)
    summary["interrupted"] = interrupted
    summary["skipped"] = [{"task": t, "why": why} for t, why in suite.skipped]
    paths = write_report(out, suite, results, summary)
    summary["report"] = {kind: str(path) for kind, path in paths.items()}
    if args.json:
        print(json.dumps(summary), file=stdout, flush=True)
    else:
        for model, block in summary["models"].items():
            rate = "n/a" if block["pass_rate"] is None else f"{block['pass_rate']:.0%}"
            print(f"{model}: {block['passed']}/{block['runs']} passed ({rate} of those that ran), "
                  f"{block['errors']} errors, ${block['cost']:.4f}, {block['seconds']:.0f} s", file=stdout)
        print(f"Report: {paths['html']}", file=stdout, flush=True)
    return 130 if interrupted else 0
