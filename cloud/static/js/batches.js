// Batches in the product: "Apply to other models…" under a kept automation (chat page), the batch view
// (progress, per-file outcome, keep/discard under `ask`) and the admin console's Batches tab.

import { api, openStream, readEvents } from "./api.js";
import { clear, formatTime, h, pill } from "./dom.js";

const STATE_PILL = {
  committed: "good", kept: "good", unchanged: "muted", staged: "warn", discarded: "muted",
  failed: "bad", cancelled: "muted", queued: "muted", running: "info",
};

function counts(mapping) {
  const parts = Object.entries(mapping || {}).filter(([, v]) => v).map(([k, v]) => `${k} ${v}`);
  return parts.length ? parts.join(", ") : "none";
}

export function progressText(p) {
  const review = p.awaiting_review ? `, ${p.awaiting_review} awaiting review` : "";
  return `done ${p.done}, failed ${p.failed}, running ${p.running}, left ${p.left} of ${p.total}${review}` +
    (p.cancelled ? " (cancelled)" : "") + (p.finished ? " · finished" : "");
}

// Follow a batch's progress (server-sent events) until it completes; onProgress(progress) on each change.
export async function followBatch(batchId, onProgress, onFile) {
  const opened = Date.now();
  const response = await openStream("GET", `/api/batches/${encodeURIComponent(batchId)}/events`);
  for await (const frame of readEvents(response)) {
    if (!frame.chunk) continue;
    if (frame.chunk.type === "BatchFile" && onFile) onFile(frame.chunk);
    if (frame.chunk.type === "BatchProgress" || frame.chunk.type === "BatchComplete") onProgress(frame.chunk);
    if (frame.chunk.type === "BatchComplete") return frame.chunk;
  }
  // The server ends a stream after an hour: follow on (a stream that ended early is not retried).
  return Date.now() - opened > 60_000 ? followBatch(batchId, onProgress, onFile) : null;
}

// Under a committed (and, under ask, kept) automation: start a batch with that exact script, named by
// the session and tool call whose audited script it is (the browser never re-sends the code).
export function applyToModels(sessionId, toolCallId, meta) {
  const kept = meta && meta.mode === "automate" && meta.committed && !(meta.decision && meta.decision.decision === "discard");
  if (!kept || !sessionId || !toolCallId) return null;
  const box = h("div", { class: "apply-batch" });
  const open = h("button", { type: "button", class: "ghost apply-batch-open", text: "Apply to other models…" });
  open.addEventListener("click", () => {
    open.hidden = true;
    box.append(batchForm(sessionId, toolCallId, box));
  });
  box.append(open);
  return box;
}

function batchForm(sessionId, toolCallId, box) {
  const files = h("input", { type: "text", name: "batch-files", placeholder: "models/**/*.ifc", required: true, spellcheck: "false" });
  const out = h("input", { type: "text", name: "batch-out", placeholder: "out/standardised", required: true, spellcheck: "false" });
  const status = h("div", { class: "apply-batch-status", role: "status" });
  const start = h("button", { type: "button", class: "primary", text: "Start batch" });
  // The session's IDS (the chat page's indicator names it) is carried over unless the person unticks it.
  const sessionIds = document.getElementById("ids-indicator");
  const hasIds = sessionIds && !sessionIds.hidden && sessionIds.dataset.title;
  const carryIds = hasIds ? h("input", { type: "checkbox", name: "batch-ids", checked: true }) : null;
  start.addEventListener("click", async () => {
    start.disabled = true;
    status.className = "apply-batch-status muted";
    status.textContent = "Starting…";
    try {
      const body = { session_id: sessionId, tool_call_id: toolCallId, files: files.value.trim(), out: out.value.trim() };
      if (carryIds && !carryIds.checked) body.ids = null; // without the field, the session's IDS goes along
      const started = await api("POST", "/api/batches", body);
      const line = h("span", { class: "batch-progress", text: `Batch ${started.batch_id}: ${started.files} file(s) queued` });
      clear(status).append(line, " · ", h("a", { href: started.url, target: "_blank", rel: "noopener", class: "batch-link", text: "Open the batch" }),
        started.ids ? h("span", { class: "batch-ids", text: ` · ${idsText(started.ids)}` }) : null);
      status.className = "apply-batch-status note slim";
      status.dataset.batchId = started.batch_id;
      const end = await followBatch(started.batch_id, (p) => { line.textContent = `Batch ${started.batch_id}: ${progressText(p)}`; });
      if (end) status.dataset.finished = "1";
    } catch (err) {
      status.textContent = err.message;
      status.className = "apply-batch-status note warn slim";
      start.disabled = false;
    }
  });
  return h("div", { class: "apply-batch-form" },
    h("label", { class: "field" }, h("span", { text: "Models (glob under the batch root)" }), files),
    h("label", { class: "field" }, h("span", { text: "Out folder (under the batch root)" }), out),
    h("p", { class: "muted", text: "The same reviewed script runs on each model, each in its own transaction; inputs are never modified." }),
    carryIds ? h("label", { class: "field checkbox-field apply-batch-ids" }, carryIds,
      h("span", { text: ` Check the session's IDS “${sessionIds.dataset.title}” on every model` })) : null,
    status, start);
}

