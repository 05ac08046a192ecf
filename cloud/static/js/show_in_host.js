// "Show in Revit" (show_in_host.js): a button beside each element a result names (its change report, its findings, the review
// of a held change). The buttons exist on every card but show only while the conversation's host is Revit
// (body[data-host-app="revit"], kept by chat.js through showInHost); a click asks the server to select and
// zoom to the elements in that Revit (POST /api/sessions/{id}/show-elements), and says what Revit did.

import { api } from "./api.js";
import { h } from "./dom.js";

export const LISTED_ELEMENTS = 15; // beyond this many, one button shows them all (as the change report counts)

// The host application of the conversation's host ("revit", "ifc", ...), or null when it is not connected.
export function showInHost(hostApp) {
  if (hostApp) document.body.dataset.hostApp = hostApp;
  else delete document.body.dataset.hostApp;
}

function outcomeText(reply) {
  if (!reply.ok) return reply.error || "Revit could not show them.";
  const n = reply.shown.length;
  const parts = [`Selected ${n === 1 ? "it" : `${n} elements`} in Revit` + (reply.view ? ` (view ${reply.view})` : "") + "."];
  if (!reply.zoomed) parts.push("Revit has no view that shows " + (n === 1 ? "it" : "them") + "; the selection stands.");
  if (reply.missing && reply.missing.length) {
    const m = reply.missing.length;
    parts.push(`${m} ${m === 1 ? "is" : "are"} no longer in the model (deleted since).`);
  }
  return parts.join(" ");
}

// A button (with its status line) that shows `ids` in Revit; null when there is nothing to show.
export function showElementsButton(sessionId, ids, label = "Show in Revit") {
  const wanted = [...new Set((ids || []).filter(Number.isInteger))];
  if (!sessionId || !wanted.length) return null;
  const status = h("span", { class: "show-status muted", role: "status" });
  const button = h("button", {
    type: "button", class: "show-in-revit", text: label, title: `Select and zoom to ${wanted.length === 1 ? "#" + wanted[0] : wanted.length + " elements"} in Revit`,
    dataset: { elementIds: wanted.join(" ") },
    onclick: async () => {
      button.disabled = true;
      status.textContent = "Asking Revit…";
      try {
        status.textContent = outcomeText(await api("POST", `/api/sessions/${encodeURIComponent(sessionId)}/show-elements`, { element_ids: wanted }));
      } catch (error) {
        status.textContent = error.message;
      } finally {
        button.disabled = false;
      }
    },
  });
  return h("span", { class: "show-in-revit-box" }, button, " ", status);
}

// Under a change report: every changed element still in the model (added, modified; deleted ones cannot be
// shown), one button each while there are few, and one for all of them.
export function changedElementsRow(sessionId, changes) {
  const ids = [...(changes.added || []), ...(changes.modified || [])].filter(Number.isInteger);
  if (!ids.length) return null;
  const all = showElementsButton(sessionId, ids, ids.length === 1 ? "Show in Revit" : `Show all ${ids.length} in Revit`);
  const each = ids.length > 1 && ids.length <= LISTED_ELEMENTS
    ? ids.map((id) => showElementsButton(sessionId, [id], `#${id}`)) : [];
  return h("div", { class: "show-in-revit-row" }, all, each);
}
