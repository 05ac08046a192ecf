// One tool call, from the script being written to its result: code (highlighted as it streams), the wait
// for the host, then the outcome, error, host failures, change report, view image and the full output.

import { api } from "./api.js";
import { clear, codeBlock, h, pill, throttled, zoomableImage } from "./dom.js";
import { outputView } from "./output.js";
import { parsePartialJson } from "./partial_json.js";
import { applyToModels } from "./batches.js";
import { saveAsSkill } from "./skills.js";
import { closeViewers, sceneToggle } from "./scene_toggle.js";
import { changedElementsRow, showElementsButton } from "./show_in_host.js";

const TOOL_LABELS = {
  execute_data_collection: "Inspecting the model",
  execute_task_automation: "Changing the model",
  capture_view: "Capturing a view",
  lookup_api: "Looking up the API",
};

export const ESC_HINT_AFTER_S = 10;
const OUTCOME_KINDS = {
  committed: "good", kept: "good", done: "good", collected: "good", rolled_back: "bad", failed: "bad",
  timed_out: "bad", discarded: "warn", unknown: "warn", cancelled: "muted", not_run: "muted",
};

export class ToolCard {
  constructor({ sessionId, toolCallId, name, hostLabel, busyHint }) {
    this.sessionId = sessionId;
    this.toolCallId = toolCallId;
    this.name = name || "tool";
    this.hostLabel = hostLabel || "the host";
    this.busyHint = busyHint || ""; // the host's provider says what helps when it stays busy (none: no hint)
    this.raw = "";
    this.input = undefined;
    this.timer = null;
    this.status = pill("writing", "info");
    this.code = h("div", { class: "tool-input" });
    this.wait = h("div", { class: "tool-wait", hidden: true });
    this.result = h("div", { class: "tool-result" });
    this.el = h("section", { class: "tool-card", dataset: { toolCallId: toolCallId || "", state: "writing", tool: this.name } },
      h("header", { class: "tool-head" },
        h("span", { class: "tool-icon", "aria-hidden": "true", text: this.name === "execute_task_automation" ? "✎" : "⌕" }),
        h("span", { class: "tool-label", text: TOOL_LABELS[this.name] || this.name }),
        h("code", { class: "tool-name", text: this.name }),
        h("span", { class: "spacer" }),
        this.status),
      this.code, this.wait, this.result);
    this.renderRaw = throttled(() => this.renderInput(parsePartialJson(this.raw), false));
  }

  setState(state, label, kind) {
    this.el.dataset.state = state;
    this.status.textContent = label;
    this.status.className = "pill " + (kind || "");
  }

  // A piece of the tool's JSON arguments, as the model writes them.
  appendInput(piece) {
    this.raw += piece;
    // Render at once (not per frame): the script visibly grows with every piece the model sends.
    this.renderInput(parsePartialJson(this.raw), false);
  }

  renderInput(input, final) {
    if (input === undefined || input === null || typeof input !== "object") return;
    this.input = input;
    clear(this.code);
    if (typeof input.code === "string") {
      const block = codeBlock(input.code);
      block.querySelector("code").dataset.role = "script";
      this.code.append(block);
      if (!final) block.classList.add("streaming");
    } else if (Array.isArray(input.edits)) {
      this.code.append(editsView(input.edits));
    } else if (Object.keys(input).length) {
      this.code.append(h("dl", { class: "tool-args" },
        Object.entries(input).flatMap(([key, value]) => [
          h("dt", { text: key }),
          h("dd", { text: typeof value === "string" ? value : JSON.stringify(value) }),
        ])));
    }
  }

  // The complete call (ToolCall chunk, or a call read back from the transcript).
  called(input, { live = true, waitedFor = null, startedAt = null } = {}) {
    this.renderInput(input || {}, true);
    if (!live) {
      this.setState("done", "done", "muted");
      return;
    }
    this.setState("running", "running", "info");
    this.startWait(waitedFor, startedAt);
  }

