"""The `execute_task_automation` tool: the run policy, anchored edits on the current script, the budgets,
then the script run itself (scripts.py)."""
from __future__ import annotations

from typing import Any

from cloud import chunks
from cloud.hosts.registry import script_dialect
from cloud.policy import effective_policy
from cloud.prompts import message, person_message
from cloud.session import Outcome
from cloud.tools.base import ToolContext, ToolOutput, plain
from cloud.tools.edits import apply_edits, merged_excerpt
from cloud.tools.scripts import HOLD_CAPABILITY, ScriptRun, run_script


def execute_task_automation(ctx: ToolContext, call: dict[str, Any], arguments: dict[str, Any]) -> ToolOutput:
    assert ctx.host is not None
    state = ctx.session.state
    policy = effective_policy(ctx.store.user_settings, ctx.session.session_id, ctx.session.user_name)
    if policy == "readonly":
        return (yield from plain(call, message("readonly")))
    if policy == "ask" and not ctx.host.hello.has(HOLD_CAPABILITY):
        return (yield from plain(call, message("ask_without_hold")))
    charge = state.next_charge(ctx.settings)
    if charge.exhausted:
        cap = message(f"{charge.kind}_cap", used=charge.used, cap=charge.cap)
        ctx.record(call["name"], Outcome.CAPPED)
        yield chunks.metadata("budget", person_message(f"budget_{charge.kind}_cap", used=charge.used, cap=charge.cap),
                              tool_call_id=call["id"])
        return (yield from plain(call, cap))
    # Edits that cannot apply run nothing: they cost no budget and leave the phase as it was.
    run = ScriptRun(arguments.get("code", ""), "automate", review=policy == "ask")
    if "edits" in arguments:
        if not state.current_script:
            return (yield from plain(call, message("no_script_to_edit")))
        dialect = script_dialect(ctx.host.hello)  # the cloud's CPython 3 can only check Python 3 scripts
        outcome = apply_edits(state.current_script, arguments["edits"],
                              check_syntax=dialect is not None and dialect.compiles_here)
        if outcome.script is None:
            return (yield from plain(call, outcome.problem or ""))
        run.code, run.notes = outcome.script, outcome.notes
        excerpt, whole = merged_excerpt(state.current_script, outcome.script)
        run.extra.append(message("section_edits_applied", count=len(outcome.applied)))
        run.extra.append(message("section_merged_whole" if whole else "section_merged_excerpt", script=excerpt))
    if charge.kind is not None:
        run.extra.append(message("section_budget", kind=charge.kind, used=charge.used + 1, cap=charge.cap))
    return (yield from run_script(ctx, call, run))
