// The admin console: sessions with transcripts, the audit log of dispatched scripts, hosts and
// capability providers, usage and cost, tokens and per-user policy. All data from /api/admin/...

import { api } from "./api.js";
import { clear, codeBlock, copyButton, formatCost, formatNumber, formatTime, h, pill, zoomableImage } from "./dom.js";
import { renderTranscript, shortModel } from "./conversation.js";
import { stackedBars } from "./charts.js";
import { batchesTab } from "./batches.js";
import { foldersTab } from "./folders.js";
import { skillsTab } from "./skills.js";
import { activityPill, activityText, releaseButton } from "./host_activity.js";

const $ = (id) => document.getElementById(id);
const TABS = ["sessions", "audit", "hosts", "usage", "findings", "tokens", "evaluations", "skills", "batches", "folders"];
const POLICIES = ["auto", "ask", "readonly"];
const STATUS_KIND = { running: "info", error: "bad", cancelled: "warn", idle: "muted" };

// A table from column specs: {title, value(row) -> Node|string, num?}.
function table(node, columns, rows, { onClick, empty = "Nothing yet.", key } = {}) {
  clear(node);
  node.append(h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.num ? "num" : "", text: c.title })))));
  const body = h("tbody");
  if (!rows.length) body.append(h("tr", {}, h("td", { colspan: columns.length, class: "muted", text: empty })));
  for (const row of rows) {
    const tr = h("tr", { class: onClick ? "clickable" : "", dataset: key ? { key: key(row) } : undefined },
      columns.map((c) => h("td", { class: c.num ? "num" : c.cls || "" }, c.value(row))));
    if (onClick) tr.addEventListener("click", () => {
      for (const other of body.querySelectorAll("tr.selected")) other.classList.remove("selected");
      tr.classList.add("selected");
      onClick(row);
    });
    body.append(tr);
  }
  node.append(body);
}

const short = (id) => (id ? String(id).slice(0, 8) : "—");
const query = (params) => {
  const set = Object.entries(params).filter(([, v]) => v);
  return set.length ? "?" + new URLSearchParams(set).toString() : "";
};
const totalTokens = (u) => (u.uncached_input || 0) + (u.cache_read || 0) + (u.cache_write || 0) + (u.output || 0);

class AdminConsole {
  constructor() {
    this.tab = "sessions";
    this.loaded = new Set();
  }

