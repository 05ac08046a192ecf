"""Running one script on the host (collect or automate): audit it, send it, attach the view, settle a held
transaction, and give the person the full result and the model its capped copy."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cloud import chunks
from cloud.hostlink import request_id_for
from cloud.hosts.base import split_epilogue_output
from cloud.hosts.registry import (
    CapabilityScript,
    UnknownHostApp,
    content_hash,
    get_provider,
    stamped_epilogue,
)
from cloud.rule_sets import session_rules
from cloud.session import Outcome
from cloud.session_refs import REFS_CAPABILITY, session_refs
from cloud.tools.approval import settle
from cloud.tools.base import ToolContext, ToolOutput, no_reply_text, plain
from cloud.tools.capture import Exported, export_view
from cloud.tools.render import describe_run
from cloud.tools.result import ScriptResult
from cloud.transcript import tool_result_part
from cloud.validation_setting import effective_validation, session_ids
from shared_contract.host_messages import ExecuteCommand, ExecuteResult, ModelRef

HOLD_CAPABILITY = "hold"
VALIDATE_CAPABILITY = "validate"  # the host checks what an automation introduced (warn or block)


@dataclass
class ScriptRun:
    code: str
    mode: str  # "collect" or "automate"
    review: bool = False  # the person keeps or discards the change before it commits
    notes: list[str] = field(default_factory=list)  # advisory findings on merged edits
    extra: list[str] = field(default_factory=list)  # lines appended to the model's copy (edits, budget)


def _audit(ctx: ToolContext, call_id: str, epilogue: CapabilityScript | None, code: str) -> None:
    """Record every dispatched script, with its provenance, in one write."""
    assert ctx.host is not None
    scripts = [("model", code, content_hash(code))]
    if epilogue is not None:
        scripts.append(("epilogue", epilogue.code, epilogue.sha256))
    ctx.store.ledger.record_scripts([
        {"session_id": ctx.session.session_id, "tool_call_id": call_id, "user_name": ctx.session.user_name,
         "host_id": ctx.host.host_id, "host_app": ctx.host.host_app,
         "capability_version": epilogue.capability_version if epilogue else None,
         "kind": kind, "code": code, "sha256": sha} for kind, code, sha in scripts])


def execute_command(ctx: ToolContext, call: dict[str, Any], run: ScriptRun,
                    epilogue: CapabilityScript | None) -> ExecuteCommand:
    """The execute for this script, with what the host's hello says it can do: hold the transaction open so
    the policy can be re-read once the script has run, check what an automation introduced, see the session's
    reference models."""
    assert ctx.host is not None
    hello, session_id = ctx.host.hello, ctx.session.session_id
    refs = session_refs(ctx.store, session_id) if hello.has(REFS_CAPABILITY) else []
    options: dict[str, Any] = {}
    if run.mode == "automate":
        hold = hello.has(HOLD_CAPABILITY)
        options.update(hold=hold, review=hold and run.review)
        if hello.has(VALIDATE_CAPABILITY):
            options.update(validation=effective_validation(ctx.store, session_id, ctx.session.user_name),
                           ids=session_ids(ctx.store, session_id) or None,
                           rules=session_rules(ctx.store, session_id) or None)
    return ExecuteCommand(
        request_id=request_id_for({"type": "execute"}, call["id"]), mode=run.mode,  # type: ignore[arg-type]
        code=run.code, timeout_s=ctx.settings.script_timeout_s,
        epilogue=epilogue.as_epilogue() if epilogue is not None else None,
        refs=tuple(ModelRef.from_dict(ref) for ref in refs) or None, **options)


def run_script(ctx: ToolContext, call: dict[str, Any], run: ScriptRun) -> ToolOutput:
    assert ctx.host is not None
    automate = run.mode == "automate"
    provider, epilogue = None, None
    if automate:
        try:
            provider, epilogue = get_provider(ctx.host.host_app), stamped_epilogue(ctx.host.host_app)
        except UnknownHostApp:
            pass
    command = execute_command(ctx, call, run, epilogue)
    _audit(ctx, call["id"], epilogue, run.code)
    reply = ctx.host.ask(command.to_dict(), ctx.settings.tool_timeout_s, ctx.cancel, about=call["id"])
    result = reply.message
    if result is None or result.get("type") != "execute_result":
        ctx.record(call["name"], Outcome.NOT_COMMITTED if automate else Outcome.COLLECTED,
                   run.code if automate else None)
        return (yield from plain(call, no_reply_text(ctx, reply)))
    # Built, not checked again: every link hands on only replies it checked against the contract (the host
    # socket, a relaying browser's POST, an in-process host: hostlink.checked_reply).
    outcome = ExecuteResult.build(result)
    report, directives = split_epilogue_output(outcome.epilogue_stdout)
    image: Exported | None = None
    decision = None
    if automate and provider is not None and (outcome.held or outcome.committed):
        view = provider.view_to_capture(result)
        image = export_view(ctx, call["id"], view) if view is not None else None
    if outcome.held:
        result, decision = yield from settle(ctx, call, result, report, image)
    committed = bool(result.get("committed"))
    text = describe_run(result, run.mode, report, ctx.settings, image_caption=image.caption if image else None,
                        notes=run.notes, extra=run.extra, decision=decision)
    person = ScriptResult(
        call["id"], call["name"], bool(result.get("ok")), text, image.person_meta() if image else None,
        mode=run.mode, committed=committed, stdout=result.get("stdout", ""),
        stdout_truncated=bool(result.get("stdout_truncated")), error=result.get("error"),
        failures=result.get("failures", []), changes=result.get("changes"), change_report=report or None,
        duration_ms=result.get("duration_ms"), timed_out=bool(result.get("timed_out")), notes=run.notes,
        directives=directives, decision=decision, external_changes=result.get("external_changes"),
        blocked=result.get("blocked", []), dialogs=result.get("dialogs", []),
        change_details=result.get("change_details"), validation=result.get("validation")).to_json()
    # What the call did to the run's state and the person's copy: one commit (one statement on PostgreSQL).
    with ctx.store.db.write(together=True):
        ctx.record(call["name"], (Outcome.COMMITTED if committed else Outcome.NOT_COMMITTED) if automate
                   else Outcome.COLLECTED, run.code if automate else None)
        ctx.store.results.save_result(ctx.session.session_id, call["id"], person)
    yield chunks.metadata("tool_result", text, **person)
    images = [image.part] if image and image.part and committed else []
    return tool_result_part(call["id"], call["name"], text, images, is_error=not result.get("ok"))
