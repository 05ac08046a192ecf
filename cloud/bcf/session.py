"""A session as a BCF archive: the issues it was given (BCF in, cloud/bcf/issues.py) answered with what was done,
or, when it was given none, its findings (cloud/session_findings.py), one topic each, with the image the product
captured after the automation that introduced them as the snapshot."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cloud.bcf.export import export_findings
from cloud.session_findings import session_findings
from cloud.store import Store
from ifc_host.findings import Finding


def session_archive(store: Store, row: dict[str, Any], version: str, out: Path, author: str,
                    models: dict[str, str | Path] | None = None) -> Path:
    from cloud.bcf.issues import answered_archive, imported_issues

    imported = imported_issues(store, row["id"])
    if imported is not None:
        return answered_archive(store, row["id"], imported, version, out, author, models=models)
    rows = session_findings(store, row["id"])
    findings = [Finding.from_json(r) for r in rows]
    images = {id(f): r.get("image_id") for f, r in zip(findings, rows, strict=True)}

    def snapshot_of(members: list[Finding]) -> bytes | None:
        image_id = images.get(id(members[0]))
        return store.results.get_image(row["id"], image_id) if image_id else None

    return export_findings(findings, out, version=version, models=models, author=author,
                           project_name=f"NexusAI session {row['id'][:8]}", snapshots=models is not None,
                           snapshot_of=snapshot_of)
