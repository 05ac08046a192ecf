"""A batch's rule set (`nexus batch --rules NAME`) on each file: checked after every automation on what the script
introduced (the host, as in any session: an error under --validation block rolls the file's change back), then
over the whole resulting model (the output, or the input when nothing changed), its findings counted by severity
in the file's result and written as one BCF archive per file, `<state>/.nexus-batch/bcf/<relative path>.bcf`,
which the reports link."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cloud.batch.jobs import BatchSpec, state_path
from cloud.store import Store

BCF_FOLDER = "bcf"


def check_file(spec: BatchSpec, path: str, result: dict[str, Any], store: Store | None = None) -> dict[str, Any]:
    """With a store, the run is also recorded in the findings per model over time (cloud/findings_history.py)."""
    if not spec.rules or result.get("cancelled"):
        return result
    from cloud.bcf.export import export_findings
    from cloud.findings_history import record_run
    from ifc_host.check_scripts import sandboxed_check_scripts
    from ifc_host.model_file import BadModelError, open_checked
    from ifc_host.rule_set import count_by_severity, parse_rule_set
    from ifc_host.rules import run_rule_set

    checked = result.get("output") if result.get("committed") and result.get("output") else path
    try:
        model = open_checked(checked)
    except BadModelError as exc:
        return {**result, "rules": {"name": spec.rules.get("name"), "error": str(exc)}}
    rules = parse_rule_set(spec.rules)
    with sandboxed_check_scripts(checked) as run_script:  # the team's check scripts, sandboxed as any script
        findings = run_rule_set(rules, checked, models={str(checked): model}, run_script=run_script)
    if store is not None:
        record_run(store.finding_runs, model=spec.relative(path), source="batch", check_name=rules.name, findings=findings,
                   user_name=spec.owner)
    archive = state_path(spec.state_dir, BCF_FOLDER, spec.relative(path) + ".bcf")
    archive.parent.mkdir(parents=True, exist_ok=True)
    export_findings(findings, archive, models={Path(checked).name: checked}, author="nexus batch",
                    project_name=f"NexusAI batch {spec.batch_id}: {spec.relative(path)}", snapshots=False)
    return {**result, "rules": {"name": rules.name, "checked": str(checked), "counts": count_by_severity(findings),
                                "bcf": str(archive)}}
