"""The `find_skill` and `run_skill` tools: the team library offered to the model.

A skill runs as an automation of the session (policy, budgets, one transaction, report, validation, image
and audit are execute_task_automation's), after its stored script's sha256 and host app are checked. A check
skill (cloud/skills/checks.py) runs as a read-only data collection instead, and what it prints are findings.
"""
from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import fields
from pathlib import Path
from typing import Any

from cloud import chunks
from cloud.chunks import Chunk
from cloud.findings_history import record_run
from cloud.session import Outcome
from cloud.skills.checks import findings_of, readable, wrapped_check
from cloud.skills.library import SkillLibrary, SkillVersion, Tampered
from cloud.skills.parameters import BindError, bind
from cloud.skills.wording import say
from cloud.tools.automation import execute_task_automation
from cloud.tools.base import Called, ToolContext, ToolOutput, plain, with_person
from cloud.tools.scripts import ScriptRun, run_script
from ifc_host.rule_set import count_by_severity

MAX_FOUND = 8
AUTOMATION = "execute_task_automation"
COLLECTION = "execute_data_collection"


class _AsAutomation(ToolContext):
    """A skill's run counts as an automation for the session's phase and budgets."""

    def record(self, tool: str, outcome: Outcome, script: str | None = None) -> None:
        super().record(AUTOMATION, outcome, script)


class _AsCollection(ToolContext):
    """A check skill's run counts as a data collection."""

    def record(self, tool: str, outcome: Outcome, script: str | None = None) -> None:
        super().record(COLLECTION, outcome, script)


def _rate(skill: dict[str, Any]) -> str:
    if not skill["run_count"]:
        return "never run yet"
    return f"{round(skill['success_rate'] * 100)}% of {skill['run_count']} runs succeeded"


def find_skill(ctx: ToolContext, call: dict[str, Any], arguments: dict[str, Any]) -> ToolOutput:
    assert ctx.host is not None
    query = arguments["query"]
    found = SkillLibrary(ctx.store).listing(ctx.session.user_name, query)
    if not found:  # every word had to match: fall back to any word
        seen: dict[str, dict[str, Any]] = {}
        for word in query.split()[:8]:
            for skill in SkillLibrary(ctx.store).listing(ctx.session.user_name, word):
                seen.setdefault(skill["name"], skill)
        found = list(seen.values())
    runnable = [s for s in found if s["portable"] or s["host_app"] == ctx.host.host_app]
    if not runnable:
        return (yield from plain(call, say("none_found", query=query), is_error=False))
    lines = [say("found_header", query=query)]
    for s in runnable[:MAX_FOUND]:
        params = json.dumps([{k: p[k] for k in ("name", "type", "default", "description") if k in p}
                             for p in s["parameters"]], ensure_ascii=False)
        lines.append(f"- {s['name']} (v{s['version']}, {_rate(s)}): {s['description']}\n  parameters: {params}")
    return (yield from plain(call, "\n".join(lines), is_error=False))


def run_skill(ctx: ToolContext, call: dict[str, Any], arguments: dict[str, Any]) -> ToolOutput:
    assert ctx.host is not None
    library = SkillLibrary(ctx.store)
    name = arguments["name"]
    skill = library.get(ctx.session.user_name, name)
    if skill is None:
        return (yield from plain(call, say("not_found", name=name)))
    if not skill.runs_on(ctx.host.host_app):
        return (yield from plain(call, say("wrong_host", name=skill.name, made_for=skill.host_app,
                                           host=ctx.host.host_app)))
    try:
        code, values = bind(skill.verified_code(), skill.parameters, arguments.get("args", {}))
    except Tampered:
        return (yield from plain(call, say("tampered", name=skill.name, version=skill.version,
                                           sha256=skill.sha256)))
    except BindError as exc:
        params = ", ".join(f"{p['name']} ({p['type']})" for p in skill.parameters) or "none"
        return (yield from plain(call, say("bad_args", name=skill.name, detail=exc, parameters=params)))
    if skill.check:
        if ctx.host.host_app != "ifc":
            return (yield from plain(call, say("check_not_ifc", name=skill.name, host=ctx.host.host_app)))
        called = yield from run_check_skill(ctx, call, skill, code, ctx.session.user_name, values)
        return called.part
    called = yield from run_skill_as_automation(ctx, call, skill, code, ctx.session.user_name)
    part = called.part
    if called.ran:
        header = say("ran_header", name=skill.name, version=skill.version, sha256=skill.sha256[:12],
                     args=json.dumps(values, ensure_ascii=False))
        for item in part.get("content", []):
            if item.get("type") == "text":
                item["text"] = f"{header}\n{item['text']}"
                break
    return part


