"""A rule set's script checks run where every other script runs: in a sandboxed script process of a keeper, as a
collection (read-only), never in the process that asked for the check (`nexus check`, a batch's worker), which
holds the store, the settings and the keys. A saved rule set's scripts are a team member's code, like a skill's."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import ifcopenshell

from ifc_host.findings import Finding
from ifc_host.rule_set import Check, require_code
from ifc_host.rules import parse_finding_lines

CHECK_TIMEOUT_S = 600.0

ScriptRunner = Callable[[ifcopenshell.file, Check, str], list[Finding]]


@contextlib.contextmanager
def sandboxed_check_scripts(work: str | Path, isolation: str | None = None) -> Iterator[ScriptRunner]:
    """A runner for `run_rule_set(..., run_script=...)`: one keeper on `work` (started at the first script check,
    closed afterwards) runs each check's code as a collection; its FINDING lines become findings."""
    from ifc_host.executor import IsolatedExecutor, execute_command

    executor: IsolatedExecutor | None = None
    runs = 0

    def run(model: ifcopenshell.file, check: Check, model_name: str) -> list[Finding]:
        nonlocal executor, runs
        code = require_code(check)
        if executor is None:
            executor = IsolatedExecutor(work, isolation=isolation)  # a collection saves nothing
        runs += 1
        result = executor.execute(execute_command(request_id=f"check-{runs}", mode="collect", code=code,
                                             timeout_s=CHECK_TIMEOUT_S))
        found = parse_finding_lines(result.get("stdout") or "", model, model_name, check.rule)
        if not result.get("ok"):
            error = result.get("error") or {}
            found.append(Finding(check.rule, "error", f"the check script {check.rule!r} failed",
                                 f"{error.get('type', 'Error')}: {error.get('message', '')}; the findings it "
                                 "printed before are listed"))
        return found

    try:
        yield run
    finally:
        if executor is not None:
            executor.close()
