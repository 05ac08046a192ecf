// The chat page: pick a host and a model, start or resume a conversation, stream runs live, cancel, and
// pick a run back up after a reload or a dropped connection.

import { api, ApiError, openStream, readEvents } from "./api.js";
import { clear, formatCost, formatTime, h, pill } from "./dom.js";
import { RunView, beforeRunInProgress, renderTranscript, shortModel, userBubble } from "./conversation.js";
import { mountSkillsList } from "./skills.js";
import { ApprovalAttention, offerNotifications } from "./attention.js";
import { showHostActivity } from "./host_activity.js";
import { ReferencesControl } from "./references.js";
import { showInHost } from "./show_in_host.js";

const REMEMBERED = "nexus.session";
const HOST_POLL_MS = 5000;
const REATTACH_TRIES = 5;
const POLICY_RANK = { auto: 0, ask: 1, readonly: 2 };

const $ = (id) => document.getElementById(id);
const sessionPath = (id, rest = "") => `/api/sessions/${encodeURIComponent(id)}${rest}`;

class ChatPage {
  constructor() {
    this.conversation = $("conversation");
    this.prompt = $("prompt");
    this.send = $("send");
    this.cancel = $("cancel");
    this.hostSelect = $("host");
    this.modelInput = $("model");
    this.modelInput.addEventListener("input", () => this.updateScriptedNote());
    this.policySelect = $("policy");
    this.validationSelect = validationControl(this.policySelect);
    this.idsIndicator = idsIndicator(this.validationSelect);
    this.references = new ReferencesControl(this.idsIndicator, () => this.ensureSession(), (text) => this.showNotice(text));
    this.notice = $("notice");
    this.sessionId = null;
    this.session = null;
    this.hosts = [];
    this.running = false;
    this.controller = null;
    this.wantedHost = new URLSearchParams(location.search).get("host");
    this.userPolicy = "auto";
    this.defaultModel = null;
    this.follow = true; // the conversation follows the run unless the person scrolled up
    this.approvalActions = null; // the Keep/Discard row waiting for the person: kept in view until decided
    this.attention = new ApprovalAttention();
    // Content that grows by itself (an image loading, a highlighted script) keeps the followed end in view.
    this.resizes = new ResizeObserver(() => this.keepInView());
  }

