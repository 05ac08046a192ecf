// Rendering a conversation: live runs from stream chunks, and past turns from the neutral transcript.

import { api } from "./api.js";
import { formatCost, formatNumber, h, markdown, throttled } from "./dom.js";
import { ToolCard } from "./tool_card.js";

const SUMMARY_HEAD = "[Earlier conversation, summarised to fit the context window]";

export function shortModel(spec) {
  if (!spec) return "";
  if (spec.startsWith("scripted:")) return "scripted:" + spec.slice(9).split(/[\\/]/).pop();
  return spec;
}

export function userBubble(text) {
  return h("div", { class: "turn user" }, h("div", { class: "bubble", text }));
}

function budgetNote(text) {
  return h("div", { class: "note warn budget", text });
}

function compactionMarker(text, summary) {
  return h("div", { class: "marker compaction" },
    h("span", { text: text || "Earlier conversation summarised to fit the context window" }),
    summary ? h("details", {}, h("summary", { text: "Summary" }), h("pre", { class: "plain-text", text: summary })) : null);
}

// What the host told the model about the open document when the person's message was sent.
function hostContext(text) {
  return h("details", { class: "host-context" },
    h("summary", { text: "Host context sent with this message" }), h("pre", { class: "plain-text", text }));
}

class ThinkingBlock {
  constructor(open) {
    this.text = "";
    this.body = h("div", { class: "thinking-text" });
    this.label = h("summary", { text: open ? "Thinking…" : "Thinking" });
    this.el = h("details", { class: "thinking" }, this.label, this.body);
    this.el.open = open;
  }
  add(piece) {
    this.text += piece;
    this.body.textContent = this.text;
  }
  close() {
    this.label.textContent = "Thinking";
    this.el.open = false;
  }
}

class MessageBlock {
  constructor() {
    this.text = "";
    this.el = h("div", { class: "message markdown" });
    this.render = throttled(() => this.el.replaceChildren(markdown(this.text)));
  }
  add(piece) {
    this.text += piece;
    this.render();
  }
  set(text) {
    this.text = text;
    this.el.replaceChildren(markdown(text));
  }
}

// The assistant's side of one run. Live chunks go to `handle`; past entries to `addEntry`.
export class RunView {
  constructor({ sessionId, hostLabel, busyHint, onApproval, onApprovalRequest } = {}) {
    this.sessionId = sessionId;
    this.hostLabel = hostLabel;
    this.busyHint = busyHint;
    this.onApproval = onApproval; // (decision, tool_call_id): the person decided on the page
    this.onApprovalRequest = onApprovalRequest; // (card, meta): a change now waits for the person
    this.body = h("div", { class: "run-body" });
    this.footer = h("div", { class: "run-footer" });
    this.modelLabel = h("span", { class: "model-label muted" });
    this.el = h("div", { class: "turn assistant", dataset: { state: "live" } },
      h("div", { class: "avatar", "aria-hidden": "true", text: "N" }),
      h("div", { class: "run" }, this.modelLabel, this.body, this.footer));
    this.cards = new Map();
    this.turnNodes = [];
    this.current = null; // the block the next Thinking/Message piece extends
    this.finished = false;
  }

  add(node) {
    this.body.append(node);
    this.turnNodes.push(node);
    return node;
  }

  block(kind) {
    if (this.current && this.current.kind === kind) return this.current.block;
    if (this.current && this.current.kind === "thinking") this.current.block.close();
    const block = kind === "thinking" ? new ThinkingBlock(true) : new MessageBlock();
    this.add(block.el);
    this.current = { kind, block };
    return block;
  }

  card(id, name) {
    let card = this.cards.get(id);
    if (!card) {
      if (this.current && this.current.kind === "thinking") this.current.block.close();
      card = new ToolCard({ sessionId: this.sessionId, toolCallId: id, name, hostLabel: this.hostLabel, busyHint: this.busyHint });
      this.cards.set(id, card);
      this.add(card.el);
      this.current = null;
    }
    return card;
  }

