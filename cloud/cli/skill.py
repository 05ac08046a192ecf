"""`nexus skill run NAME --ifc FILE [--arg k=v ...]`: run a skill of the team library on an IFC model
without a model; `nexus skills list` and `nexus skills export-pyrevit DIR`: the library as a list and as
pyRevit pushbutton bundles."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from cloud.cli.common import fail, open_store, with_db
from cloud.cli.printer import Printer
from ifc_host.launcher import add_isolation_argument

CLI_USER = "cli"


def register(sub: argparse._SubParsersAction) -> None:
    skill = sub.add_parser("skill", help="run one skill of the team library").add_subparsers(
        dest="skill_command", required=True)
    p = with_db(skill.add_parser("run", help="run a skill on an IFC model, without a model"))
    p.add_argument("name")
    p.add_argument("--ifc", required=True, help="the IFC model to work on")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="a parameter's value")
    p.add_argument("--out", help="save committed changes here; the IFC file itself is never modified")
    p.add_argument("--user", default=CLI_USER, help="whose team's library (default: cli)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_isolation_argument(p)
    p.set_defaults(func=cmd_run)

    skills = sub.add_parser("skills", help="the team library of skills").add_subparsers(
        dest="skills_command", required=True)
    p = with_db(skills.add_parser("list", help="the team's skills, with run counts and success rates"))
    p.add_argument("--user", default=CLI_USER)
    p.add_argument("--query", help="words every listed skill's name or description contains")
    p.set_defaults(func=cmd_list)
    p = with_db(skills.add_parser("export-pyrevit", help="write the team's Revit skills as pushbutton bundles"))
    p.add_argument("dir", help="a folder (for example a .panel folder of a pyRevit extension)")
    p.add_argument("--user", default=CLI_USER)
    p.set_defaults(func=cmd_export)


def parse_args(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--arg {pair!r}: expected NAME=VALUE")
        out[name.strip()] = value
    return out


def cmd_run(args: argparse.Namespace) -> int:
    from cloud.cli.protocol_stdout import protocol_stdout

    with protocol_stdout() as out:  # before the core's threads start
        return _run(args, out)


def _run(args: argparse.Namespace, out: TextIO) -> int:
    from cloud.child_host import HostStartFailed
    from cloud.embedded import EmbeddedCore
    from cloud.skills.library import SkillLibrary
    from cloud.tools.direct import run_skill_directly

    try:
        values = parse_args(args.arg)
    except ValueError as exc:
        return fail(str(exc))
    if not Path(args.ifc).is_file():
        return fail(f"{args.ifc}: no such file")  # as the host would say, before anything is started
    store = open_store(args)
    if SkillLibrary(store).get(args.user, args.name) is None:
        return fail(f"no skill named {args.name!r} in the library of {args.user}'s team (nexus skills list)")
    try:
        core = EmbeddedCore(store, args.ifc, args.out, user=args.user, isolation=args.isolation)
    except HostStartFailed as exc:  # the host reads the model: one it cannot open ends the start with its reason
        return fail(exc.reason or str(exc))
    try:
        row = core.new_session(f"skill:{args.name}")
        printer = Printer(out)
        runner = run_skill_directly(store, core.settings, core.link(row), row, args.name, values)
        try:
            while True:
                chunk = next(runner)
                if not args.json:
                    printer.show(chunk.to_json())
        except StopIteration as done:
            result = done.value or {}
        if args.json:
            print(json.dumps(result), file=out, flush=True)
        if "findings" in result:  # a check skill: as `nexus check`, 1 when a finding is an error
            return 1 if any(f["severity"] == "error" for f in result["findings"]) else 0
        return 0 if result.get("committed") else 1
    finally:
        core.close()


def cmd_list(args: argparse.Namespace) -> int:
    from cloud.skills.library import SkillLibrary

    for s in SkillLibrary(open_store(args)).listing(args.user, args.query):
        rate = "never run" if s["success_rate"] is None else f"{s['success_rate']:.0%} of {s['run_count']} runs"
        params = ", ".join(p["name"] for p in s["parameters"]) or "no parameters"
        marks = (" (portable)" if s["portable"] else "") + (" (check)" if s["check"] else "")
        print(f"{s['name']}  v{s['version']}  {s['host_app']}{marks}  {rate}"
              f"\n    {s['description']}\n    parameters: {params}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from cloud.skills.library import SkillError
    from cloud.skills.pyrevit import export_pyrevit

    try:
        written = export_pyrevit(open_store(args), args.user, args.dir)
    except SkillError as exc:
        return fail(f"{exc}: nothing more was exported")
    for path in written:
        print(path)
    if not written:
        print("no Revit skills in this team's library")
    return 0