  // `startedAt`: when the call started, in seconds since the epoch (the server's stamp on the ToolCall
  // chunk), so a replayed call after a reload counts from its real start, not from the replay.
  startWait(label, startedAt = null) {
    const started = typeof startedAt === "number" ? Math.min(startedAt * 1000, Date.now()) : Date.now();
    this.wait.hidden = false;
    const text = h("span", { class: "wait-text" });
    const hint = h("div", { class: "hint", hidden: true, text: this.busyHint });
    clear(this.wait).append(h("span", { class: "spinner", "aria-hidden": "true" }), text, hint);
    const tick = () => {
      const seconds = Math.max(0, Math.floor((Date.now() - started) / 1000));
      text.textContent = `${label || "Waiting for " + this.hostLabel} · ${seconds} s`;
      hint.hidden = !this.busyHint || seconds < ESC_HINT_AFTER_S;
    };
    tick();
    this.timer = setInterval(tick, 1000);
  }

  stopWait() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.wait.hidden = true;
  }

  // The person's full copy of the result (a `tool_result` Metadata chunk, or GET .../results/<id>).
  showResult(meta) {
    this.stopWait();
    closeViewers(this.result); // the approval card's viewer, when the decision replaces it
    clear(this.result);
    const ok = meta.ok !== false;
    const discarded = meta.decision && meta.decision.decision === "discard";
    const person = meta.person || null; // a refusal, spent budget or lost answer, in the person's words
    if (person && !meta.mode) {
      const state = person.status === "not run" ? "not-run" : person.status || "failed";
      this.setState(state, person.status || "failed", person.status === "failed" ? "bad" : person.status === "not run" || person.status === "cancelled" ? "muted" : "warn");
      this.plain = true;
      this.result.append(h("div", { class: "note warn person-text", text: person.text }));
      if (meta.summary) this.result.append(modelCopy(meta.summary));
      return;
    }
    if (meta.timed_out) this.setState("failed", "timed out", "bad");
    else if (discarded) this.setState("discarded", "discarded", "warn");
    else if (meta.mode === "automate") this.setState(meta.committed ? "committed" : "rolled-back",
      meta.committed ? "committed" : "rolled back", meta.committed ? "good" : "bad");
    else this.setState(ok ? "done" : "failed", ok ? "done" : "failed", ok ? "good" : "bad");
    if (!meta.mode && meta.summary && !meta.image) {
      // A refusal or a problem before anything ran: the explanation is all there is.
      this.plain = true;
      this.result.append(h("div", { class: ok ? "note" : "note warn", text: meta.summary }));
      return;
    }
    if (meta.external_changes && meta.external_changes.summary) {
      this.result.append(h("div", { class: "note", text: "Changed outside NexusAI since the previous run: " + meta.external_changes.summary }));
    }
    this.result.append(outcomeLine(meta));
    if (meta.decision && meta.decision.comment) {
      this.result.append(h("div", { class: "note", text: "Comment: " + meta.decision.comment }));
    }
    if (meta.blocked && meta.blocked.length) {
      this.result.append(h("div", { class: "note warn", text: "The host blocked: " + meta.blocked.join(", ") }));
    }
    if (meta.dialogs && meta.dialogs.length) {
      this.result.append(h("ul", { class: "notes dialogs" }, meta.dialogs.map((d) =>
        h("li", { text: `Dialog${d.dismissed ? " (dismissed)" : ""}: ${d.message}` }))));
    }
    if (meta.error) this.result.append(errorView(meta.error));
    if (meta.failures && meta.failures.length) this.result.append(failuresView(meta.failures, this.sessionId));
    if (meta.change_report || meta.changes) this.result.append(changesView(meta, this.sessionId));
    if (meta.change_details || meta.validation) this.result.append(diffView(meta.change_details, meta.validation, this.sessionId));
    if (meta.image) this.result.append(imageView(this.sessionId, meta.image));
    const scene = sceneToggle(this.sessionId, this.toolCallId, meta, this.result);
    if (scene) this.result.append(scene);
    if (meta.mode) this.result.append(outputView(meta.stdout || "", "Output"));
    if (meta.stdout_truncated) this.result.append(h("div", { class: "note", text: "The host truncated this output." }));
    if (meta.notes && meta.notes.length) {
      this.result.append(h("ul", { class: "notes" }, meta.notes.map((n) => h("li", { text: n }))));
    }
    const keep = saveAsSkill(this.sessionId, this.toolCallId, meta);
    if (keep) this.result.append(keep);
    const apply = applyToModels(this.sessionId, this.toolCallId, meta);
    if (apply) this.result.append(apply);
    if (meta.summary) this.result.append(modelCopy(meta.summary));
  }

  // Fallback when no full copy was stored: the model's copy from the transcript.
  // `outcome` {key, label}: the call's real outcome where the server worked it out (committed, kept,
  // rolled_back, discarded, cancelled, not_run, collected, failed, timed_out, unknown).
  showTranscriptResult(part, outcome = null) {
    this.stopWait();
    const text = (part.content || []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
    if (outcome) this.setState(outcome.key.replace(/_/g, "-"), outcome.label, OUTCOME_KINDS[outcome.key] || "muted");
    else this.setState(part.is_error ? "failed" : "done", part.is_error ? "failed" : "done", part.is_error ? "bad" : "good");
    clear(this.result).append(h("pre", { class: "plain-text result-text", text }));
  }

  showApproval(meta, onDecided) {
    this.stopWait();
    this.setState("awaiting", "awaiting approval", "warn");
    this.result.append(approvalView(this.sessionId, meta, onDecided, this.toolCallId));
  }

  cancelled() {
    this.stopWait();
    const state = this.el.dataset.state;
    if (state === "running" || state === "writing" || (this.plain && state === "failed")) this.setState("cancelled", "cancelled", "muted");
  }
}