  handle(chunk) {
    const meta = chunk.metadata || {};
    switch (chunk.type) {
      case "Thinking":
        this.block("thinking").add(chunk.content);
        break;
      case "Message":
        this.block("message").add(chunk.content);
        break;
      case "ToolInputDelta":
        this.card(meta.tool_call_id, meta.name).appendInput(chunk.content);
        break;
      case "ToolCall":
        this.card(meta.tool_call_id, meta.name).called(meta.input, { startedAt: meta.started_at });
        break;
      case "Metadata":
        this.metadata(chunk, meta);
        break;
      case "AgenticUsage":
        this.usage(chunk.content, meta);
        break;
      case "Error":
        this.error(chunk.content, meta);
        break;
      case "Complete":
        this.finish("complete");
        break;
      default:
        break; // a chunk type this page does not know: nothing to show
    }
  }

  metadata(chunk, meta) {
    switch (meta.kind) {
      case "model":
        this.modelLabel.textContent = shortModel(meta.model || chunk.content);
        this.modelLabel.title = meta.model || chunk.content;
        break;
      case "tool_result": {
        const card = this.card(meta.tool_call_id, meta.name);
        card.showResult(meta);
        this.newTurn();
        break;
      }
      case "approval_request": {
        const card = this.card(meta.tool_call_id, meta.name);
        card.showApproval(meta, this.onApproval ? (decision) => this.onApproval(decision, meta.tool_call_id) : null);
        if (this.onApprovalRequest) this.onApprovalRequest(card, meta);
        break;
      }
      case "compaction":
        this.body.append(compactionMarker(chunk.content, meta.summary));
        this.newTurn();
        break;
      case "budget":
        this.body.append(budgetNote(chunk.content));
        break;
      case "reset_turn":
        this.resetTurn(chunk.content);
        break;
      default:
        break;
    }
  }

  newTurn() {
    if (this.current && this.current.kind === "thinking") this.current.block.close();
    this.turnNodes = [];
    this.current = null;
  }

  // A retried model call: what it streamed so far is void, and the retry streams it again.
  resetTurn(reason) {
    for (const node of this.turnNodes) node.remove();
    for (const [id, card] of this.cards) {
      if (!card.el.isConnected) {
        card.stopWait();
        this.cards.delete(id);
      }
    }
    this.turnNodes = [];
    this.current = null;
    this.body.append(h("div", { class: "marker retry", text: reason || "Retrying the model's turn" }));
  }

  usage(line, meta) {
    const tokens = (meta.uncached_input || 0) + (meta.cache_read || 0) + (meta.cache_write || 0);
    const text = meta && (tokens || meta.output)
      ? `${formatNumber(tokens)} tokens in (${formatNumber(meta.cache_read)} cached) · ${formatNumber(meta.output)} out · ${meta.cost === null || meta.cost === undefined ? "cost unknown" : formatCost(meta.cost) + " est."}`
      : line;
    this.footer.append(h("div", { class: "usage", title: line, text }));
  }

  error(message, meta) {
    for (const card of this.cards.values()) card.cancelled();
    if (meta && meta.cancelled) {
      this.body.append(h("div", { class: "marker cancelled", text: message || "Run cancelled." }));
      this.finish("cancelled");
      return;
    }
    const detail = [meta && meta.vendor, meta && meta.status].filter(Boolean).join(" · ");
    this.body.append(h("div", { class: "error-box run-error", role: "alert" },
      h("strong", { text: "Error" }), " ", message, detail ? h("div", { class: "muted", text: detail }) : null,
      meta && meta.retry_after ? h("div", { class: "muted", text: `Retry after ${meta.retry_after} s.` }) : null));
    this.finish("error");
  }

  finish(state) {
    if (this.current && this.current.kind === "thinking") this.current.block.close();
    for (const card of this.cards.values()) card.stopWait();
    this.finished = true;
    this.el.dataset.state = state;
  }

  // How a past run ended (the transcript's run_end entry): its marker and usage line, as they were live.
  addRunEnd(entry) {
    if (entry.outcome === "cancelled") {
      this.body.append(h("div", { class: "marker cancelled", text: entry.text || "Run cancelled." }));
    } else if (entry.outcome === "error") {
      const meta = entry.detail || {};
      const detail = [meta.vendor, meta.status].filter(Boolean).join(" · ");
      this.body.append(h("div", { class: "error-box run-error" },
        h("strong", { text: "Error" }), " ", entry.text || "", detail ? h("div", { class: "muted", text: detail }) : null));
    }
    if (entry.usage_line || (entry.usage && Object.keys(entry.usage).length)) this.usage(entry.usage_line, entry.usage || {});
    this.finish(entry.outcome === "complete" ? "done" : entry.outcome);
  }