  async start() {
    this.send.addEventListener("click", () => this.sendMessage());
    this.cancel.addEventListener("click", () => this.cancelRun());
    this.prompt.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.sendMessage();
      }
    });
    this.prompt.addEventListener("input", () => this.autosize());
    fitPlaceholder(this.prompt);
    // Only the person's scrolling changes `follow`: content growing below never fires a scroll event.
    this.conversation.addEventListener("scroll", () => { this.follow = this.nearBottom(); }, { passive: true });
    this.hostSelect.addEventListener("change", () => this.hostChanged());
    this.policySelect.addEventListener("change", () => this.policyChanged());
    this.validationSelect.addEventListener("change", () => this.validationChanged());
    $("new-session").addEventListener("click", () => this.newConversation());
    $("sessions-toggle").addEventListener("click", () => this.toggleSessions());
    $("sessions-close").addEventListener("click", () => this.toggleSessions(false));
    for (const example of document.querySelectorAll("[data-example]")) {
      example.addEventListener("click", () => this.useExample(example));
    }
    await Promise.all([this.loadMe(), this.loadModels(), this.refreshHosts()]);
    setInterval(() => this.refreshHosts(), HOST_POLL_MS);
    this.refreshRuns();
    setInterval(() => this.refreshRuns(), HOST_POLL_MS);
    const remembered = this.rememberedSession();
    if (remembered) await this.openSession(remembered, { quiet: true });
    else this.showEmpty();
    window.addEventListener("hashchange", () => {
      const id = this.rememberedSession();
      if (id && id !== this.sessionId && !this.running) this.openSession(id);
    });
    document.body.dataset.ready = "1";
  }

  // ---- settings: who, hosts, models, policy ----
  async loadMe() {
    try {
      const me = await api("GET", "/api/me");
      this.userPolicy = me.policy || "auto";
    } catch (error) {
      this.showNotice(error.message);
    }
  }

  async loadModels() {
    const list = $("model-options");
    try {
      // The server's registry decides what is offered (GET /api/models); this page keeps no list of its own.
      const models = await api("GET", "/api/models");
      this.defaultModel = models.default;
      const endpoints = models.openai_compat_endpoints.map((name) => `openai-compat:MODEL@${name}`);
      clear(list).append(...[...models.models, ...endpoints].map((spec) => h("option", { value: spec })));
      if (!this.modelInput.value && models.default) this.modelInput.value = models.default;
      this.updateScriptedNote();
      if (!models.default && !models.configured_vendors.length) {
        this.modelInput.placeholder = "vendor:model (no vendor key configured)";
      }
    } catch (error) {
      this.showNotice(error.message);
    }
  }

  async refreshHosts() {
    let hosts;
    try {
      hosts = (await api("GET", "/api/hosts")).hosts;
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) this.showNotice(error.message);
      return;
    }
    const key = (list) => list.map((x) => x.host_id).join(",");
    const changed = key(hosts) !== key(this.hosts);
    this.hosts = hosts;
    if (!changed && this.hostSelect.options.length) return this.updateHostState();
    const selected = this.hostSelect.value || (this.session && this.session.host_id) || this.wantedHost;
    clear(this.hostSelect);
    if (!hosts.length) this.hostSelect.append(h("option", { value: "", text: "No host connected" }));
    for (const host of hosts) {
      const title = (host.document && host.document.title) || host.host_id;
      this.hostSelect.append(h("option", { value: host.host_id, text: `${host.display_name || host.host_app} · ${title}` }));
    }
    // A session bound to a host that is gone keeps showing it, so the person sees why runs wait.
    if (selected && !hosts.some((x) => x.host_id === selected)) {
      this.hostSelect.append(h("option", { value: selected, text: "Disconnected host" }));
    }
    if (selected) this.hostSelect.value = selected;
    this.updateHostState();
  }

  updateHostState() {
    const id = this.hostSelect.value;
    const connected = this.hosts.some((x) => x.host_id === id);
    $("host-state").className = "dot " + (connected ? "on" : "off");
    $("host-state").title = connected ? "Connected" : "Not connected";
    $("no-host").hidden = this.hosts.length > 0;
    const sessionHost = this.hosts.find((x) => x.host_id === ((this.session && this.session.host_id) || id));
    showInHost(sessionHost ? sessionHost.host_app : null); // the show-elements buttons only where the host can show them
    showHostActivity($("host-activity"), this.hosts.find((x) => x.host_id === id), () => this.refreshHosts(),
                     (text) => this.showNotice(text));
  }

  hostLabel() {
    const host = this.hosts.find((x) => x.host_id === (this.session && this.session.host_id));
    return host ? host.referred_to_as || host.host_app : "the host";
  }

  busyHint() {
    const host = this.hosts.find((x) => x.host_id === (this.session && this.session.host_id));
    return host ? host.busy_hint : null;
  }

  async hostChanged() {
    this.updateHostState();
    if (!this.sessionId || !this.hostSelect.value) return;
    try {
      const answer = await api("PUT", sessionPath(this.sessionId, "/host"), { host_id: this.hostSelect.value });
      this.session.host_id = answer.host_id;
    } catch (error) {
      this.showNotice(error.message);
    }
  }

  async policyChanged() {
    this.updatePolicyNote();
    if (!this.sessionId) return;
    try {
      await api("PUT", sessionPath(this.sessionId, "/policy"), { policy: this.policySelect.value });
      this.session.policy = this.policySelect.value;
    } catch (error) {
      this.showNotice(error.message);
    }
  }

  async validationChanged() {
    if (!this.sessionId) return;
    try {
      await api("PUT", sessionPath(this.sessionId, "/validation"), { validation: this.validationSelect.value });
      this.session.validation = this.validationSelect.value;
    } catch (error) {
      this.showNotice(error.message);
    }
  }

  updateScriptedNote() {
    $("scripted-note").hidden = !this.modelInput.value.trim().startsWith("scripted:");
  }

  updatePolicyNote() {
    const stricter = POLICY_RANK[this.userPolicy] > POLICY_RANK[this.policySelect.value];
    $("policy-note").hidden = !stricter;
    $("policy-note").textContent = stricter ? `Your administrator set “${this.userPolicy}” for you; the stricter policy applies.` : "";
  }

  // A landing example: its prompt, and under the scripted demo (the model field names one of the examples'
  // scripts) that example's own script, so the replay does what the example says.
  useExample(example) {
    this.prompt.value = example.dataset.example;
    const script = example.dataset.script;
    const spec = this.modelInput.value.trim();
    const match = /^(scripted:.*[\\/])([^\\/]+\.json)$/.exec(spec);
    const scripts = [...document.querySelectorAll("[data-script]")].map((node) => node.dataset.script);
    if (script && match && scripts.includes(match[2])) {
      this.modelInput.value = match[1] + script;
      this.updateScriptedNote();
    }
    this.autosize();
    this.prompt.focus();
  }

  // ---- sessions ----
  rememberedSession() {
    const match = /(?:^#|&)session=([0-9a-f]+)/.exec(location.hash);
    if (match) return match[1];
    return this.wantedHost ? null : localStorage.getItem(REMEMBERED);
  }

  remember(id) {
    const url = new URL(location.href);
    url.hash = id ? "session=" + id : "";
    history.replaceState(null, "", url.pathname + url.search + url.hash);
    if (id) localStorage.setItem(REMEMBERED, id);
    else localStorage.removeItem(REMEMBERED);
  }

  showEmpty() {
    clear(this.conversation).append($("empty-template").content.cloneNode(true));
    for (const example of this.conversation.querySelectorAll("[data-example]")) {
      example.addEventListener("click", () => this.useExample(example));
    }
    $("session-cost").textContent = "";
  }

  newConversation() {
    if (this.running) return;
    this.sessionId = null;
    this.session = null;
    this.remember(null);
    this.policySelect.value = "auto";
    this.validationSelect.value = "warn";
    showIds(this.idsIndicator, null);
    this.references.show([]);
    this.updatePolicyNote();
    this.showEmpty();
    this.toggleSessions(false);
    this.prompt.focus();
  }

  async openSession(id, { quiet = false } = {}) {
    let session;
    try {
      session = await api("GET", sessionPath(id));
    } catch (error) {
      if (!quiet) this.showNotice(error.message);
      this.remember(null);
      this.showEmpty();
      return;
    }
    if (this.wantedHost && session.host_id !== this.wantedHost && !session.running && quiet) {
      this.remember(null);
      this.showEmpty();
      return;
    }
    this.sessionId = id;
    this.session = session;
    this.remember(id);
    if (session.host_id) {
      if (![...this.hostSelect.options].some((o) => o.value === session.host_id)) {
        this.hostSelect.append(h("option", { value: session.host_id, text: "Disconnected host" }));
      }
      this.hostSelect.value = session.host_id;
      this.updateHostState();
    }
    if (session.model) this.modelInput.value = session.model;
    this.updateScriptedNote();
    this.policySelect.value = session.policy || "auto";
    this.validationSelect.value = session.validation || "warn";
    showIds(this.idsIndicator, session.ids);
    this.references.show(session.refs);
    this.updatePolicyNote();
    this.showCost(session.usage);
    clear(this.conversation);
    const history = session.history || session.messages; // the whole history, compaction markers in place
    const entries = session.running ? beforeRunInProgress(history) : history;
    await renderTranscript(this.conversation, entries, { sessionId: id, hostLabel: this.hostLabel(), busyHint: this.busyHint() });
    this.scrollToBottom(true);
    if (session.running) this.reattach(this.newRun(), 0); // runs on; the page is usable meanwhile
  }

  async toggleSessions(open) {
    const drawer = $("sessions");
    const show = open === undefined ? drawer.hidden : open;
    drawer.hidden = !show;
    $("sessions-toggle").setAttribute("aria-expanded", String(show));
    if (!show) return;
    const list = $("session-list");
    clear(list).append(h("li", { class: "muted", text: "Loading…" }));
    try {
      const [{ sessions }, { previews }, { runs }] = await Promise.all([
        api("GET", "/api/sessions"), api("GET", "/api/sessions/previews"), api("GET", "/api/runs")]);
      const live = new Map(runs.map((r) => [r.session_id, r]));
      clear(list);
      if (!sessions.length) list.append(h("li", { class: "muted", text: "No conversations yet." }));
      for (const s of sessions) {
        const item = h("li", { class: s.id === this.sessionId ? "current" : "" },
          h("button", { type: "button", class: "session-item", dataset: { sessionId: s.id } },
            h("span", { class: "session-title", text: previews[s.id] || "(no messages yet)" }),
            h("span", { class: "session-meta muted" },
              formatTime(s.updated), " · ", shortModel(s.model) || "no model", " · ", formatCost(s.cost),
              live.get(s.id)?.awaiting_decision ? pill("waiting for your decision", "warn")
                : live.has(s.id) || s.status === "running" ? pill("running", "info") : null)));
        item.querySelector("button").addEventListener("click", () => {
          this.toggleSessions(false);
          if (!this.running) this.openSession(s.id);
        });
        list.append(item);
      }
    } catch (error) {
      clear(list).append(h("li", { class: "muted", text: error.message }));
    }
  }

  // Runs in progress in any of the person's sessions (any device, any server process): the conversations
  // button shows how many wait for their decision.
  async refreshRuns() {
    try {
      const { runs } = await api("GET", "/api/runs");
      const waiting = runs.filter((r) => r.awaiting_decision).length;
      const toggle = $("sessions-toggle");
      toggle.textContent = waiting ? `☰ ${waiting}` : "☰";
      this.attention.setElsewhere(waiting);
      toggle.dataset.waiting = String(waiting);
      toggle.title = waiting ? `Conversations · ${waiting} waiting for your decision` :
        runs.length ? `Conversations · ${runs.length} running` : "Conversations";
    } catch (error) {
      // the next poll tries again; the page itself reports a lost connection
    }
  }

  showCost(usage) {
    $("session-cost").textContent = usage && usage.cost ? `${formatCost(usage.cost)} so far` : "";
  }

  // ---- runs ----
  newRun() {
    const run = new RunView({
      sessionId: this.sessionId, hostLabel: this.hostLabel(), busyHint: this.busyHint(),
      onApproval: (decision, toolCallId) => this.approvalSettled(toolCallId),
      onApprovalRequest: (card, meta) => this.approvalRequested(card, meta),
    });
    this.conversation.append(run.el);
    this.resizes.observe(run.el);
    return run;
  }

  keepInView() {
    if (!this.running) return;
    if (this.approvalActions) this.approvalActions.scrollIntoView({ block: "end" });
    else if (this.follow) this.scrollToBottom(true);
  }

  async sendMessage() {
    const text = this.prompt.value.trim();
    if (!text || this.running) return;
    this.hideNotice();
    if (this.policySelect.value === "ask" || this.userPolicy === "ask") offerNotifications();
    const model = this.modelInput.value.trim() || null;
    this.setRunning(true);
    try {
      if (!this.sessionId) await this.createSession(model);
      const body = { text };
      if (model && model !== this.session.model) body.model = model;
      this.controller = new AbortController();
      const response = await openStream("POST", sessionPath(this.sessionId, "/messages"), body, this.controller.signal);
      if (model) this.session.model = model;
      this.prompt.value = "";
      this.autosize();
      if (this.conversation.querySelector(".empty")) clear(this.conversation);
      this.conversation.append(userBubble(text));
      const run = this.newRun();
      this.scrollToBottom(true);
      await this.pump(response, run, 0);
    } catch (error) {
      this.showNotice(error.message);
      this.setRunning(false);
    }
  }

  async ensureSession() {
    if (!this.sessionId) await this.createSession(this.modelInput.value.trim() || null);
    return this.sessionId;
  }

  async createSession(model) {
    const body = {};
    if (this.hostSelect.value) body.host_id = this.hostSelect.value;
    if (model) body.model = model;
    const created = await api("POST", "/api/sessions", body);
    this.sessionId = created.session_id;
    this.session = { session_id: created.session_id, host_id: created.host_id, model: created.model, policy: "auto" };
    this.remember(this.sessionId);
    if (this.policySelect.value !== "auto") {
      await api("PUT", sessionPath(this.sessionId, "/policy"), { policy: this.policySelect.value });
      this.session.policy = this.policySelect.value;
    }
    if (this.validationSelect.value !== "warn") {
      await api("PUT", sessionPath(this.sessionId, "/validation"), { validation: this.validationSelect.value });
      this.session.validation = this.validationSelect.value;
    }
  }

  // Read a run's stream to its end; if the connection drops first, re-attach where it left off.
  async pump(response, run, received) {
    this.setRunning(true);
    let terminal = false;
    try {
      for await (const frame of readEvents(response)) {
        if (!frame.chunk) continue;
        received = frame.id !== null && !Number.isNaN(frame.id) ? frame.id + 1 : received + 1;
        try {
          run.handle(frame.chunk);
        } catch (error) {
          reportError(error); // a rendering problem must not end the stream (or look like a dropped one)
        }
        if (frame.chunk.type === "Complete" || frame.chunk.type === "Error") terminal = true;
        const meta = frame.chunk.metadata || {};
        if (meta.kind === "tool_result") this.approvalSettled(meta.tool_call_id); // also decided in the host
        // Decided before the chunk was added, never re-checked after: a tall chunk must not stop the follow.
        if (this.follow && !this.approvalActions) this.scrollToBottom(true);
      }
    } catch (error) {
      if (this.controller && this.controller.signal.aborted) return this.runEnded();
    }
    if (!terminal) return this.reattach(run, received);
    this.runEnded();
  }

  async reattach(run, after) {
    this.setRunning(true);
    for (let attempt = 0; attempt < REATTACH_TRIES; attempt++) {
      try {
        this.controller = new AbortController();
        const response = await openStream("GET", sessionPath(this.sessionId, `/stream?after=${after}`), undefined, this.controller.signal);
        this.hideNotice();
        return await this.pump(response, run, after);
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) {
          // The run ended while we were away: its turns are in the transcript now.
          run.el.remove();
          this.setRunning(false);
          return this.openSession(this.sessionId);
        }
        if (error instanceof ApiError) {
          this.showNotice(error.message);
          break;
        }
        this.showNotice("Connection lost; reconnecting…");
        await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
      }
    }
    run.finish("detached");
    this.runEnded();
  }

  // A change waits for the person: its Keep and Discard buttons come into view (even if they had scrolled
  // up), the title says so, and so does a notification where the person allowed them.
  approvalRequested(card, meta) {
    this.approvalActions = card.el.querySelector(".approval .actions") || card.el;
    this.approvalActions.scrollIntoView({ block: "end" }); // and again as its image loads (keepInView)
    this.attention.requested(meta.tool_call_id, this.hostLabel());
  }

  approvalSettled(toolCallId) {
    this.approvalActions = null;
    this.attention.decided(toolCallId);
  }

  async runEnded() {
    this.setRunning(false);
    this.approvalActions = null;
    this.attention.clear();
    try {
      const session = await api("GET", sessionPath(this.sessionId));
      this.session = { ...this.session, ...session, messages: undefined };
      this.showCost(session.usage);
    } catch {
      // the cost line is a nicety; the run itself is already shown
    }
  }

  async cancelRun() {
    if (!this.sessionId || !this.running) return;
    this.cancel.disabled = true;
    this.cancel.textContent = "Cancelling…";
    try {
      await api("POST", sessionPath(this.sessionId, "/cancel"));
    } catch (error) {
      this.showNotice(error.message);
      this.cancel.disabled = false;
      this.cancel.textContent = "Cancel";
    }
  }

  setRunning(running) {
    this.running = running;
    document.body.dataset.running = running ? "1" : "0";
    this.send.hidden = running;
    this.cancel.hidden = !running;
    this.cancel.disabled = false;
    this.cancel.textContent = "Cancel";
    this.hostSelect.disabled = running;
    this.policySelect.disabled = running;
    this.validationSelect.disabled = running;
  }

  // ---- small things ----
  autosize() {
    this.prompt.style.height = "auto";
    this.prompt.style.height = Math.min(this.prompt.scrollHeight, 220) + "px";
  }

  nearBottom() {
    const c = this.conversation;
    return c.scrollHeight - c.scrollTop - c.clientHeight < 120;
  }

  scrollToBottom(force = false) {
    if (force || this.nearBottom()) this.conversation.scrollTop = this.conversation.scrollHeight;
    if (force) this.follow = true;
  }

  showNotice(message) {
    this.notice.textContent = message;
    this.notice.hidden = false;
  }

  hideNotice() {
    this.notice.hidden = true;
  }
}

