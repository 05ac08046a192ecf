"""`nexus run ... --bcf-in ISSUES.bcf --bcf-out OUT.bcf [--bcf-version 2.1|3.0]`: a BCF archive's open topics as
the task (resolved to elements of the working model before the run), and the session handed back as BCF after it:
the input topics answered (cloud/bcf/issues.py), or without --bcf-in the findings the run's automations introduced."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class BcfIn:
    archive: bytes
    version: str
    topics: list[dict[str, Any]]


def add_bcf_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bcf-in", metavar="ISSUES.bcf", help="a BCF archive whose open topics are the task, "
                   "topic by topic")
    p.add_argument("--bcf-out", metavar="OUT.bcf", help="write the session as BCF after the run: the --bcf-in "
                   "topics with what was done about each, else the findings the automations introduced")
    p.add_argument("--bcf-version", choices=("2.1", "3.0"), help="of --bcf-out (default: --bcf-in's, else 2.1)")


def bcf_problem(args: argparse.Namespace) -> str | None:
    if args.bcf_out and Path(args.bcf_out).is_dir():
        return f"--bcf-out {args.bcf_out} is a folder; give a file name such as out.bcf"
    if args.bcf_out and args.bcf_in and Path(args.bcf_out).resolve() == Path(args.bcf_in).resolve():
        return "--bcf-out is the --bcf-in archive itself: give another file name"
    return None


def read_bcf_in(args: argparse.Namespace) -> BcfIn | None:
    """The open topics of --bcf-in resolved against the working model (BcfProblem for an unreadable archive)."""
    if not args.bcf_in:
        return None
    import ifcopenshell

    from cloud.bcf.archive import BcfProblem
    from cloud.bcf.issues import read_topics, resolve_in_file

    version, topics = read_topics(args.bcf_in)
    if not topics:
        raise BcfProblem(f"--bcf-in {args.bcf_in}: the archive has no open topic to work on")
    resolve_in_file(topics, ifcopenshell.open(args.ifc))
    return BcfIn(Path(args.bcf_in).read_bytes(), version, topics)


def attach_bcf_in(store: Any, session_id: str, bcf_in: BcfIn | None, prompt: str) -> str:
    if bcf_in is None:
        return prompt
    from cloud.bcf.issues import save_imported, task_with_topics

    save_imported(store, session_id, bcf_in.archive, bcf_in.version, bcf_in.topics)
    return task_with_topics(store, session_id, prompt)


def write_bcf_out(store: Any, session_id: str, args: argparse.Namespace, model_path: str | None,
                  bcf_in: BcfIn | None) -> None:
    if not args.bcf_out:
        return
    from cloud.bcf.session import session_archive

    row = store.sessions.get_session(session_id)
    version = args.bcf_version or (("3.0" if bcf_in.version == "3.0" else "2.1") if bcf_in else "2.1")
    models = {Path(model_path).name: model_path} if model_path and Path(model_path).is_file() else \
        {Path(args.ifc).name: args.ifc}
    session_archive(store, row, version, Path(args.bcf_out), author="nexus run", models=models)
