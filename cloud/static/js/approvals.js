// The person's held changes, wherever they came from (a chat run, an MCP client, a delegated run): a short
// list under the header, from GET /api/approvals. Each entry opens its session, where the change has its
// Keep/Discard card as in any run.

import { api } from "./api.js";
import { clear, formatTime, h } from "./dom.js";

const POLL_MS = 5000;

function sourceLabel(source) {
  return source && source.startsWith("mcp:") ? `MCP client ${source.slice(4)}` : "chat";
}

function openSession(sessionId) {
  const wanted = "#session=" + sessionId;
  if (location.hash === wanted) location.reload(); // the page shows it as it was opened: open it afresh
  else location.hash = wanted.slice(1);
}

export function mountApprovals(anchor) {
  const list = h("ul", { class: "approval-list" });
  const box = h("div", { id: "approvals", class: "note warn slim", role: "status", hidden: true },
    h("strong", { class: "approvals-title" }), list);
  anchor.after(box);
  let shown = "";

  async function refresh() {
    let approvals;
    try {
      ({ approvals } = await api("GET", "/api/approvals"));
    } catch {
      return; // the next poll tries again; the page itself reports a lost sign-in
    }
    const key = JSON.stringify(approvals.map((a) => [a.session_id, a.tool_call_id, a.decidable]));
    if (key === shown) return;
    shown = key;
    box.hidden = !approvals.length;
    box.querySelector(".approvals-title").textContent = approvals.length === 1
      ? "A change waits for your decision:" : `${approvals.length} changes wait for your decision:`;
    clear(list);
    for (const held of approvals) {
      const what = [held.document || held.host_app || held.host_id, sourceLabel(held.source),
        held.since ? `since ${formatTime(held.since)}` : null].filter(Boolean).join(" · ");
      list.append(h("li", { dataset: { sessionId: held.session_id, toolCallId: held.tool_call_id } },
        h("a", { href: held.link, text: held.decidable ? "Keep or discard" : "Release from the host list",
                 onclick: (event) => { event.preventDefault(); openSession(held.session_id); } }),
        " ", h("span", { class: "muted", text: what })));
    }
  }

  refresh();
  setInterval(refresh, POLL_MS);
}

mountApprovals(document.getElementById("no-host"));