// The model's own copy of a result, instructions included: folded away, never the card's text.
function modelCopy(summary) {
  return h("details", { class: "model-copy" },
    h("summary", { text: "What the model received" }), h("pre", { class: "plain-text", text: summary }));
}

function editsView(edits) {
  return h("div", { class: "edits" }, edits.map((edit, index) => h("div", { class: "edit" },
    h("div", { class: "edit-head muted", text: `Edit ${index + 1}` + (edit && edit.line ? ` (near line ${edit.line})` : "") }),
    edit && typeof edit.old === "string" ? h("pre", { class: "diff old", text: edit.old }) : null,
    edit && typeof edit.new === "string" ? h("pre", { class: "diff new", text: edit.new }) : null)));
}

function outcomeLine(meta) {
  const parts = [];
  const decision = meta.decision || null;
  if (decision && decision.decision === "discard") {
    parts.push(pill("Discarded: the model is unchanged", "warn"));
    if (decision.by === "policy" || decision.by === "timeout") parts.push(h("span", { class: "muted", text: `(by ${decision.by})` }));
    else if (decision.by) parts.push(h("span", { class: "muted", text: `by ${decision.by}` }));
  } else if (meta.mode === "automate") parts.push(meta.committed ? pill("Committed", "good") : pill("Rolled back: the model is unchanged", "bad"));
  else if (meta.mode === "collect") parts.push(pill(meta.ok ? "Read-only run" : "Read-only run failed", meta.ok ? "muted" : "bad"));
  if (decision && decision.decision === "keep" && decision.by && decision.by !== "policy") parts.push(pill("kept by " + decision.by, "good"));
  if (meta.timed_out) parts.push(pill("Timed out", "bad"));
  if (typeof meta.duration_ms === "number") parts.push(h("span", { class: "muted", text: `ran in ${(meta.duration_ms / 1000).toFixed(meta.duration_ms < 10000 ? 2 : 0)} s` }));
  return h("div", { class: "outcome" }, parts);
}

function errorView(error) {
  const where = error.line ? ` at line ${error.line}` : "";
  return h("div", { class: "error-box" },
    h("div", { class: "error-title" }, h("strong", { text: error.type || "Error" }), where, ": ", error.message || ""),
    error.traceback ? h("details", {}, h("summary", { text: "Traceback" }), h("pre", { class: "plain-text", text: error.traceback })) : null);
}

function failuresView(failures, sessionId = null) {
  return h("div", { class: "failures" },
    h("div", { class: "section-title", text: `Host reported ${failures.length} warning${failures.length === 1 ? "" : "s"} or error${failures.length === 1 ? "" : "s"}` }),
    h("ul", {}, failures.map((f) => h("li", {},
      pill(f.severity || "warning", f.severity === "error" ? "bad" : "warn"), " ",
      f.element_ids && f.element_ids.length  // scene_toggle.js makes it select its elements in the 3D view
        ? h("span", { class: "finding-link", dataset: { elementIds: f.element_ids.join(" ") }, text: f.message || "" })
        : f.message || JSON.stringify(f),
      f.element_ids && f.element_ids.length ? [" ", showElementsButton(sessionId, f.element_ids)] : null))));
}

