"""Running one tool call: validate, apply budgets and edits, dispatch to the host, wait, and render.

Every outcome, including refusals and caps, is a normal tool result: the model reads it and decides.
The person gets the full result as a `tool_result` Metadata chunk; the model gets a capped copy.
"""
from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from cloud import chunks
from cloud.chunks import Chunk
from cloud.config import Settings
from cloud.contract import ContractError, validate_host_message, validate_tool_input
from cloud.grounding.registry import NoApiIndex, api_index
from cloud.hostlink import HostConnection, HostDirectory, HostUnavailable
from cloud.hosts.base import ViewRequest, split_epilogue_output
from cloud.hosts.registry import UnknownHostApp, content_hash, get_provider, stamped_epilogue
from cloud.policy import effective_policy
from cloud.prompts import message
from cloud.rendezvous import ToolResultChannel
from cloud.session import Session
from cloud.store import Store
from cloud.tools.edits import apply_edits
from cloud.tools.render import describe_run
from cloud.transcript import tool_result_part

COLLECTION = "execute_data_collection"
CAPTURE = "capture_view"
LOOKUP = "lookup_api"
HOLD_CAPABILITY = "hold"


@dataclass
class ToolContext:
    store: Store
    channel: ToolResultChannel
    hosts: HostDirectory
    settings: Settings
    session: Session
    cancel: threading.Event
    image_max_px: int
    save_state: Callable[[], None]


@dataclass
class _Reply:
    message: dict[str, Any] | None  # the host's reply, or None when nothing came back
    problem: str | None = None  # set when nothing could be sent


def _host(ctx: ToolContext) -> HostConnection | None:
    connection = ctx.hosts.get(ctx.session.host_id)
    return connection if connection and connection.user_name == ctx.session.user_name else None


def _ask_host(ctx: ToolContext, tool_call_id: str, step: str, command: dict[str, Any]) -> _Reply:
    request_id = f"{tool_call_id}.{step}"
    command = {**command, "request_id": request_id}
    ctx.channel.open(ctx.session.session_id, request_id, tool_call_id, ctx.session.host_id)
    try:
        ctx.hosts.send(ctx.session.host_id, command)
    except HostUnavailable as exc:
        ctx.channel.close(ctx.session.session_id)
        return _Reply(None, message("host_unavailable", detail=exc))
    return _Reply(ctx.channel.wait(ctx.session.session_id, ctx.settings.tool_timeout_s, ctx.cancel))


def _plain(call: dict[str, Any], text: str, is_error: bool = True) -> Generator[Chunk, None, dict[str, Any]]:
    yield chunks.metadata("tool_result", text, tool_call_id=call["id"], name=call["name"], ok=not is_error,
                          summary=text)
    return tool_result_part(call["id"], call["name"], text, is_error=is_error)


def execute_tool(ctx: ToolContext, call: dict[str, Any]) -> Generator[Chunk, None, dict[str, Any]]:
    if call.get("input_error"):
        return (yield from _plain(call, message("invalid_json", detail=call["input_error"])))
    try:
        arguments = validate_tool_input(call["name"], call.get("input"))
    except ContractError as exc:
        return (yield from _plain(call, message("invalid_input", detail=exc)))
    connection = _host(ctx)
    if connection is None:
        return (yield from _plain(call, message("no_host")))
    if call["name"] == LOOKUP:
        return (yield from _lookup(ctx, call, connection, arguments["query"]))
    if call["name"] == CAPTURE:
        view = ViewRequest(arguments.get("view"), arguments.get("element_ids", []))
        return (yield from _capture(ctx, call, view))
    if call["name"] == COLLECTION:
        return (yield from _run_script(ctx, call, connection, arguments["code"], "collect"))
    return (yield from _automate(ctx, call, connection, arguments))


