// A host's busy/held state (GET /api/hosts `activity`), in words, and the Release button that discards a
// change it holds (POST /api/hosts/<id>/release). Used by the chat page's host field and the admin Hosts tab.

import { api } from "./api.js";
import { formatTime, h, pill } from "./dom.js";

const WORDS = { busy: "running a script", held: "holding a change for Keep/Discard" };

export function activityText(activity) {
  if (!activity || activity.state === "idle") return "idle";
  const until = activity.until ? ` until ${formatTime(activity.until)}` : "";
  return `${WORDS[activity.state] || activity.state} since ${formatTime(activity.since)}${until}`;
}

export function activityPill(activity) {
  const state = (activity && activity.state) || "idle";
  const pillNode = pill(state, state === "idle" ? "good" : state === "held" ? "warn" : "info");
  pillNode.title = activityText(activity) + (activity && activity.session_id ? ` (session ${activity.session_id})` : "");
  return pillNode;
}

export function releaseButton(host, onDone, onError) {
  const button = h("button", { class: "ghost small", type: "button", text: "Release",
                               title: "Discard the change this host holds, so it can take the next request" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await api("POST", `/api/hosts/${encodeURIComponent(host.host_id)}/release`);
      await onDone();
    } catch (error) {
      button.disabled = false;
      onError(error.message);
    }
  });
  return button;
}

// The chat page: what the selected host is doing, with Release while it holds a change.
export function showHostActivity(node, host, onDone, onError) {
  node.replaceChildren();
  const activity = host && host.activity;
  node.hidden = !activity || activity.state === "idle";
  if (node.hidden) return;
  node.append(activityPill(activity), h("span", { class: "muted", text: " " + activityText(activity) }));
  if (activity.state === "held") node.append(" ", releaseButton(host, onDone, onError));
}
