"""`nexus batch`: one reviewed script (or one prompt) applied to many IFC models, each in its own host
process and transaction, with a per-file result and a summary report; `nexus batch-worker`: processes a
batch's jobs from the Redis queue on any machine that can read the files (docs/batch.md)."""
from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from cloud.cli.common import fail, open_store, with_db
from cloud.cli.protocol_stdout import protocol_stdout

POLL_S = 0.3
IDLE_HINT_S = 10.0  # nothing running this long on a queue with no local workers: say what it waits for
DEFAULT_EMBEDDED_WORKERS = 2
DEFAULT_IN_PLACE_STATE = "nexus-batch"
SKILL_USER = "cli"  # as `nexus skill run`


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("batch", help="apply one script or prompt to many IFC models"))
    p.add_argument("--ifc", help="the models, as a glob (quote it): 'models/**/*.ifc'")
    task = p.add_mutually_exclusive_group()
    task.add_argument("--script", help="a reviewed Python script, run as an automation on every file")
    task.add_argument("--prompt", help="a task for the agent, run on every file in its own session")
    task.add_argument("--skill", metavar="NAME[@VERSION]",
                      help="a skill of the team library, run as an automation on every file (docs/skills.md)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE", help="with --skill: a parameter's value")
    p.add_argument("--user", default=SKILL_USER, help=f"with --skill: whose team's library (default: {SKILL_USER})")
    p.add_argument("--model", help="model spec for --prompt; scripted:DIR plays DIR/<file stem>.json per file")
    p.add_argument("--out", help="write each changed model here (same relative names); inputs are never modified")
    p.add_argument("--in-place", action="store_true", help="without --out: overwrite each input that changed")
    p.add_argument("--state", help=f"manifest, results and reports (default: --out; ./{DEFAULT_IN_PLACE_STATE} "
                                   "with --in-place)")
    p.add_argument("--workers", type=int, help=f"files at a time in this process (default {DEFAULT_EMBEDDED_WORKERS}; "
                                                "with Redis 0: only `nexus batch-worker`s work)")
    p.add_argument("--policy", choices=("auto", "readonly"), default="auto",
                   help="readonly runs the script as a data collection: nothing is written")
    p.add_argument("--validation", choices=("warn", "block"), default="warn",
                   help="block: a file whose change introduces validation findings is not written")
    p.add_argument("--ids", metavar="FILE", help="an IDS file (buildingSMART Information Delivery Specification) "
                   "checked on every file: requirements the change makes fail are findings (block: not written)")
    p.add_argument("--rules", metavar="NAME", help="a rule set (a rules.json file, or one saved for --user's team): "
                   "checked after every automation and over each resulting model, one BCF archive per file")
    p.add_argument("--redis", help="queue the jobs on this Redis (default: $NEXUS_REDIS_URL)")
    p.add_argument("--resume", metavar="DIR", help="finish the batch recorded in DIR")
    p.add_argument("--retry-failed", action="store_true", help="redo files whose earlier attempt failed")
    p.add_argument("--json", action="store_true", help="one JSON object per file, then a summary object")
    p.set_defaults(func=cmd_batch)

    w = with_db(sub.add_parser("batch-worker", help="process batch jobs from the Redis queue"))
    w.add_argument("--redis", help="the queue's Redis (default: $NEXUS_REDIS_URL)")
    w.add_argument("--workers", type=int, default=1, help="files at a time (default 1)")
    w.set_defaults(func=cmd_batch_worker)


def _expand(pattern: str) -> list[str]:
    return sorted({os.path.abspath(p) for p in glob.glob(os.path.expanduser(pattern), recursive=True)
                   if os.path.isfile(p)})