function changesView(meta, sessionId = null) {
  const changes = meta.changes || {};
  const counts = ["added", "modified", "deleted"].map((k) => [k, (changes[k] || []).length]).filter(([, n]) => n);
  return h("div", { class: "changes" },
    h("div", { class: "section-head" }, h("span", { class: "section-title", text: "Change report" }),
      counts.map(([k, n]) => pill(`${n} ${k}`, k === "deleted" ? "bad" : k === "added" ? "good" : "info"))),
    meta.change_report ? h("pre", { class: "plain-text change-report", text: meta.change_report })
      : h("div", { class: "muted", text: counts.length ? "" : "No elements changed." }),
    changedElementsRow(sessionId, changes));
}

// Before → after: modified elements grouped by what changed, then old and new values element by element.
const KIND_WORDS = {
  placement: "moved", rebased: "placement re-based onto a moved host (position unchanged)", shape: "shape changed", openings: "openings or fillings changed", type: "type changed",
  container: "container changed", attributes: "attributes changed", properties: "property values changed",
  material: "material changed", relationships: "other relationships changed",
  followed: "geometry followed (placed relative to, or cut by, something that changed)",
  linked: "linked data changed", other: "changed through linked data",
};
const STATUS_WORDS = { modified: "modified", added: "added", deleted: "deleted (last values)" };

function classesText(classes) {
  const entries = Object.entries(classes || {}).sort((a, b) => b[1] - a[1]);
  return entries.map(([cls, n]) => `${n} ${cls}`).join(", ");
}

function groupLabel(group) {
  const classes = Object.entries(group.classes || {});
  if (classes.length === 1) return `${group.count} ${classes[0][0]}`;
  return `${group.count} elements (${classesText(group.classes)})`;
}

function keyText(key) {
  const [kind, name] = key.includes(":") ? key.split(/:(.*)/s) : ["", key];
  return kind === "property" || kind === "quantity" ? name : (name || key);
}

export function diffView(details, validation, sessionId = null) {
  const box = h("div", { class: "change-diff" });
  const head = h("div", { class: "section-head" }, h("span", { class: "section-title", text: "Before → after" }));
  if (validation) {
    const n = validation.introduced || 0;
    head.append(pill(n ? `validation: ${n} new finding${n === 1 ? "" : "s"}` : "validation: no new errors",
      n ? (validation.mode === "block" ? "bad" : "warn") : "good"));
  }
  box.append(head);
  if (!details) return box;
  const groups = details.groups || [];
  if (groups.length) {
    box.append(h("ul", { class: "diff-groups" }, groups.map((g) => h("li", { dataset: { kinds: g.kinds.join(" ") } },
      h("strong", { text: groupLabel(g) }), ": ", g.kinds.map((k) => KIND_WORDS[k] || k).join(" and "),
      g.via && g.via.length ? ` (${g.via.join(", ")})` : ""))));
  }
  const elements = details.elements || [];
  if (details.error) box.append(h("div", { class: "note warn", text: "Values could not be worked out: " + details.error }));
  if (elements.length) {
    const rows = [];
    for (const element of elements) {
      const unchanged = "(no listed value changed)";
      const changes = element.changes && element.changes.length ? element.changes
        : [{ key: (element.kinds || []).map((k) => KIND_WORDS[k] || k).join(", "), old: unchanged, new: unchanged }];
      const label = [element.name, element.tag && element.tag !== element.name ? `mark ${element.tag}` : null].filter(Boolean).join(", ");
      changes.forEach((change, index) => rows.push(h("tr", { dataset: { elementId: String(element.id), status: element.status } },
        index === 0 ? h("th", { scope: "row", rowspan: String(changes.length), class: "diff-element" },
          h("span", { class: "diff-id", text: `#${element.id} ${element.class || ""}` }),
          label ? h("span", { class: "diff-name", text: label }) : null,
          h("span", { class: `diff-status ${element.status}`, text: STATUS_WORDS[element.status] || element.status }),
          element.status !== "deleted" ? showElementsButton(sessionId, [element.id]) : null) : null,
        h("td", { class: "diff-key", text: keyText(change.key) }),
        h("td", { class: "diff-old", text: change.old === null || change.old === undefined ? "—" : change.old }),
        h("td", { class: "diff-new", text: change.new === null || change.new === undefined ? "—" : change.new }))));
    }
    box.append(h("div", { class: "diff-scroll" }, h("table", { class: "diff-table" },
      h("thead", {}, h("tr", {}, ["Element", "What", "Before", "After"].map((t) => h("th", { scope: "col", text: t })))),
      h("tbody", {}, rows))));
  }
  const counts = details.counts || {};
  for (const status of ["modified", "added", "deleted"]) {
    const beyond = (counts[status] || 0) - elements.filter((e) => e.status === status).length;
    if (beyond > 0) box.append(h("div", { class: "muted diff-more", text: `… and ${beyond} more ${status} element${beyond === 1 ? "" : "s"} (counted above, values not listed)` }));
  }
  return box;
}

