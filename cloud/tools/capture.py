"""Images of the host's views: the `capture_view` tool, and the export an automation attaches."""
from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from cloud import chunks
from cloud.hosts.base import ViewRequest
from cloud.prompts import message
from cloud.session_refs import REFS_CAPABILITY, session_refs
from cloud.tools.base import ToolContext, ToolOutput, no_reply_text, plain
from cloud.tools.result import ImageMeta, ToolResult
from cloud.transcript import tool_result_part


@dataclass(frozen=True)
class Exported:
    caption: str
    meta: ImageMeta | None = None  # None when the export failed
    part: dict[str, Any] | None = None  # the image as the model receives it
    error: str | None = None
    building: int | None = None  # of the elements not drawn as their shape, those the host builds for a later view

    def person_meta(self) -> ImageMeta | dict[str, str]:
        return self.meta if self.meta is not None else {"error": self.error or ""}


def export_view(ctx: ToolContext, call_id: str, view: ViewRequest) -> Exported:
    assert ctx.host is not None
    command: dict[str, Any] = {"type": "export_view", "view": view.view, "element_ids": list(view.element_ids),
                               "max_px": ctx.image_max_px}
    refs = session_refs(ctx.store, ctx.session.session_id)
    if refs and ctx.host.hello.has(REFS_CAPABILITY):
        command["refs"] = refs  # drawn greyed behind the working model
    reply = ctx.host.ask(command, ctx.settings.tool_timeout_s, ctx.cancel, about=call_id)
    result = reply.message
    if result is None or result.get("type") != "export_view_result" or not result.get("ok"):
        detail = str(result.get("error") or "no image") if result and result.get("type") == "export_view_result" \
            else no_reply_text(ctx, reply)
        return Exported(message("capture_failed", detail=detail), error=detail)
    png = base64.b64decode(result["png_base64"])
    image_id = ctx.store.results.save_image(ctx.session.session_id, png)
    highlight = f", {len(view.element_ids)} changed elements highlighted" if view.element_ids else ""
    return Exported(
        message("section_image", view=result["view"], highlight=highlight),
        ImageMeta(image_id, result["width"], result["height"], result["view"], result.get("undrawn"),
                  result.get("boxed"), result.get("sketched"), result.get("simplified")),
        {"type": "image", "media_type": "image/png", "data": result["png_base64"],
         "width": result["width"], "height": result["height"]},
        building=result.get("building"))


def capture_view(ctx: ToolContext, call: dict[str, Any], arguments: dict[str, Any]) -> ToolOutput:
    image = export_view(ctx, call["id"], ViewRequest(arguments.get("view"), arguments.get("element_ids", [])))
    if image.meta is None:
        return (yield from plain(call, image.caption))
    width, height = ctx.image_fit(image.meta.width, image.meta.height)  # what the model will see
    text = message("capture_ok", view=image.meta.view, width=width, height=height)
    if image.meta.undrawn:
        text += message("capture_undrawn", count=image.meta.undrawn)
    if image.meta.simplified:
        text += message("capture_simplified", count=image.meta.simplified)
    if image.meta.boxed:
        text += message("capture_boxed", count=image.meta.boxed)
    if image.meta.sketched:
        text += message("capture_sketched", count=image.meta.sketched)
    if image.building:
        text += message("capture_building", count=image.building)
    person = ToolResult(call["id"], call["name"], True, text, image.meta).to_json()
    ctx.store.results.save_result(ctx.session.session_id, call["id"], person)
    yield chunks.metadata("tool_result", text, **person)
    return tool_result_part(call["id"], call["name"], text, [image.part])
