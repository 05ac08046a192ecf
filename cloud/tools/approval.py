"""Deciding a held transaction: by the policy (re-read now), or by the person under `ask`."""
from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any

from cloud import chunks
from cloud.chunks import Chunk
from cloud.policy import effective_policy
from cloud.prompts import message
from cloud.tools.base import ToolContext, no_reply_text
from cloud.tools.capture import Exported


def settle(ctx: ToolContext, call: dict[str, Any], held: dict[str, Any], report: str,
           image: Exported | None) -> Generator[Chunk, None, tuple[dict[str, Any], dict[str, Any]]]:
    """Return the settled result and the decision. Only the person (on the page or in the host) can keep
    a previewed change; no decision in time counts as discard."""
    assert ctx.host is not None
    policy = effective_policy(ctx.store.user_settings, ctx.session.session_id, ctx.session.user_name)
    if policy == "auto":
        decision = {"decision": "keep", "by": "policy"}
    elif policy == "readonly":
        decision = {"decision": "discard", "by": "policy", "comment": message("discard_readonly"), "undecided": True}
    else:
        summary = message("approval_summary", report=report or "(no change report)")
        yield chunks.metadata("approval_request", summary, tool_call_id=call["id"], change_report=report or None,
                              changes=held.get("changes"), failures=held.get("failures", []),
                              stdout=held.get("stdout", ""), change_details=held.get("change_details"),
                              validation=held.get("validation"),
                              image=_image_json(image), timeout_s=ctx.settings.approval_timeout_s)
        decision = ctx.host.await_decision(call["id"], ctx.settings.approval_timeout_s, ctx.cancel) \
            or _no_decision(ctx)
    # Not cancellable: a cancelled run must still tell the host to let go of what it holds.
    reply = ctx.host.ask({"type": "decide", "decision": decision["decision"]}, ctx.settings.tool_timeout_s,
                         threading.Event(), about=call["id"])
    final = reply.message if reply.message and reply.message.get("type") == "execute_result" else None
    settled = {**held, "held": False, "committed": bool(final and final.get("committed"))}
    applied = ((final or {}).get("details") or {}).get("decision")
    if applied in ("keep", "discard") and applied != decision["decision"]:
        # The host had already applied a decision taken there (its review window, its timeout).
        decision = {"decision": applied, "by": final["details"].get("decided_by") or "the host"}
    if final is None:
        settled["error"] = {"type": "NoDecisionResult", "message": no_reply_text(ctx, reply)}
    elif final.get("error"):
        settled.update(ok=bool(final.get("ok")), error=final["error"])
    return settled, decision


def _no_decision(ctx: ToolContext) -> dict[str, Any]:
    """Why nobody decided, truthfully: the run was cancelled, the host went away, or time ran out.
    `undecided` marks a discard no person chose, so the model is not told the person rejected the change."""
    assert ctx.host is not None
    if ctx.cancel.is_set():
        return {"decision": "discard", "by": "cancel", "comment": message("discard_cancelled"), "undecided": True}
    if not ctx.host.connected():
        return {"decision": "discard", "by": "the host", "comment": message("discard_host_gone"), "undecided": True}
    minutes = round(ctx.settings.approval_timeout_s / 60, 1)
    return {"decision": "discard", "by": "timeout", "comment": message("discard_timeout", minutes=minutes),
            "undecided": True}


def _image_json(image: Exported | None) -> dict[str, Any] | None:
    if image is None:
        return None
    meta = image.person_meta()
    return meta if isinstance(meta, dict) else {"image_id": meta.image_id, "width": meta.width,
                                                "height": meta.height, "view": meta.view}
