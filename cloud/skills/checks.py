"""Check skills: a skill marked as a check reads the model and prints its findings, one line each, in the format
of ifc_host/rules.py (`FINDING {"title", "elements": [GlobalId, ...], "description", "severity"}`). It runs as a
read-only data collection on the session's IFC host, inside the script sandbox, where the lines it printed become
findings of the one finding type (elements with their class, name and model), which join the session's findings.
The same code is what a rule set's `{"check": "script", "skill": NAME}` runs."""
from __future__ import annotations

import json

from ifc_host.findings import Finding

RESULT_PREFIX = "NEXUS-CHECK-FINDINGS "  # the wrapper's last line: the findings as JSON

WRAPPER = """import json
from ifc_host.rules import Check, script_findings
found = script_findings(model, Check("script", "error", name={rule!r}, code={code!r}), {model_name!r})
for f in found:
    where = ", ".join(e.model + ":" + e.global_id for e in f.elements)
    print(f.severity + ": " + f.title + (" [" + where + "]" if where else ""))
print({prefix!r} + json.dumps([f.as_json() for f in found]))
"""


def wrapped_check(code: str, rule: str, model_name: str) -> str:
    """The collection that runs a check skill's (bound, verified) code on the host and prints its findings."""
    return WRAPPER.format(rule=rule, code=code, model_name=model_name, prefix=RESULT_PREFIX)


def findings_of(stdout: str) -> list[Finding] | None:
    """The findings the wrapper printed; None when its last line is missing (the script was stopped, or its
    output cut)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                return [Finding.from_json(f) for f in json.loads(line[len(RESULT_PREFIX):])]
            except (ValueError, KeyError, TypeError):
                return None
    return None


def readable(stdout: str) -> str:
    """The wrapper's output without its JSON line, for the model and the person."""
    return "\n".join(line for line in stdout.splitlines() if not line.startswith(RESULT_PREFIX))