def _under(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def build_spec(args: argparse.Namespace) -> Any:
    """The batch asked for on the command line (BatchError says what is wrong with it)."""
    from cloud.batch.jobs import BatchError, BatchSpec, load_manifest

    if args.resume:
        if args.ifc or args.script or args.prompt or getattr(args, "skill", None) or getattr(args, "ids", None) \
                or getattr(args, "rules", None):
            raise BatchError("--resume takes the batch as recorded: leave out --ifc, --script, --prompt, --skill, "
                             "--ids and --rules")
        return load_manifest(args.resume)
    if not args.ifc:
        raise BatchError("--ifc GLOB is required (or --resume DIR)")
    ids = _ids_text(getattr(args, "ids", None))
    skill = _skill_task(args)
    if args.script is None and args.prompt is None and skill is None:
        raise BatchError("give --script FILE, --skill NAME or --prompt TEXT")
    if args.prompt is not None and not args.model:
        raise BatchError("--prompt needs --model (e.g. anthropic:claude-sonnet-4-5 or scripted:DIR)")
    if args.out is None and not args.in_place:
        raise BatchError("give --out DIR (inputs are never modified), or --in-place to overwrite the inputs")
    if args.out is not None and args.in_place:
        raise BatchError("--in-place writes over the inputs: it cannot be combined with --out")
    out = os.path.abspath(args.out) if args.out else None
    matched = _expand(args.ifc)
    if out is not None and any(os.path.realpath(os.path.dirname(f)) == os.path.realpath(out) for f in matched):
        raise BatchError("--out is the inputs' own folder: choose another folder, or --in-place")
    files = [f for f in matched if out is None or not _under(f, out)]  # earlier outputs are not inputs
    if not files:
        raise BatchError(f"no files match {args.ifc!r}")
    root = os.path.commonpath([os.path.dirname(f) for f in files])
    script = skill["script"] if skill else None
    if args.script is not None:
        try:
            script = Path(args.script).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BatchError(f"cannot read the script {args.script}: {exc}") from exc
    state = os.path.abspath(args.state or out or DEFAULT_IN_PLACE_STATE)
    return BatchSpec(files=files, root=root, state_dir=state, out_dir=out, script=script,
                     script_name=skill["script_name"] if skill else os.path.basename(args.script) if args.script
                     else None, prompt=args.prompt, model=args.model, policy=args.policy,
                     validation=args.validation, retry_failed=args.retry_failed, skill=skill["skill"] if skill else None,
                     ids=ids, rules=_rules(args))


def _rules(args: argparse.Namespace) -> dict[str, Any] | None:
    """--rules read and checked before any file of the batch is touched."""
    name = getattr(args, "rules", None)
    if not name:
        return None  # IfcOpenShell and the rule checks are imported only for a batch that has rules
    from cloud.batch.jobs import BatchError
    from cloud.rule_sets import RuleSetError, resolve

    looks_like_file = Path(name).suffix.lower() == ".json" or Path(name).is_file()
    try:
        return resolve(None if looks_like_file else open_store(args), args.user, name).as_json()
    except RuleSetError as exc:
        raise BatchError(f"--rules {name}: {exc}") from None


def _ids_text(path: str | None) -> str | None:
    """--ids FILE read and checked exactly as `nexus run --ids` does, before any file of the batch is touched;
    its text goes into the manifest, so a worker on another machine needs no copy of the file."""
    if path is None:
        return None
    from cloud.batch.jobs import BatchError
    from cloud.ids_document import read_ids_file
    from ifc_host.ids_check import IdsProblem

    try:
        return read_ids_file(path)
    except IdsProblem as exc:
        raise BatchError(str(exc)) from exc


def _skill_task(args: argparse.Namespace) -> dict[str, Any] | None:
    """With --skill: the team library's skill checked (sha256, host app) and bound with the --arg values,
    exactly as `nexus skill run` binds them, before any file is touched (cloud/skills/batch.py)."""
    from cloud.batch.jobs import BatchError

    skill_ref, pairs = getattr(args, "skill", None), getattr(args, "arg", None) or []
    if skill_ref is None:
        if pairs:
            raise BatchError("--arg gives a skill's parameters: use it with --skill NAME")
        return None
    from cloud.cli.skill import parse_args
    from cloud.skills.batch import prepare
    from cloud.skills.library import SkillError
    from ifc_host.protocol import HOST_APP

    if args.policy == "readonly":
        raise BatchError("--skill runs the skill as an automation: --policy readonly does not apply")
    try:
        return prepare(open_store(args), args.user, skill_ref, parse_args(pairs), HOST_APP)
    except (SkillError, ValueError) as exc:
        raise BatchError(str(exc)) from exc


def _check_model(spec: Any) -> None:
    from cloud.batch.jobs import SCRIPTED
    from cloud.vendors.registry import ModelSpecError, allow_on_command_line, create_model, missing_key

    if spec.prompt is None:
        return
    no_key = missing_key(spec.model)
    if no_key:
        raise ModelSpecError(no_key)
    if spec.model.startswith(SCRIPTED) and Path(spec.model[len(SCRIPTED):]).is_dir():
        return  # one script per file: a file without one fails alone
    allow_on_command_line(spec.model)
    create_model(spec.model)


class Display:
    """Live progress on stderr; per-file JSON lines on stdout with --json."""

    def __init__(self, as_json: bool, out: TextIO) -> None:
        self.as_json, self.tty = as_json, sys.stderr.isatty()
        self.out = out  # this command's stdout (cloud.cli.protocol_stdout)
        self.shown: set[str] = set()
        self.last = ""

    def progress(self, line: str) -> None:
        if line == self.last:
            return
        self.last = line
        print(("\r" + line + "   ") if self.tty else line, end="" if self.tty else "\n", file=sys.stderr,
              flush=True)

    def results(self, results: dict[str, dict[str, Any]]) -> None:
        from cloud.batch.report import json_line

        for path, result in results.items():
            if path in self.shown:
                continue
            self.shown.add(path)
            if self.as_json:
                print(json.dumps(json_line(result)), file=self.out, flush=True)
            elif not result.get("ok"):
                self.progress(failure_line(path, result.get("error") or ""))

    def end(self) -> None:
        if self.tty and self.last:
            print(file=sys.stderr)


def failure_line(path: str, error: str) -> str:
    """`failed: PATH: why`, the path once (a bad model's error already starts with it)."""
    first = (error.splitlines() or [""])[0]
    for prefix in (f"{path}: ", f"{Path(path).resolve()}: "):
        if first.startswith(prefix):
            first = first[len(prefix):]
            break
    return f"failed: {path}: {first[:300]}"


def shown_url(url: str) -> str:
    """The queue's address without its credentials (terminal output ends up in logs)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "")
                                     if parts.hostname else parts.netloc.rpartition("@")[2]))


def _take_queue_url(explicit: str | None) -> str | None:
    """The queue's Redis. Each file's core is private to one host in this process, so its host registry and
    rendezvous stay in-process: NEXUS_REDIS_URL is taken out of this command's environment before any core
    starts (the command is still single-threaded here). Dramatiq is imported only where a queue is used."""
    from cloud.distributed import REDIS_URL_ENV

    from_environment = os.environ.pop(REDIS_URL_ENV, None)
    return explicit or from_environment or None


def cmd_batch(args: argparse.Namespace) -> int:
    with protocol_stdout() as out:  # before any worker thread starts
        return _batch(args, out)


def _batch(args: argparse.Namespace, out: TextIO) -> int:
    from cloud.batch.jobs import BatchError, result_path, sha256_file
    from cloud.vendors.base import ModelError
    from cloud.vendors.registry import ModelSpecError

    try:
        spec = build_spec(args)
        _check_model(spec)
    except (BatchError, ModelSpecError, ModelError) as exc:
        return fail(str(exc))
    # after the command line is checked: a refused one does not load the store and the pools
    from cloud.batch.progress import Tracker
    from cloud.batch.report import summary, write_reports
    from cloud.batch.service import Runner
    from cloud.config import ConfigurationError

    shas = {}
    for path in spec.files:
        try:
            shas[path] = sha256_file(path)
        except OSError:
            shas[path] = ""
    url = _take_queue_url(args.redis)
    workers = args.workers if args.workers is not None else (0 if url else DEFAULT_EMBEDDED_WORKERS)
    if workers < 0 or (workers == 0 and not url):
        return fail("--workers must be at least 1 without Redis (0 with Redis: only batch-workers work)")
    store = open_store(args) if workers else None
    started = time.monotonic()
    tracker = Tracker(spec, shas, lambda: [])
    tracker.poll()
    pending = [p for p in spec.files if p not in tracker.results
               or (spec.retry_failed and not tracker.results[p].get("ok"))]
    for path in pending:
        if tracker.results.pop(path, None) is not None:
            result_path(spec, path).unlink(missing_ok=True)  # a failure being retried: not the record anymore
    runner = Runner(store, url=url or "", workers=workers)
    display = Display(args.json, out)
    try:
        try:
            runner.check()
        except ConfigurationError:
            raise  # the deployment's settings (NEXUS_SECRET), said as such by the command line
        except Exception as exc:
            return fail(f"cannot reach Redis at {shown_url(url or '')}: {exc}")
        runner.start(spec, pending)
        tracker._running = lambda: runner.running(spec.batch_id)
        idle_since, hinted = time.monotonic(), False
        while True:
            progress = tracker.poll()
            display.results(tracker.results)
            display.progress(progress.line())
            if progress.finished:
                break
            if progress.running or not url or workers:
                idle_since = time.monotonic()
            elif not hinted and time.monotonic() - idle_since > IDLE_HINT_S:
                display.progress(f"waiting for a `nexus batch-worker` on {shown_url(url or '')}")
                hinted = True
            time.sleep(POLL_S)
    finally:
        runner.close()
        display.end()
    results = [tracker.results[p] for p in spec.files if p in tracker.results]
    write_reports(spec, results)
    final = summary(spec, results, time.monotonic() - started)
    if args.json:
        print(json.dumps(final), file=display.out, flush=True)
    else:
        print(f"{final['committed']} committed, {final['unchanged']} unchanged, {final['failed']} failed "
              f"of {final['files']} files in {final['seconds']:.1f} s; report: {final['report_html']}",
              file=display.out)
    return 0 if final["failed"] == 0 else 1


def cmd_batch_worker(args: argparse.Namespace) -> int:
    from cloud.batch.queue import BatchQueue

    url = _take_queue_url(args.redis)
    if not url:
        return fail("no queue: pass --redis URL or set NEXUS_REDIS_URL")
    if args.workers < 1:
        return fail("--workers must be at least 1")
    queue = BatchQueue(url, open_store(args))
    try:
        queue.ping()
    except Exception as exc:
        return fail(f"cannot reach Redis at {shown_url(url)}: {exc}")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"nexus batch-worker {queue.name}: {args.workers} at a time, queue {shown_url(url)}", file=sys.stderr, flush=True)
    try:
        queue.work(args.workers, stop)
    finally:
        queue.close()
    return 0
