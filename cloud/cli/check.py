"""`nexus check MODEL.ifc [--ref OTHER.ifc ...] [--ids FILE ...] [--rules NAME] [--clash] [--clearance M]
[--bcf OUT.bcf]`: the coordination checks without the agent (IDS, clashes, a rule set), a summary table or JSON, a BCF
archive of the findings.
Exit 0 when no finding is an error, 1 when one is, 2 on bad input."""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from cloud.cli.common import fail, with_db

CLI_USER = "cli"  # the command line's user (as nexus run's): its team's saved rule sets
LARGE_MODEL_BYTES = 20_000_000  # above this (all models together) each step's progress goes to stderr


class _BadInput(ValueError):
    pass


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("check", help="run IDS, clash and rule-set checks on a model (no agent), "
                               "optionally writing BCF"))
    p.add_argument("model", help="the working model (IFC)")
    p.add_argument("--ref", action="append", default=[], metavar="OTHER.ifc", help="a reference model (repeatable)")
    p.add_argument("--ids", action="append", default=[], metavar="FILE", help="an IDS file to check (repeatable)")
    p.add_argument("--rules", metavar="NAME", help="a rule set: a file (rules.json) or the name of one saved for "
                   "your team (in the store: --db)")
    p.add_argument("--user", default=CLI_USER, help="whose team's saved rule sets (default: cli)")
    p.add_argument("--clash", action="store_true", help="hard clashes against the references (or within the model)")
    p.add_argument("--clearance", metavar="M", help="clearance clashes closer than M metres (implies --clash)")
    p.add_argument("--tolerance", metavar="M", help="hard clashes shallower than this are ignored (default 0.002)")
    p.add_argument("--bcf", metavar="OUT.bcf", help="write the findings as a BCF archive")
    p.add_argument("--bcf-version", choices=("2.1", "3.0"), default="2.1")
    p.add_argument("--bcf-group", action="store_true", help="one BCF topic per rule (up to 50 findings each)")
    p.add_argument("--no-snapshots", action="store_true", help="BCF viewpoints without rendered snapshots")
    p.add_argument("--json", action="store_true", help="one JSON object per finding on stdout")
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    try:
        return _check(args)
    except _BadInput as exc:
        return fail(str(exc))