function imageView(sessionId, image) {
  if (image.error) return h("div", { class: "note warn", text: "The view image could not be captured: " + image.error });
  const src = `/api/sessions/${encodeURIComponent(sessionId)}/images/${encodeURIComponent(image.image_id)}`;
  return h("figure", { class: "view-image" },
    zoomableImage(src, `View ${image.view || ""}`, image.width, image.height),
    h("figcaption", { class: "muted", text: `${image.view || "View"} · ${image.width}×${image.height} · click to enlarge` }),
    image.undrawn ? h("div", { class: "note warn undrawn",
                               text: `${image.undrawn} element(s) of this view could not be drawn.` }) : null);
}

export function approvalView(sessionId, meta, onDecided, toolCallId = null) {
  const status = h("span", { class: "muted" });
  const comment = h("input", { class: "approval-comment", type: "text", placeholder: "Comment for the model (optional)", "aria-label": "Comment" });
  const decide = async (decision) => {
    for (const b of buttons) b.disabled = true;
    comment.disabled = true;
    status.textContent = "Sending…";
    const body = { tool_call_id: meta.tool_call_id, decision };
    if (comment.value.trim()) body.comment = comment.value.trim();
    try {
      await api("POST", `/api/sessions/${encodeURIComponent(sessionId)}/approval`, body);
      status.textContent = decision === "keep" ? "Keeping…" : "Discarding…";
      box.dataset.decision = decision;
      if (onDecided) onDecided(decision);
    } catch (error) {
      status.textContent = error.message;
      for (const b of buttons) b.disabled = false;
      comment.disabled = false;
    }
  };
  const buttons = [
    h("button", { class: "primary", type: "button", text: "Keep", onclick: () => decide("keep") }),
    h("button", { class: "danger", type: "button", text: "Discard", onclick: () => decide("discard") }),
  ];
  const minutes = meta.timeout_s ? Math.round(meta.timeout_s / 60) : null;
  const box = h("div", { class: "approval", dataset: { toolCallId: meta.tool_call_id || "" } },
    h("div", { class: "section-title", text: "The script ran; its changes are held until you decide." }),
    meta.failures && meta.failures.length ? failuresView(meta.failures, sessionId) : null,
    meta.change_report || meta.changes ? changesView(meta, sessionId) : null,
    meta.change_details || meta.validation ? diffView(meta.change_details, meta.validation, sessionId) : null,
    meta.image && meta.image.image_id ? imageView(sessionId, meta.image) : null,
    meta.stdout ? h("details", {}, h("summary", { text: "Output" }), outputView(meta.stdout, "Output")) : null,
    comment,
    h("div", { class: "actions" }, buttons, status,
      minutes ? h("span", { class: "muted", text: `Undecided after ${minutes} min counts as discard.` }) : null));
  const scene = sceneToggle(sessionId, meta.tool_call_id || toolCallId, meta, box, { held: true });
  if (scene) box.insertBefore(scene, box.querySelector(":scope > details, :scope > .approval-comment"));
  return box;
}