  start() {
    for (const button of document.querySelectorAll("[data-tab]")) {
      button.addEventListener("click", () => this.show(button.dataset.tab));
    }
    $("refresh").addEventListener("click", () => {
      this.loaded.clear();
      this.show(this.tab);
    });
    $("audit-search").addEventListener("submit", (event) => {
      event.preventDefault();
      this.loadAudit().catch((error) => this.notice(error.message));
    });
    $("sessions-search").addEventListener("submit", (event) => {
      event.preventDefault();
      this.loadSessions().catch((error) => this.notice(error.message));
    });
    $("usage-metric").addEventListener("change", () => this.drawCharts());
    $("findings-metric").addEventListener("change", () => this.drawFindings());
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.createToken();
    });
    const wanted = /tab=(\w+)/.exec(location.hash);
    this.show(wanted && TABS.includes(wanted[1]) ? wanted[1] : "sessions").then(() => (document.body.dataset.ready = "1"));
  }

  async show(tab) {
    this.tab = tab;
    history.replaceState(null, "", "#tab=" + tab);
    for (const button of document.querySelectorAll("[data-tab]")) button.setAttribute("aria-selected", String(button.dataset.tab === tab));
    for (const name of TABS) $("tab-" + name).hidden = name !== tab;
    if (this.loaded.has(tab)) return;
    this.loaded.add(tab);
    try {
      await { sessions: () => this.loadSessions(), audit: () => this.loadAudit(), hosts: () => this.loadHosts(),
        usage: () => this.loadUsage(), findings: () => this.loadFindings(), tokens: () => this.loadTokens(), evaluations: () => this.loadEvaluations(),
        skills: () => skillsTab($("skills-panel")), batches: () => batchesTab($("batches-panel")),
        folders: () => foldersTab($("folders-panel")) }[tab]();
      $("admin-notice").hidden = true;
    } catch (error) {
      this.loaded.delete(tab);
      this.notice(error.message);
    }
  }

  notice(message) {
    $("admin-notice").textContent = message;
    $("admin-notice").hidden = false;
  }

  // ---- sessions ----
  async loadSessions() {
    const filters = { q: $("sessions-q").value.trim(), user: $("sessions-user").value.trim(), status: $("sessions-status").value };
    const { sessions } = await api("GET", "/api/admin/sessions" + query(filters));
    const filtered = Object.values(filters).some(Boolean);
    $("sessions-count").textContent = filtered ? `${sessions.length} match${sessions.length === 1 ? "" : "es"}` : `${sessions.length} most recent`;
    table($("sessions-table"), [
      { title: "Updated", value: (s) => formatTime(s.updated) },
      { title: "User", value: (s) => s.user_name },
      { title: "Host", value: (s) => h("span", { class: "mono", text: short(s.host_id) }) },
      { title: "Model", value: (s) => shortModel(s.model) || "—" },
      { title: "Entries", num: true, value: (s) => formatNumber(s.entries) },
      { title: "Status", value: (s) => pill(s.status, STATUS_KIND[s.status] || "") },
      { title: "Cost", num: true, value: (s) => formatCost(s.cost) },
    ], sessions, { onClick: (s) => this.openSession(s.id), key: (s) => s.id, empty: "No sessions yet." });
  }

  async openSession(id) {
    const detail = $("session-detail");
    detail.hidden = false;
    clear(detail).append(h("div", { class: "muted", text: "Loading…" }));
    const s = await api("GET", `/api/admin/sessions/${encodeURIComponent(id)}`);
    const turns = s.transcript.filter((e) => e.role === "assistant").length;
    const usage = s.usage || {};
    const audit = h("table", { class: "data" });
    const code = h("div", { class: "code-view", hidden: true });
    const conversation = h("div", { class: "conversation-view" });
    clear(detail).append(
      h("div", { class: "panel-head" }, h("h2", { text: "Session " + short(s.id) }), pill(s.status, STATUS_KIND[s.status] || ""),
        h("span", { class: "spacer" }), h("button", { class: "ghost small", type: "button", text: "Close", onclick: () => (detail.hidden = true) })),
      h("dl", { class: "tool-args" },
        h("dt", { text: "Session" }), h("dd", { text: s.id }),
        h("dt", { text: "User" }), h("dd", { text: s.user_name }),
        h("dt", { text: "Host" }), h("dd", { text: s.host_id || "—" }),
        h("dt", { text: "Model" }), h("dd", { text: s.model || "—" }),
        h("dt", { text: "Turns" }), h("dd", { text: `${turns} model turns, ${s.transcript.length} entries` }),
        h("dt", { text: "Tokens" }), h("dd", { text: `${formatNumber(totalTokens(usage))} (${formatNumber(usage.cache_read)} cached input)` }),
        h("dt", { text: "Cost" }), h("dd", { text: formatCost(usage.cost) })),
      ...this.imagesView(s),
      h("h2", { text: "Scripts dispatched in this session" }),
      h("div", { class: "table-wrap" }, audit),
      code,
      h("h2", { text: "Transcript" }),
      conversation);
    this.auditTable(audit, s.audit || [], (row) => this.showCode(row, code));
    await renderTranscript(conversation, s.transcript, { sessionId: s.id, fetchResults: false, outcomes: s.outcomes || {} });
    detail.scrollIntoView({ block: "start" });
  }

  // ---- audit ----
  async loadAudit() {
    const filters = { sha256: $("audit-sha").value.trim().toLowerCase(), q: $("audit-q").value.trim(),
      user: $("audit-user").value.trim(), session_id: $("audit-session").value.trim(), kind: $("audit-kind").value };
    const { audit } = await api("GET", "/api/admin/audit" + query(filters));
    const filtered = Object.values(filters).some(Boolean);
    $("audit-count").textContent = filtered ? `${audit.length} match${audit.length === 1 ? "" : "es"}` : `${audit.length} most recent`;
    this.auditTable($("audit-table"), audit, (row) => this.showCode(row, $("audit-detail")));
    $("audit-detail").hidden = true;
  }

  auditTable(node, rows, onClick) {
    table(node, [
      { title: "Time", value: (a) => formatTime(a.ts) },
      { title: "Session", value: (a) => h("span", { class: "mono", text: short(a.session_id) }) },
      { title: "User", value: (a) => a.user_name || "—" },
      { title: "Kind", value: (a) => pill(a.kind, a.kind === "epilogue" ? "info" : "muted") },
      { title: "Bytes", num: true, value: (a) => formatNumber(a.bytes) },
      { title: "SHA-256", cls: "hash", value: (a) => a.sha256 },
      { title: "Host", value: (a) => a.host_app || "—" },
      { title: "Capability", value: (a) => a.capability_version || "—" },
    ], rows, { onClick, key: (a) => String(a.id), empty: "No scripts dispatched." });
  }

  showCode(row, target) {
    target.hidden = false;
    clear(target).append(
      h("div", { class: "panel-head" }, h("h2", { text: `${row.kind === "epilogue" ? "Epilogue" : "Model script"} · ${formatNumber(row.bytes)} bytes` }),
        h("span", { class: "spacer" }), copyButton(() => row.code, "Copy code")),
      h("div", { class: "hash", text: "sha256 " + row.sha256 }),
      h("div", { class: "muted", text: `${formatTime(row.ts)} · session ${row.session_id || "—"} · call ${row.tool_call_id || "—"} · ${row.host_app || "?"} ${row.capability_version || ""}` }),
      codeBlock(row.code));
    target.scrollIntoView({ block: "nearest" });
  }

  // ---- hosts ----
  async loadHosts() {
    const { hosts, providers } = await api("GET", "/api/admin/hosts");
    table($("hosts-table"), [
      { title: "Host", value: (x) => h("span", { class: "mono", text: x.host_id }) },
      { title: "User", value: (x) => x.user },
      { title: "App", value: (x) => x.host_app },
      { title: "Document", value: (x) => (x.document && x.document.title) || "—" },
      { title: "Host version", value: (x) => x.host_version || "—" },
      { title: "Runtime", value: (x) => x.runtime_version || "—" },
      { title: "Python", value: (x) => x.python_version || "—" },
      { title: "Connected", value: (x) => formatTime(x.connected_at) },
      { title: "Last seen", value: (x) => formatTime(x.last_seen) },
      { title: "State", value: (x) => this.activityCell(x) },
      { title: "Doctor", value: (x) => this.doctorCell(x) },
    ], hosts, { empty: "No host is connected." });
    const checks = hosts.flatMap((x) => (x.doctor ? x.doctor.checks.map((c) => ({ host_id: x.host_id, ...c })) : []));
    table($("doctor-table"), [
      { title: "Host", value: (c) => h("span", { class: "mono", text: c.host_id }) },
      { title: "Check", value: (c) => c.title },
      { title: "Result", value: (c) => pill(c.ok ? "pass" : "fail", c.ok ? "good" : "bad") },
      { title: "Detail", value: (c) => c.detail },
      { title: "Fallback", value: (c) => (c.ok ? "" : c.fallback) },
    ], checks, { empty: "No Doctor report yet." });
    table($("providers-table"), [
      { title: "Host app", value: (p) => p.host_app },
      { title: "Capability version", value: (p) => h("span", { class: "mono", text: p.capability_version }) },
    ], providers, { empty: "No capability providers registered." });
  }

  activityCell(host) {
    const activity = host.activity || { state: "idle" };
    const cell = h("span", { class: "inline-form" }, activityPill(activity));
    if (activity.state !== "idle") cell.append(h("span", { class: "muted", text: activityText(activity) }));
    if (activity.session_id) cell.append(h("span", { class: "mono", text: activity.session_id }));
    if (activity.state === "held") {
      cell.append(releaseButton(host, () => this.loadHosts(), (text) => this.notice(text)));
    }
    return cell;
  }

  doctorCell(host) {
    const report = host.doctor;
    const summary = report ? `${report.checks.filter((c) => c.ok).length}/${report.checks.length} passed` : "—";
    const button = h("button", { class: "ghost small", type: "button", text: "Run" });
    button.addEventListener("click", async () => {
      button.disabled = true;
      button.textContent = "running…";
      try {
        await api("POST", `/api/admin/hosts/${encodeURIComponent(host.host_id)}/doctor`);
        await this.loadHosts();
      } catch (error) {
        this.notice(error.message);
        button.disabled = false;
        button.textContent = "Run";
      }
    });
    return h("span", { class: "inline-form" }, h("span", { text: summary }), button);
  }

    // ---- evaluations (reports of nexus eval) ----
  async loadEvaluations() {
    const { configured, setting, evaluations } = await api("GET", "/api/admin/evaluations");
    if (!configured) $("evaluations-note").textContent = `No results folder: start the server with ${setting}=DIR, where nexus eval --out wrote its reports.`;
    const rate = (v) => (v === null || v === undefined ? "n/a" : `${(v * 100).toFixed(1)}%`);
    const rows = evaluations.flatMap((e) => Object.entries(e.summary.models || {}).map(([model, m]) => ({ e, model, m })));
    table($("evaluations-table"), [
      { title: "Written", value: (r) => r.e.created || "" },
      { title: "Report", value: (r) => r.e.name },
      { title: "Model", value: (r) => r.model },
      { title: "Pass rate", value: (r) => rate(r.m.pass_rate), num: true },
      { title: "Passed", value: (r) => String(r.m.passed), num: true },
      { title: "Failed", value: (r) => String(r.m.failed), num: true },
      { title: "Errors", value: (r) => String(r.m.errors), num: true },
      { title: "Tokens", value: (r) => formatNumber(r.m.input_tokens + r.m.output_tokens), num: true },
      { title: "Cost", value: (r) => formatCost(r.m.cost), num: true },
      { title: "Time (s)", value: (r) => r.m.seconds.toFixed(1), num: true },
    ], rows, { empty: "No evaluation reports.", onClick: (r) => this.showEvaluation(r.e, r.model) });
    if (rows.length) this.showEvaluation(rows[0].e, rows[0].model);
  }

  showEvaluation(evaluation, model) {
    $("evaluation-title").textContent = `Task runs: ${evaluation.name} · ${model}`;
    table($("evaluation-runs"), [
      { title: "Task", value: (r) => r.task },
      { title: "Result", value: (r) => pill(r.status.toUpperCase(), { pass: "good", fail: "bad", error: "warn" }[r.status] || "muted") },
      { title: "Turns", value: (r) => String(r.turns), num: true },
      { title: "Tool calls", value: (r) => String(r.tool_calls), num: true },
      { title: "Fixes", value: (r) => String(r.fixes), num: true },
      { title: "Cost", value: (r) => formatCost(r.cost), num: true },
      { title: "Time (s)", value: (r) => Number(r.seconds).toFixed(1), num: true },
      { title: "Detail", value: (r) => r.detail || "" },
    ], evaluation.runs.filter((r) => r.model === model), { empty: "No runs." });
  }

  // ---- usage ----
  async loadUsage() {
    const { usage } = await api("GET", "/api/admin/usage");
    this.usage = usage;
    this.drawCharts();
    const group = (keyOf) => {
      const out = new Map();
      for (const row of usage) {
        const key = keyOf(row);
        const sum = out.get(key) || { key, tokens: 0, output: 0, cache_read: 0, cost: 0, turns: 0, unknown: false };
        sum.tokens += totalTokens(row);
        sum.output += row.output || 0;
        sum.cache_read += row.cache_read || 0;
        sum.turns += row.turns || 0;
        if (row.cost === null || row.cost === undefined) sum.unknown = true;
        else sum.cost += row.cost;
        out.set(key, sum);
      }
      return [...out.values()].sort((a, b) => b.cost - a.cost || b.tokens - a.tokens);
    };
    const all = group(() => "all")[0] || { tokens: 0, output: 0, cost: 0, turns: 0, cache_read: 0 };
    const stat = (value, label) => h("div", { class: "stat" }, h("div", { class: "value", text: value }), h("div", { class: "label", text: label }));
    clear($("usage-stats")).append(
      stat(formatCost(all.cost), "estimated cost" + (all.unknown ? " (some models unpriced)" : "")),
      stat(formatNumber(all.tokens), "tokens"),
      stat(formatNumber(all.cache_read), "cached input tokens"),
      stat(formatNumber(all.turns), "runs recorded"));
    const sumColumns = (title) => [
      { title, value: (r) => r.key },
      { title: "Tokens", num: true, value: (r) => formatNumber(r.tokens) },
      { title: "Output", num: true, value: (r) => formatNumber(r.output) },
      { title: "Cost", num: true, value: (r) => formatCost(r.cost) + (r.unknown ? "*" : "") },
    ];
    table($("usage-users"), sumColumns("User"), group((r) => r.user_name), { empty: "No usage yet." });
    table($("usage-models"), sumColumns("Model"), group((r) => shortModel(r.model)), { empty: "No usage yet." });
    table($("usage-days"), [
      { title: "Day", value: (r) => r.day },
      { title: "User", value: (r) => r.user_name },
      { title: "Model", value: (r) => shortModel(r.model) },
      { title: "Input", num: true, value: (r) => formatNumber((r.uncached_input || 0) + (r.cache_write || 0)) },
      { title: "Cached", num: true, value: (r) => formatNumber(r.cache_read) },
      { title: "Output", num: true, value: (r) => formatNumber(r.output) },
      { title: "Runs", num: true, value: (r) => formatNumber(r.turns) },
      { title: "Cost", num: true, value: (r) => formatCost(r.cost) },
    ], usage, { empty: "No usage yet." });
  }

  // ---- findings per model over time ----
  async loadFindings() {
    const { by_day: byDay, runs } = await api("GET", "/api/admin/findings");
    this.findingsByDay = byDay;
    this.drawFindings();
    const models = new Set(byDay.map((r) => r.model));
    const latest = new Map();
    for (const r of byDay) latest.set(r.model, r); // oldest day first: the last one kept is the newest
    const open = [...latest.values()].reduce((sum, r) => sum + r.errors, 0);
    const stat = (value, label) => h("div", { class: "stat" }, h("div", { class: "value", text: value }), h("div", { class: "label", text: label }));
    clear($("findings-stats")).append(
      stat(formatNumber(models.size), "models checked"),
      stat(formatNumber(runs.length), "check runs listed"),
      stat(formatNumber(open), "errors at each model's latest day"));
    table($("finding-runs"), [
      { title: "When", value: (r) => formatTime(r.ts) },
      { title: "Model", value: (r) => r.model },
      { title: "Check", value: (r) => r.check_name },
      { title: "Run by", value: (r) => `${r.source}${r.user_name ? " · " + r.user_name : ""}` },
      { title: "Errors", num: true, value: (r) => formatNumber(r.errors) },
      { title: "Warnings", num: true, value: (r) => formatNumber(r.warnings) },
      { title: "Infos", num: true, value: (r) => formatNumber(r.infos) },
    ], runs, { empty: "No check has run yet." });
  }

  drawFindings() {
    const metric = $("findings-metric").value;
    const value = (r) => (metric === "all" ? r.errors + r.warnings + r.infos : r[metric]);
    const rows = (this.findingsByDay || []).map((r) => ({ day: r.day, key: r.model, value: value(r) }));
    const label = metric === "all" ? "findings" : metric;
    clear($("chart-findings")).append(stackedBars(rows, { label: `${label} by model`, format: (v) => (Number.isInteger(v) ? formatNumber(v) : v.toFixed(2).replace(/0$/, "")),
      empty: "No check has run yet." }));
  }

  // ---- tokens and users ----
  async loadTokens() {
    const [{ tokens }, { users }] = await Promise.all([api("GET", "/api/admin/tokens"), api("GET", "/api/admin/users")]);
    table($("tokens-table"), [
      { title: "Token id", value: (t) => h("span", { class: "mono", text: t.id }) },
      { title: "User", value: (t) => t.user_name },
      { title: "Role", value: (t) => (t.is_admin ? pill("admin", "info") : t.scope === "host" ? pill("host only", "muted") : "user") },
      { title: "Created", value: (t) => formatTime(t.created) },
      { title: "State", value: (t) => (t.revoked ? pill("revoked " + formatTime(t.revoked), "bad") : pill("active", "good")) },
      { title: "", value: (t) => (t.revoked ? "" : h("span", { class: "inline-form" }, t.is_admin ? this.demoteButton(t) : "", this.revokeButton(t))) },
    ], [...tokens].reverse(), { key: (t) => t.id, empty: "No tokens." });
    table($("users-table"), [
      { title: "User", value: (u) => u.name },
      { title: "Role", value: (u) => (u.is_admin ? pill("admin", "info") : "user") },
      { title: "Policy", value: (u) => this.policySelect(u) },
    ], users, { key: (u) => u.name, empty: "No users." });
  }

  revokeButton(token) {
    const button = h("button", { class: "small", type: "button", text: "Revoke" });
    button.addEventListener("click", async () => {
      if (button.dataset.armed !== "1") {
        button.dataset.armed = "1";
        button.textContent = "Confirm revoke";
        button.className = "small danger";
        setTimeout(() => {
          if (button.isConnected && button.dataset.armed === "1") {
            button.dataset.armed = "";
            button.textContent = "Revoke";
            button.className = "small";
          }
        }, 4000);
        return;
      }
      button.disabled = true;
      try {
        await api("DELETE", `/api/admin/tokens/${encodeURIComponent(token.id)}`);
        await this.loadTokens();
      } catch (error) {
        this.notice(error.message);
        button.disabled = false;
      }
    });
    return button;
  }

  demoteButton(token) {
    const button = h("button", { class: "small", type: "button", text: "Remove admin", title: "This token keeps working, without admin rights" });
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await api("PUT", `/api/admin/tokens/${encodeURIComponent(token.id)}`, { admin: false });
        await this.loadTokens();
      } catch (error) {
        this.notice(error.message);
        button.disabled = false;
      }
    });
    return button;
  }

  // The session's rendered views, from the admin image route (any user's session).
  imagesView(s) {
    if (!s.images || !s.images.length) return [];
    return [h("h2", { text: `Views captured in this session (${s.images.length})` }),
      h("div", { class: "admin-images" }, s.images.map((image) => h("figure", { class: "view-image" },
        zoomableImage(`/api/admin/sessions/${encodeURIComponent(s.id)}/images/${encodeURIComponent(image.image_id)}`,
          `View captured ${formatTime(image.created)}`),
        h("figcaption", { class: "muted", text: formatTime(image.created) }))))];
  }

  drawCharts() {
    const metric = $("usage-metric").value;
    const value = { cost: (r) => r.cost || 0, tokens: totalTokens, turns: (r) => r.turns || 0 }[metric];
    const format = metric === "cost" ? formatCost : (v) => formatNumber(Math.round(v));
    const rows = (keyOf) => (this.usage || []).map((r) => ({ day: r.day, key: keyOf(r), value: value(r) }));
    clear($("chart-users")).append(stackedBars(rows((r) => r.user_name || "?"), { label: `${metric} by user`, format }));
    clear($("chart-models")).append(stackedBars(rows((r) => shortModel(r.model) || "?"), { label: `${metric} by model`, format }));
  }

  policySelect(user) {
    const select = h("select", { "aria-label": `Policy of ${user.name}` },
      POLICIES.map((p) => h("option", { value: p, text: p, selected: p === user.policy })));
    const state = h("span", { class: "muted" });
    select.addEventListener("change", async () => {
      state.textContent = "saving…";
      try {
        await api("PUT", `/api/admin/users/${encodeURIComponent(user.name)}/policy`, { policy: select.value });
        state.textContent = "saved";
      } catch (error) {
        state.textContent = error.message;
      }
    });
    return h("span", { class: "inline-form" }, select, state);
  }

  async createToken() {
    const user = $("token-user").value.trim();
    if (!user) return;
    const out = $("token-created");
    try {
      const created = await api("POST", "/api/admin/tokens", { user, admin: $("token-admin").checked, host: $("token-host").checked });
      out.hidden = false;
      const kind = created.admin ? "admin token" : created.scope === "host" ? "host-only token" : "token";
      clear(out).append(h("div", { class: "secret" },
        h("span", { text: `New ${kind} for ${created.user} (shown once; copy it now):` }),
        h("code", { id: "new-token", text: created.token }), copyButton(() => created.token)));
      $("token-user").value = "";
      $("token-admin").checked = false;
      $("token-host").checked = false;
      await this.loadTokens();
    } catch (error) {
      this.notice(error.message);
    }
  }
}

new AdminConsole().start();