def _budget_refusal(ctx: ToolContext) -> tuple[str | None, str | None]:
    """Charge one attempt to the right budget; return (cap message, budget line) ."""
    state, settings = ctx.session.state, ctx.settings
    if state.last_task_committed is None:
        return None, None  # the run's first automation is neither a fix nor an iteration
    if state.last_task_committed:
        if state.iteration_count >= settings.max_iterations:
            return message("iteration_cap", used=state.iteration_count, cap=settings.max_iterations), None
        state.iteration_count += 1
        return None, message("section_budget", kind="iteration", used=state.iteration_count, cap=settings.max_iterations)
    if state.fix_count >= settings.max_fixes:
        return message("fix_cap", used=state.fix_count, cap=settings.max_fixes), None
    state.fix_count += 1
    return None, message("section_budget", kind="fix", used=state.fix_count, cap=settings.max_fixes)


def _automate(ctx: ToolContext, call: dict[str, Any], connection: HostConnection,
              arguments: dict[str, Any]) -> Generator[Chunk, None, dict[str, Any]]:
    state = ctx.session.state
    policy = effective_policy(ctx.store, ctx.session.session_id, ctx.session.user_name)
    if policy == "readonly":
        return (yield from _plain(call, message("readonly")))
    if policy == "ask" and HOLD_CAPABILITY not in (connection.hello.get("capabilities") or []):
        return (yield from _plain(call, message("ask_without_hold")))
    cap, budget_line = _budget_refusal(ctx)
    if cap:
        state.cap_reached = True
        ctx.save_state()
        yield chunks.metadata("budget", cap, tool_call_id=call["id"])
        return (yield from _plain(call, cap))
    notes: list[str] = []
    if "edits" in arguments:
        if not state.current_script:
            state.last_task_committed = False
            return (yield from _plain(call, message("no_script_to_edit")))
        python3 = not connection.hello.get("python_version", "3").startswith("2")
        outcome = apply_edits(state.current_script, arguments["edits"], check_syntax=python3)
        if outcome.script is None:
            state.last_task_committed = False
            ctx.save_state()
            return (yield from _plain(call, outcome.problem or ""))
        code, notes = outcome.script, outcome.notes
        notes_header = [message("section_edits_applied", count=len(outcome.applied))]
    else:
        code, notes_header = arguments["code"], []
    state.current_script = code  # saved with the outcome
    result = yield from _run_script(ctx, call, connection, code, "automate", notes=notes,
                                    extra=[*notes_header, *([budget_line] if budget_line else [])],
                                    review=policy == "ask")
    return result


def _audit(ctx: ToolContext, call_id: str, connection: HostConnection, version: str | None,
           scripts: list[tuple[str, str, str]]) -> None:
    """Record every dispatched script, (kind, code, sha256), with its provenance, in one write."""
    ctx.store.record_scripts([
        {"session_id": ctx.session.session_id, "tool_call_id": call_id, "user_name": ctx.session.user_name,
         "host_id": connection.host_id, "host_app": connection.host_app, "capability_version": version,
         "kind": kind, "code": code, "sha256": sha} for kind, code, sha in scripts])