// A file's validation findings, each with its element and rule (IDS findings name their specification).
const FINDINGS_SHOWN = 5;

function findingsText(findings) {
  if (!findings.length) return "none";
  const one = (f) => `${f.entity_id ? `#${f.entity_id} ` : ""}${f.class || ""}${f.class || f.entity_id ? ": " : ""}` +
    `${f.rule ? f.rule + ": " : ""}${f.message || ""}`;
  const more = findings.length > FINDINGS_SHOWN ? ` (+${findings.length - FINDINGS_SHOWN} more)` : "";
  return findings.slice(0, FINDINGS_SHOWN).map(one).join("; ") + more;
}

function fileRow(batch, file, onDecide) {
  const cells = [
    h("td", { text: file.file }),
    h("td", {}, pill(file.state, STATE_PILL[file.state] || "muted")),
    h("td", { text: file.changes ? counts(file.changes) : "" }),
    h("td", { text: file.change_kinds ? counts(file.change_kinds) : "" }),
    h("td", { class: "batch-validation", text: file.validation ? findingsText(file.validation) : "" }),
    h("td", {}, (file.images || []).map((id) => {
      const src = `/api/batches/${encodeURIComponent(batch.batch_id)}/images/${encodeURIComponent(id)}`;
      return h("a", { href: src, target: "_blank", rel: "noopener", class: "batch-image", title: `image ${id}` },
        h("img", { src, alt: `view of ${file.file}`, width: "96", loading: "lazy" }));
    })),
    h("td", { class: "batch-audit" }, (file.audit || []).map((a) => h("div", { class: "muted", text: `${a.kind} ${a.sha256.slice(0, 12)} · ${a.user_name} · ${formatTime(a.ts)}` }))),
    h("td", { text: file.error || (file.review && file.review.by ? `${file.review.decision} by ${file.review.by}` : "") }),
  ];
  const actions = h("td", { class: "batch-actions" });
  if (file.state === "staged" && onDecide) {
    for (const decision of ["keep", "discard"]) {
      const button = h("button", { type: "button", class: decision === "keep" ? "primary" : "ghost", dataset: { decision }, text: decision === "keep" ? "Keep" : "Discard" });
      button.addEventListener("click", () => onDecide(file.file, decision, button));
      actions.append(button);
    }
  }
  cells.push(actions);
  return h("tr", { dataset: { file: file.file, state: file.state } }, cells);
}

export function batchTable(batch, onDecide) {
  return h("div", { class: "table-wrap" }, h("table", { class: "data batch-files" },
    h("thead", {}, h("tr", {}, ["File", "Outcome", "Changes", "By kind", "Validation", "Images", "Audit", "Note", ""].map((t) => h("th", { text: t })))),
    h("tbody", {}, batch.file_results.map((f) => fileRow(batch, f, onDecide)))));
}

// An IDS named as a person sees it: title, number of specifications, size (never the document).
export function idsText(ids) {
  const count = ids.specifications === null || ids.specifications === undefined ? "" :
    `${ids.specifications} specification${ids.specifications === 1 ? "" : "s"}, `;
  return `IDS “${ids.title || "untitled"}” (${count}${(ids.bytes / 1024).toFixed(1)} KB)`;
}

