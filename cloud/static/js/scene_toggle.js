// The "3D" toggle of a tool card: opens the interactive viewer (scene_viewer.js, loaded on first use) on the
// result's scene (GET /api/sessions/<id>/results/<call>/scene), below the image; the card's change-report
// lines and before → after rows then select their element in it, and its findings naming elements open it
// and select those. Every card with an image has one: a
// committed automation (with or without an image), a captured view, and a change held under `ask` (its approval
// card: the route answers the held model's scene); a discarded change says in the toggle's box why there is
// nothing to show.

import { h } from "./dom.js";

const DISCARDED = "This change was discarded: the model is as it was, so there is no change to show in 3D.";

export function sceneToggle(sessionId, toolCallId, meta, card, { held = false } = {}) {
  const image = Boolean(meta.image && meta.image.image_id);
  const committed = meta.mode === "automate" && meta.committed;
  if (!toolCallId || !(image || committed || held)) return null; // an attribute-only change has a scene, no image
  const discarded = !held && meta.mode === "automate" && !meta.committed;
  const url = `/api/sessions/${encodeURIComponent(sessionId)}/results/${encodeURIComponent(toolCallId)}/scene`;
  const box = h("div", { class: "scene-box" });
  box.hidden = true;
  let opened = null;
  const button = h("button", { type: "button", class: "scene-toggle", "aria-expanded": "false",
    title: held ? "Orbit, section and click the held change in 3D, before you keep or discard it"
      : "Orbit, section and click the elements of this view in 3D", text: "3D view" });
  // Opens or hides the box; resolves to the viewer (null when there is none to show).
  const setOpen = (open) => {
    box.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "Hide 3D view" : "3D view";
    if (!open || opened) return opened;
    if (discarded) {
      box.dataset.state = "error";
      box.replaceChildren(h("div", { class: "note warn scene-error", text: DISCARDED }));
      opened = Promise.resolve(null);
      return opened;
    }
    opened = import("./scene_viewer.js").then(({ openViewer }) =>
      openViewer(box, url, { details: meta.change_details || null, card }));
    return opened;
  };
  button.addEventListener("click", () => setOpen(box.hidden));
  // A finding naming elements (validation's) selects them in the viewer, opening it first when it is closed.
  for (const finding of card.querySelectorAll(".finding-link[data-element-ids]")) {
    finding.classList.add("scene-link");
    finding.style.cursor = "pointer";
    finding.title = "Select in the 3D view";
    finding.addEventListener("click", async () => {
      const viewer = await setOpen(true);
      if (viewer && viewer.select) viewer.select(finding.dataset.elementIds.split(" ").map(Number));
    });
  }
  return h("div", { class: "scene-row", dataset: held ? { held: "1" } : {} }, button, box);
}

// Free the WebGL contexts of the viewers under `root` before it is cleared (a browser keeps only a few).
export function closeViewers(root) {
  for (const box of root.querySelectorAll(".scene-viewer")) if (box.sceneViewer) box.sceneViewer.close();
}