def _run_script(ctx: ToolContext, call: dict[str, Any], connection: HostConnection, code: str, mode: str,
                notes: list[str] | None = None, extra: list[str] | None = None,
                review: bool = False) -> Generator[Chunk, None, dict[str, Any]]:
    command: dict[str, Any] = {"type": "execute", "mode": mode, "code": code, "timeout_s": ctx.settings.script_timeout_s}
    provider = None
    version = None
    if mode == "automate":
        try:
            provider = get_provider(connection.host_app)
            epilogue = stamped_epilogue(connection.host_app)
            command["epilogue"] = epilogue.as_message()
            version = epilogue.capability_version
        except UnknownHostApp:
            epilogue = None
        # Hold the transaction open so the policy can be re-read once the script has run.
        command["hold"] = HOLD_CAPABILITY in (connection.hello.get("capabilities") or [])
        command["review"] = command["hold"] and review
    scripts = [("model", code, content_hash(code))]
    if command.get("epilogue"):
        scripts.append(("epilogue", epilogue.code, epilogue.sha256))
    _audit(ctx, call["id"], connection, version, scripts)
    reply = _ask_host(ctx, call["id"], "run", command)
    state = ctx.session.state
    state.last_completed_tool = call["name"]
    if reply.message is None or reply.message.get("type") != "execute_result":
        if mode == "automate":
            state.last_task_committed = False
        ctx.save_state()
        return (yield from _plain(call, reply.problem or _no_result_text(ctx, reply.message)))
    result = reply.message
    report, directives = split_epilogue_output(result.get("epilogue_stdout"))
    image, decision = None, None
    if mode == "automate" and provider is not None and (result.get("held") or result.get("committed")):
        view = provider.view_to_capture(result)
        image = _export(ctx, call["id"], view) if view is not None else None
    if result.get("held"):
        result, decision = yield from _settle(ctx, call, result, report, image)
    if mode == "automate":
        state.last_task_committed = bool(result.get("committed"))
    ctx.save_state()
    text = describe_run(result, mode, report, ctx.settings, image_caption=image["caption"] if image else None,
                        notes=notes or [], extra=extra or [], decision=decision)
    person = {"tool_call_id": call["id"], "name": call["name"], "mode": mode, "ok": bool(result.get("ok")),
              "committed": bool(result.get("committed")), "stdout": result.get("stdout", ""),
              "stdout_truncated": bool(result.get("stdout_truncated")), "error": result.get("error"),
              "failures": result.get("failures", []), "changes": result.get("changes"),
              "change_report": report or None, "duration_ms": result.get("duration_ms"),
              "timed_out": bool(result.get("timed_out")), "notes": notes, "image": _image_meta(image),
              "directives": directives, "decision": decision, "external_changes": result.get("external_changes"),
              "blocked": result.get("blocked", []), "dialogs": result.get("dialogs", []), "summary": text}
    ctx.store.save_result(ctx.session.session_id, call["id"], person)
    yield chunks.metadata("tool_result", text, **person)
    images = [image["part"]] if image and "part" in image and result.get("committed") else []
    return tool_result_part(call["id"], call["name"], text, images, is_error=not result.get("ok"))


def _settle(ctx: ToolContext, call: dict[str, Any], held: dict[str, Any], report: str,
            image: dict[str, Any] | None) -> Generator[Chunk, None, tuple[dict[str, Any], dict[str, Any]]]:
    """Decide a held transaction: by policy (re-read now), or by the person under `ask`. Only the
    person's POST to /approval can keep a previewed change; no decision in time counts as discard."""
    policy = effective_policy(ctx.store, ctx.session.session_id, ctx.session.user_name)
    if policy == "auto":
        decision = {"decision": "keep", "by": "policy"}
    elif policy == "readonly":
        decision = {"decision": "discard", "by": "policy", "comment": message("discard_readonly")}
    else:
        summary = message("approval_summary", report=report or "(no change report)")
        yield chunks.metadata("approval_request", summary, tool_call_id=call["id"], change_report=report or None,
                              changes=held.get("changes"), failures=held.get("failures", []),
                              stdout=held.get("stdout", ""), image=_image_meta(image),
                              timeout_s=ctx.settings.approval_timeout_s)
        # Keyed by the execute's request id: the host may report a decision the person took there.
        ctx.channel.open(ctx.session.session_id, f"{call['id']}.run", call["id"], ctx.session.host_id,
                         kind="approval")
        decision = ctx.channel.wait(ctx.session.session_id, ctx.settings.approval_timeout_s, ctx.cancel)
        if decision is None:
            minutes = round(ctx.settings.approval_timeout_s / 60, 1)
            decision = {"decision": "discard", "by": "timeout", "comment": message("discard_timeout", minutes=minutes)}
    reply = _ask_host(ctx, call["id"], "run", {"type": "decide", "decision": decision["decision"]})
    final = reply.message if reply.message and reply.message.get("type") == "execute_result" else None
    settled = {**held, "held": False, "committed": bool(final and final.get("committed"))}
    applied = ((final or {}).get("details") or {}).get("decision")
    if applied in ("keep", "discard") and applied != decision["decision"]:
        # The host had already applied a decision taken there (its review window, its timeout).
        decision = {"decision": applied, "by": final["details"].get("decided_by") or "the host"}
    if final is None:
        settled["error"] = {"type": "NoDecisionResult",
                            "message": reply.problem or _no_result_text(ctx, reply.message)}
    elif final.get("error"):
        settled.update(ok=bool(final.get("ok")), error=final["error"])
    return settled, decision