def run_skill_as_automation(ctx: ToolContext, call: dict[str, Any], skill: SkillVersion, code: str,
                            user: str) -> Generator[Chunk, None, Called]:
    """A skill's verified, bound script as an automation of the session (one transaction, report,
    validation, audit), counted in the skill's statistics when it ran: the one way every door runs a skill."""
    as_automation = _AsAutomation(**{f.name: getattr(ctx, f.name) for f in fields(ctx)})
    called = yield from with_person(execute_task_automation(as_automation, call, {"code": code}))
    if called.ran:  # a refusal (read-only, a cap) ran nothing: it says nothing about the skill
        person = called.person
        SkillLibrary(ctx.store).record_run(
            skill, user, ctx.session.session_id, bool(person.get("committed")),
            None if person.get("committed") else (person.get("error") or person.get("summary")))
    return called


def run_check_skill(ctx: ToolContext, call: dict[str, Any], skill: SkillVersion, code: str, user: str,
                    values: dict[str, Any]) -> Generator[Chunk, None, Called]:
    """A check skill's verified, bound code as a read-only collection on the session's IFC host: the FINDING
    lines it printed become the result's `findings` (which join the session's findings), and the model reads
    them one line each. Counted in the skill's statistics when it ran: a run succeeds when the check finished."""
    assert ctx.host is not None
    path = str(ctx.host.hello.document.get("path") or "")
    model_name = Path(path).name if path else "model.ifc"
    as_collection = _AsCollection(**{f.name: getattr(ctx, f.name) for f in fields(ctx)})
    output = run_script(as_collection, call, ScriptRun(wrapped_check(code, skill.name, model_name), "collect"))
    person: dict[str, Any] = {}
    found = None
    while True:
        try:
            chunk = next(output)
        except StopIteration as done:
            part = done.value
            break
        if chunk.type == "Metadata" and (chunk.metadata or {}).get("kind") == "tool_result":
            person = {k: v for k, v in (chunk.metadata or {}).items() if k != "kind"}
            found = findings_of(person.get("stdout") or "")
            if found is not None:
                counts = count_by_severity(found)
                header = say("check_ran", name=skill.name, version=skill.version, sha256=skill.sha256[:12],
                             args=json.dumps(values, ensure_ascii=False), count=len(found), **counts)
                text = "\n".join(x for x in (header, readable(person["stdout"])) if x)
                person = {**person, "summary": text, "stdout": readable(person["stdout"]),
                          "check_skill": skill.name, "findings": [f.as_json() for f in found], "counts": counts}
                ctx.store.results.save_result(ctx.session.session_id, call["id"], person)
                record_run(ctx.store.finding_runs, model=model_name, source="check skill", check_name=skill.name, findings=found,
                           user_name=user, session_id=ctx.session.session_id)
                chunk = chunks.metadata("tool_result", text, **person)
        yield chunk
    if found is not None:
        part = {**part, "content": [{**item, "text": person["summary"]} if item.get("type") == "text" else item
                                    for item in part.get("content", [])]}
    called = Called(part, person)
    if called.ran:
        SkillLibrary(ctx.store).record_run(skill, user, ctx.session.session_id, found is not None,
                                           None if found is not None else (person.get("error")
                                                                           or person.get("summary")))
    return called