new ChatPage().start();

// A narrow pane gets the short placeholder (data-placeholder-narrow), so it is never cut off mid-line.
function fitPlaceholder(textarea) {
  const wide = textarea.placeholder;
  const narrow = textarea.dataset.placeholderNarrow || wide;
  const query = window.matchMedia("(max-width: 560px)");
  const apply = () => { textarea.placeholder = query.matches ? narrow : wide; };
  apply();
  query.addEventListener("change", apply);
}
mountSkillsList(document.getElementById("sessions"));

// What the host does when a script leaves the model with new schema or model-rule errors (IFC hosts):
// a control beside the run policy; an administrator's stricter per-user choice wins on the server.
function validationControl(policySelect) {
  const select = h("select", { id: "validation", "aria-label": "Validation" },
    h("option", { value: "warn", text: "Warn about new errors" }),
    h("option", { value: "block", text: "Roll back new errors" }));
  policySelect.closest("label").after(h("label", { class: "field validation-field" },
    h("span", { text: "Validation" }), select));
  return select;
}

// Beside the validation setting: whether the session has an IDS (checked after each automation), named by
// the title in its <info> and its number of specifications; nothing else of the document reaches the page.
const IDS_SHOWN_CHARS = 40;

function idsIndicator(validationSelect) {
  const node = h("span", { id: "ids-indicator", class: "pill info ids-indicator", role: "note", tabindex: "0", hidden: true });
  validationSelect.closest("label").after(node);
  return node;
}

function showIds(node, ids) {
  node.hidden = !ids;
  if (!ids) {
    node.textContent = "";
    node.removeAttribute("title");
    node.removeAttribute("aria-label");
    delete node.dataset.title;
    return;
  }
  const title = ids.title || "untitled IDS";
  const count = ids.specifications === null || ids.specifications === undefined ? "" :
    ` (${ids.specifications} specification${ids.specifications === 1 ? "" : "s"})`;
  const full = `IDS checked after each automation: ${title}${count}`;
  node.textContent = `IDS: ${title.length > IDS_SHOWN_CHARS ? title.slice(0, IDS_SHOWN_CHARS - 1) + "…" : title}`;
  node.title = full;
  node.setAttribute("aria-label", full);
  node.dataset.title = title;
  node.dataset.specifications = String(ids.specifications ?? "");
}