function batchHead(batch) {
  const task = batch.kind === "script" ? `script ${batch.script_name || ""} (sha256 ${(batch.script_sha256 || "").slice(0, 12)})` : `prompt on ${batch.model}`;
  return h("div", { class: "batch-head" },
    h("h2", {}, `Batch ${batch.batch_id} `, pill(batch.policy, batch.review ? "warn" : "info")),
    h("div", { class: "muted", text: `${task} · by ${batch.owner} · ${formatTime(batch.created)} · out ${batch.out} · ${batch.runner}` }),
    batch.ids ? h("div", { class: "batch-ids", role: "note",
      text: `Checked on every file against the ${idsText(batch.ids)}; validation ${batch.validation}` }) : null,
    h("div", { class: "batch-progress-line", text: progressText(batch.progress) }));
}

// The batch page: head, progress (live), files with keep/discard under ask, event log.
export async function batchView(node, batchId) {
  const load = () => api("GET", `/api/batches/${encodeURIComponent(batchId)}`);
  const render = (batch) => {
    const onDecide = async (file, decision, button) => {
      button.disabled = true;
      try {
        await api("POST", `/api/batches/${encodeURIComponent(batchId)}/review`, { file, decision });
        render(await load());
      } catch (err) {
        node.prepend(h("div", { class: "note warn slim", text: err.message }));
        button.disabled = false;
      }
    };
    const cancel = h("button", { type: "button", class: "ghost batch-cancel", text: "Cancel the batch", hidden: batch.progress.finished });
    cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      await api("POST", `/api/batches/${encodeURIComponent(batchId)}/cancel`).catch((err) => node.prepend(h("div", { class: "note warn slim", text: err.message })));
    });
    clear(node).append(batchHead(batch), cancel, batchTable(batch, batch.review ? onDecide : null),
      h("details", { class: "batch-events" }, h("summary", { text: `Events (${batch.events.length})` }),
        h("ul", {}, batch.events.map((e) => h("li", { text: `${formatTime(e.ts)} · ${e.event} by ${e.by}${e.file ? " · " + e.file : ""}` })))));
    node.dataset.finished = batch.progress.finished ? "1" : "0";
  };
  const batch = await load();
  render(batch);
  if (!batch.progress.finished) {
    followBatch(batchId, (p) => {
      const line = node.querySelector(".batch-progress-line");
      if (line) line.textContent = progressText(p);
    }, () => load().then(render)).then(() => load().then(render))
      .catch((err) => node.prepend(h("div", { class: "note warn slim", text: err.message })));
  }
}

// The admin console's Batches tab: every batch, newest first; a click opens its per-file detail.
export async function batchesTab(panel) {
  clear(panel);
  const data = await api("GET", "/api/batches");
  const detail = h("div", { id: "batch-detail" });
  const rows = data.batches.map((b) => {
    const row = h("tr", { class: "clickable", dataset: { batch: b.batch_id } },
      h("td", { text: b.batch_id }), h("td", { text: b.owner }), h("td", { text: formatTime(b.created) }),
      h("td", { text: (b.kind === "script" ? b.script_name || "script" : b.model) + (b.ids ? ` · ${idsText(b.ids)}` : "") }),
      h("td", { text: b.policy }),
      h("td", { text: String(b.files) }), h("td", { text: progressText(b.progress) }),
      h("td", {}, h("a", { href: b.url, target: "_blank", rel: "noopener", text: "open" })));
    row.addEventListener("click", async () => {
      const batch = await api("GET", `/api/batches/${encodeURIComponent(b.batch_id)}`);
      clear(detail).append(batchHead(batch), batchTable(batch, null));
    });
    return row;
  });
  panel.append(h("h2", { text: "Batches" }),
    data.batches.length ? h("div", { class: "table-wrap" }, h("table", { class: "data", id: "batches-table" },
      h("thead", {}, h("tr", {}, ["Batch", "By", "Started", "Task", "Policy", "Files", "Progress", ""].map((t) => h("th", { text: t })))),
      h("tbody", {}, rows)))
      : h("p", { class: "muted", text: "No batches yet: start one with POST /api/batches or “Apply to other models…” under a kept automation." }),
    detail);
}