def _no_result_text(ctx: ToolContext, reply: dict[str, Any] | None) -> str:
    if reply is not None and reply.get("type") == "error":
        return message("host_error", detail=reply.get("message", "unknown error"))
    if reply is not None:
        return message("unexpected_reply", kind=reply.get("type"))
    return message("no_result", minutes=round(ctx.settings.tool_timeout_s / 60, 1))


def _export(ctx: ToolContext, call_id: str, view: ViewRequest) -> dict[str, Any]:
    command = {"type": "export_view", "view": view.view, "element_ids": list(view.element_ids),
               "max_px": ctx.image_max_px}
    reply = _ask_host(ctx, call_id, "view", command)
    if reply.message is None or reply.message.get("type") != "export_view_result" or not reply.message.get("ok"):
        detail = reply.problem or (reply.message or {}).get("error") or (reply.message or {}).get("message") \
            or "no answer from the host"
        return {"error": str(detail), "caption": message("capture_failed", detail=detail)}
    result = reply.message
    png = base64.b64decode(result["png_base64"])
    image_id = ctx.store.save_image(ctx.session.session_id, png)
    highlight = f", {len(view.element_ids)} changed elements highlighted" if view.element_ids else ""
    return {
        "image_id": image_id, "width": result["width"], "height": result["height"], "view": result["view"],
        "caption": message("section_image", view=result["view"], highlight=highlight),
        "part": {"type": "image", "media_type": "image/png", "data": result["png_base64"],
                 "width": result["width"], "height": result["height"]},
    }


def _image_meta(image: dict[str, Any] | None) -> dict[str, Any] | None:
    if not image:
        return None
    if "error" in image:
        return {"error": image["error"]}
    return {k: image[k] for k in ("image_id", "width", "height", "view")}


def _capture(ctx: ToolContext, call: dict[str, Any], view: ViewRequest) -> Generator[Chunk, None, dict[str, Any]]:
    image = _export(ctx, call["id"], view)
    ctx.session.state.last_completed_tool = call["name"]
    ctx.save_state()
    if "error" in image:
        return (yield from _plain(call, image["caption"]))
    text = message("capture_ok", view=image["view"], width=image["width"], height=image["height"])
    person = {"tool_call_id": call["id"], "name": call["name"], "ok": True, "image": _image_meta(image), "summary": text}
    ctx.store.save_result(ctx.session.session_id, call["id"], person)
    yield chunks.metadata("tool_result", text, **person)
    return tool_result_part(call["id"], call["name"], text, [image["part"]])


def _lookup(ctx: ToolContext, call: dict[str, Any], connection: HostConnection,
            query: str) -> Generator[Chunk, None, dict[str, Any]]:
    try:
        answer = api_index(connection.host_app, connection.hello).answer(query)
    except NoApiIndex as exc:
        return (yield from _plain(call, str(exc)))
    ctx.session.state.last_completed_tool = call["name"]
    ctx.save_state()
    return (yield from _plain(call, answer, is_error=False))


def validate_relayed_result(result: Any) -> dict[str, Any]:
    """A browser-relayed host answer must be a valid execute_result / export_view_result / error message."""
    message_ = validate_host_message(result)
    if message_["type"] not in ("execute_result", "export_view_result", "error"):
        raise ContractError(f"invalid result: type: {message_['type']!r} is not a tool result message")
    return message_