def _metres(text: str | None, option: str, positive: bool) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise _BadInput(f"{option} takes a number of metres, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise _BadInput(f"{option} must be {'more than' if positive else 'at least'} 0 metres, got {text}")
    return value


def _check(args: argparse.Namespace) -> int:
    rules = _read_rules(args) if args.rules is not None else None
    clearance = _metres(args.clearance, "--clearance", positive=True)
    tolerance = _metres(args.tolerance, "--tolerance", positive=False)
    clash = args.clash or clearance is not None
    if not clash and not args.ids and rules is None:
        raise _BadInput("nothing to check: give --clash, --clearance M, --ids FILE or --rules NAME")
    if args.bcf and Path(args.bcf).is_dir():
        raise _BadInput(f"--bcf {args.bcf} is a folder; give a file name such as out.bcf")
    paths = [Path(args.model), *(Path(r) for r in args.ref)]
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        raise _BadInput("two models have the same file name; findings name models by file name, so rename one")
    for path in paths:
        if not path.is_file():
            raise _BadInput(f"no model file at {path}")
    ids_documents = [_read_ids(Path(f)) for f in args.ids]
    # IfcOpenShell and the checks once the command line is known to be good: a refused one exits at once
    from ifc_host.check_scripts import sandboxed_check_scripts
    from ifc_host.clash import DEFAULT_TOLERANCE, clash_findings
    from ifc_host.findings import Finding
    from ifc_host.model_file import BadModelError, open_checked
    from ifc_host.rules import ids_findings, run_rule_set

    large = sum(p.stat().st_size for p in paths) >= LARGE_MODEL_BYTES
    progress = _Progress(large)
    models: dict[str, Any] = {}
    for path in paths:
        progress.step(f"reading {path.name}")
        try:
            models[str(path)] = open_checked(path)
        except BadModelError as exc:
            raise _BadInput(str(exc)) from None
    findings: list[Finding] = []
    work = models[str(paths[0])]
    for ids_path, ids in ids_documents:
        progress.step(f"checking {paths[0].name} against {ids_path.name}")
        findings += ids_findings(work, ids, paths[0].name, ids_path.name)
    if rules is not None:
        progress.step(f"rule set '{rules.name}': {len(rules.checks)} check(s) on {paths[0].name}")
        with sandboxed_check_scripts(paths[0]) as run_script:  # the team's check scripts, sandboxed as any script
            findings += run_rule_set(rules, paths[0], paths[1:], models=models, run_script=run_script)
    if clash:
        against = ", ".join(p.name for p in paths[1:]) or "itself"
        progress.step(f"clash detection: {paths[0].name} against {against}")
        findings += clash_findings(paths[0], paths[1:], clearance=clearance,
                                   tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
                                   models=models, progress=progress.detail if large else None)
    if args.bcf:
        from cloud.bcf.export import export_findings

        progress.step(f"writing {len(findings)} finding(s) to {args.bcf} (BCF {args.bcf_version})")
        export_findings(findings, args.bcf, version=args.bcf_version, models={p.name: p for p in paths},
                        group=args.bcf_group, snapshots=not args.no_snapshots,
                        progress=progress.count if large or len(findings) > 20 else None)
    if args.json:
        for finding in findings:
            print(json.dumps(finding.as_json(), ensure_ascii=False))
    else:
        _print_table(findings, bcf=args.bcf)
    return 1 if any(f.severity == "error" for f in findings) else 0


def _read_ids(path: Path) -> tuple[Path, str]:
    from ifc_host.ids_check import IdsProblem, parse_ids

    if not path.is_file():
        raise _BadInput(f"no IDS file at {path}")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        parse_ids(text)
    except IdsProblem as exc:
        raise _BadInput(f"{path}: {exc}") from None
    return path, text


def _read_rules(args: argparse.Namespace) -> Any:
    """--rules: a rule set file, else one saved for the command line's user's team in the store."""
    from cloud.rule_sets import RuleSetError, resolve

    looks_like_file = Path(args.rules).suffix.lower() == ".json" or Path(args.rules).is_file()
    try:
        store = None if looks_like_file else _store(args)
        return resolve(store, args.user, args.rules)
    except RuleSetError as exc:
        raise _BadInput(f"--rules {args.rules}: {exc}") from None


def _store(args: argparse.Namespace) -> Any:
    from cloud.cli.common import open_store

    return open_store(args)


def _print_table(findings: list[Any], bcf: str | None) -> None:
    if not findings:
        print("No findings.")
    else:
        rows = [("SEVERITY", "RULE", "FINDING", "ELEMENTS")]
        for f in findings:
            elements = ", ".join(f"{e.model}:{e.global_id}" for e in f.elements)
            rows.append((f.severity, f.rule, f.title, elements))
        widths = [min(48, max(len(r[i]) for r in rows)) for i in range(3)]
        for row in rows:
            cells = [_cut(row[i], widths[i]).ljust(widths[i]) for i in range(3)]
            print("  ".join(cells + [row[3]]).rstrip())
        counts = Counter(f.severity for f in findings)
        print()
        print(", ".join(f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in ("error", "warning", "info")
                        if counts[s]) + f" ({len(findings)} finding{'s' if len(findings) != 1 else ''})")
    if bcf:
        print(f"Wrote {bcf}")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class _Progress:
    """Steps (and, for large models, their details) on stderr, with the time since the start."""

    def __init__(self, large: bool) -> None:
        self.large = large
        self.start = time.monotonic()
        self.last_count = 0.0

    def _say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.start:6.1f}s] {text}", file=sys.stderr, flush=True)

    def step(self, text: str) -> None:
        self._say(text)

    def detail(self, text: str) -> None:
        self._say("  " + text)

    def count(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - self.last_count >= 2:
            self.last_count = now
            self._say(f"  BCF topics: {done}/{total}")
