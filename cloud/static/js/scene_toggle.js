// The "3D" toggle of a tool card: opens the interactive viewer (scene_viewer.js, loaded on first use) on the
// result's scene (GET /api/sessions/<id>/results/<call>/scene), below the image; the card's change-report
// lines and before → after rows then select their element in it.

import { h } from "./dom.js";

export function sceneToggle(sessionId, toolCallId, meta, card) {
  const automation = meta.mode === "automate" && meta.committed;
  const capture = !meta.mode && meta.image && meta.image.image_id;
  if (!automation && !capture) return null;
  const url = `/api/sessions/${encodeURIComponent(sessionId)}/results/${encodeURIComponent(toolCallId)}/scene`;
  const box = h("div", { class: "scene-box" });
  box.hidden = true;
  let opened = null;
  const button = h("button", { type: "button", class: "scene-toggle", "aria-expanded": "false",
    title: "Orbit, section and click the elements of this view in 3D", text: "3D view" });
  button.addEventListener("click", async () => {
    const open = box.hidden;
    box.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "Hide 3D view" : "3D view";
    if (!open || opened) return;
    opened = import("./scene_viewer.js").then(({ openViewer }) =>
      openViewer(box, url, { details: meta.change_details || null, card }));
    await opened;
  });
  return h("div", { class: "scene-row" }, button, box);
}
