// The team library in the chat page: "Save as skill" under a kept automation, and the team's skills
// (versions, runs, success rate, last failure) in the conversations drawer. Admin console: skillsTab.

import { api } from "./api.js";
import { clear, formatTime, h, pill } from "./dom.js";

export const SKILLS_CHANGED = "nexus:skills-changed";

function rate(skill) {
  if (!skill.run_count) return "never run";
  return `${Math.round(skill.success_rate * 100)}% of ${skill.run_count} runs`;
}

function skillItem(skill, { admin = false } = {}) {
  const failure = skill.last_failure;
  return h("li", { class: "skill-item", dataset: { skill: skill.name } },
    h("div", { class: "skill-head" },
      h("strong", { text: skill.name }), " ",
      pill(`v${skill.version}`, "muted"), " ",
      pill(skill.portable ? `${skill.host_app} · portable` : skill.host_app, "info"), " ",
      h("span", { class: "skill-rate muted", text: rate(skill) })),
    h("div", { class: "skill-description", text: skill.description }),
    h("div", { class: "muted", text: "Parameters: " + (skill.parameters.map((p) => `${p.name} (${p.type})`).join(", ") || "none") }),
    failure ? h("div", { class: "note warn slim", text: `Last failure ${formatTime(failure.ts)} (v${failure.version}, ${failure.user_name}): ${failure.error || "not committed"}` }) : null,
    h("details", { class: "skill-versions" },
      h("summary", { text: `${skill.versions.length} version(s) · by ${skill.created_by}${admin ? " · team " + skill.team : ""}` }),
      h("ul", {}, skill.versions.map((v) => h("li", {
        text: `v${v.version} · ${v.sha256.slice(0, 12)} · ${v.created_by} · ${formatTime(v.created)}` +
          (v.provenance && v.provenance.model ? ` · from ${v.provenance.model}` : ""),
      })))));
}

export async function renderSkills(list, query = "") {
  const data = await api("GET", "/api/skills" + (query ? "?q=" + encodeURIComponent(query) : ""));
  clear(list);
  if (!data.skills.length) list.append(h("li", { class: "muted", text: "No skills yet: save a kept automation with “Save as skill”." }));
  for (const skill of data.skills) list.append(skillItem(skill));
  return data;
}

// The team's skills in the conversations drawer, refreshed whenever one is saved.
export function mountSkillsList(drawer) {
  if (!drawer) return;
  const list = h("ul", { id: "skill-list", class: "skill-list" });
  const search = h("input", { type: "search", placeholder: "Search skills", "aria-label": "Search skills" });
  const team = h("span", { class: "muted" });
  const refresh = () => renderSkills(list, search.value.trim()).then((data) => { team.textContent = ` · team ${data.team}`; })
    .catch((err) => { clear(list).append(h("li", { class: "note warn slim", text: err.message })); });
  search.addEventListener("input", refresh);
  drawer.append(h("section", { class: "skills-section", "aria-label": "Team skills" },
    h("h2", { text: "Team skills" }, team), search, list));
  document.addEventListener(SKILLS_CHANGED, refresh);
  refresh();
}

// "Save as skill" under a committed (and, under ask, kept) automation: the proposed parameters are the
// script's literals; the person ticks those to keep, names and describes the skill.
export function saveAsSkill(sessionId, toolCallId, meta) {
  const kept = meta && meta.mode === "automate" && meta.committed && !(meta.decision && meta.decision.decision === "discard");
  if (!kept || !sessionId || !toolCallId) return null;
  const box = h("div", { class: "save-skill" });
  const open = h("button", { type: "button", class: "ghost save-skill-open", text: "Save as skill" });
  open.addEventListener("click", async () => {
    open.disabled = true;
    try {
      const proposal = await api("POST", "/api/skills/proposal", { session_id: sessionId, tool_call_id: toolCallId });
      box.append(skillForm(sessionId, toolCallId, proposal, box));
      open.hidden = true;
    } catch (err) {
      box.append(h("div", { class: "note warn slim", text: err.message }));
      open.disabled = false;
    }
  });
  box.append(open);
  return box;
}

function skillForm(sessionId, toolCallId, proposal, box) {
  const name = h("input", { type: "text", name: "skill-name", maxlength: "64", placeholder: "Name, e.g. Door marks by storey", required: true });
  const description = h("textarea", { name: "skill-description", rows: "2", placeholder: "What it does, in a sentence", required: true });
  const checks = proposal.parameters.map((p) => ({
    p, box: h("input", { type: "checkbox", name: "skill-parameter", value: p.name, checked: p.type === "string" }),
    note: h("input", { type: "text", placeholder: "what it means (optional)", "aria-label": `Description of ${p.name}` }),
  }));
  const status = h("div", { class: "save-skill-status", role: "status" });
  const save = h("button", { type: "button", class: "primary", text: "Save skill" });
  save.addEventListener("click", async () => {
    save.disabled = true;
    try {
      const saved = await api("POST", "/api/skills", {
        session_id: sessionId, tool_call_id: toolCallId, name: name.value.trim(), description: description.value.trim(),
        parameters: checks.filter((c) => c.box.checked).map((c) => ({ name: c.p.name, description: c.note.value.trim() })),
      });
      clear(box).append(h("div", { class: "note slim", text: `Saved as skill “${saved.name}” v${saved.version} (sha256 ${saved.sha256.slice(0, 12)}) for your team ${saved.team}.` }));
      document.dispatchEvent(new CustomEvent(SKILLS_CHANGED));
    } catch (err) {
      status.textContent = err.message;
      status.className = "save-skill-status note warn slim";
      save.disabled = false;
    }
  });
  return h("div", { class: "save-skill-form" },
    h("label", { class: "field" }, h("span", { text: "Name" }), name),
    h("label", { class: "field" }, h("span", { text: "Description" }), description),
    h("fieldset", {}, h("legend", { text: checks.length ? "Parameters (values a person may change)" : "No literals to offer as parameters" }),
      checks.map((c) => h("label", { class: "skill-parameter" }, c.box, " ",
        h("code", { text: c.p.name }), ` = ${JSON.stringify(c.p.default)} (${c.p.type}) `, c.note))),
    status, save);
}

// The admin console's skills tab: every team and its members, and the admin's own team's library.
export async function skillsTab(panel) {
  clear(panel);
  const teams = await api("GET", "/api/admin/teams");
  const list = h("ul", { class: "skill-list" });
  panel.append(h("h2", { text: "Teams" }),
    teams.teams.length ? h("ul", {}, teams.teams.map((t) => h("li", {},
      h("strong", { text: t.team }), ": " + t.members.map((m) => m.user + (m.can_edit ? "" : " (read-only)")).join(", "))))
      : h("p", { class: "muted", text: "No teams defined: every user shares one library. PUT /api/admin/teams/TEAM/members/USER adds one." }),
    h("h2", { text: "Skills" }), list);
  const data = await api("GET", "/api/skills");
  clear(list);
  for (const skill of data.skills) list.append(skillItem({ ...skill, team: data.team }, { admin: true }));
  if (!data.skills.length) list.append(h("li", { class: "muted", text: "No skills in this team's library yet." }));
}