  // ---- past turns (the neutral transcript) ----
  addAssistantEntry(entry) {
    if (entry.model && !this.modelLabel.textContent) {
      this.modelLabel.textContent = shortModel(entry.model);
      this.modelLabel.title = entry.model;
    }
    for (const part of entry.content || []) {
      if (part.type === "thinking" && part.text) {
        const block = new ThinkingBlock(false);
        block.add(part.text);
        this.body.append(block.el);
      } else if (part.type === "text" && part.text) {
        const block = new MessageBlock();
        block.set(part.text);
        this.body.append(block.el);
      } else if (part.type === "tool_call") {
        const card = this.card(part.id, part.name);
        card.called(part.input || {}, { live: false });
      }
    }
    this.current = null;
  }

  async addToolEntry(entry, fetchResults, outcomes = {}) {
    const pending = [];
    for (const part of entry.content || []) {
      if (part.type !== "tool_result") continue;
      const card = this.card(part.tool_call_id, part.name);
      if (!fetchResults) {
        card.showTranscriptResult(part, outcomes[part.tool_call_id]);
        continue;
      }
      pending.push(api("GET", `/api/sessions/${encodeURIComponent(this.sessionId)}/results/${encodeURIComponent(part.tool_call_id)}`)
        .then((full) => {
          card.showResult(full);
          // A spent budget's marker, where the live stream showed it (after the card).
          if (full.person && full.person.marker) card.el.after(budgetNote(full.person.marker));
        })
        .catch(() => card.showTranscriptResult(part)));
    }
    await Promise.all(pending);
  }
}

// Render the neutral transcript into `container`. Returns the RunViews created (one per run).
// `outcomes` (the admin console, without the full results): each tool call's real outcome {key, label}.
export async function renderTranscript(container, entries, { sessionId, fetchResults = true, hostLabel, busyHint, outcomes = {} } = {}) {
  let run = null;
  const loads = [];
  const runView = () => {
    if (!run) {
      run = new RunView({ sessionId, hostLabel, busyHint });
      run.finish("done");
      container.append(run.el);
    }
    return run;
  };
  for (const entry of entries) {
    if (entry.role === "user") {
      if (isPersonMessage(entry)) run = null; // a note the loop added mid-run belongs to the same run
      const notes = [];
      for (const part of entry.content || []) {
        if (part.type !== "text") continue;
        if (part.kind === "host_context") notes.push(hostContext(part.text));
        else if (part.kind) continue; // other notes the server added for the model
        else if (part.text.startsWith(SUMMARY_HEAD)) container.append(compactionMarker(null, part.text.slice(SUMMARY_HEAD.length).trim()));
        else container.append(userBubble(part.text));
      }
      container.append(...notes);
    } else if (entry.role === "run_end") {
      runView().addRunEnd(entry);
    } else if (entry.role === "marker") {
      // A marker the person saw mid-run (a retried model turn), where it was.
      if (entry.kind === "retry") runView().body.append(h("div", { class: "marker retry", text: entry.text || "Retrying the model's turn" }));
    } else if (entry.role === "compaction") {
      container.append(compactionMarker(`Earlier conversation summarised (${entry.replaced || "?"} entries replaced)`, entry.summary));
    } else if (entry.role === "assistant" || entry.role === "tool") {
      if (entry.role === "assistant") runView().addAssistantEntry(entry);
      else loads.push(runView().addToolEntry(entry, fetchResults, outcomes));
    }
  }
  await Promise.all(loads);
}

// Entries of a run still in progress come back from its replay; show only what came before it.
export function beforeRunInProgress(entries) {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (entry.role === "user" && isPersonMessage(entry)) return entries.slice(0, i + 1);
  }
  return entries;
}

function isPersonMessage(entry) {
  // Notes the loop adds mid-run (e.g. a tool call cut off at the output limit) carry a `kind`.
  return (entry.content || []).some((p) => p.type === "text" && !p.kind);
}
