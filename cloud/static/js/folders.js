// The admin console's Folders tab: project folders under the batch root (projects/<name>/) and the teams
// each is shared with, read-only or read-write; share one with a team, change or withdraw a grant.
// Each user's own folder (<root>/<user>/) needs no grant. Data from /api/admin/folders.

import { api } from "./api.js";
import { clear, formatTime, h, pill } from "./dom.js";

const ACCESS = ["read", "read-write"];

function accessSelect(value, label) {
  return h("select", { "aria-label": label },
    ACCESS.map((a) => h("option", { value: a, text: a === "read" ? "read-only" : "read-write", selected: a === value })));
}

function grantRow(folder, grant, refresh, status) {
  const access = accessSelect(grant.access, `Access of team ${grant.team} to projects/${folder.name}`);
  access.addEventListener("change", () => act(status, refresh, () =>
    api("PUT", `/api/admin/folders/${encodeURIComponent(folder.name)}`, { team: grant.team, access: access.value })));
  const withdraw = h("button", { type: "button", class: "ghost", text: "Withdraw" });
  withdraw.addEventListener("click", () => act(status, refresh, () =>
    api("DELETE", `/api/admin/folders/${encodeURIComponent(folder.name)}/teams/${encodeURIComponent(grant.team)}`)));
  return h("li", { class: "folder-grant", dataset: { team: grant.team } },
    h("strong", { text: grant.team }), " ", access, " ",
    h("span", { class: "muted", text: `by ${grant.granted_by}, ${formatTime(grant.granted)}` }), " ", withdraw);
}

async function act(status, refresh, request) {
  status.textContent = "";
  status.className = "folders-status";
  try {
    await request();
    await refresh();
  } catch (err) {
    status.textContent = err.message;
    status.className = "folders-status note warn slim";
  }
}

export async function foldersTab(panel) {
  const data = await api("GET", "/api/admin/folders");
  clear(panel);
  const status = h("div", { class: "folders-status", role: "status" });
  const refresh = () => foldersTab(panel);
  const name = h("input", { name: "folder-name", placeholder: "project folder, e.g. tower-a", required: true,
    spellcheck: "false", autocomplete: "off", "aria-label": "Project folder" });
  const team = h("input", { name: "folder-team", placeholder: "team", required: true, spellcheck: "false",
    autocomplete: "off", "aria-label": "Team" });
  const access = accessSelect("read", "Access");
  const form = h("form", { id: "folder-form", class: "inline-form" }, name, team, access,
    h("button", { class: "primary", type: "submit", text: "Share" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    act(status, refresh, () => api("PUT", `/api/admin/folders/${encodeURIComponent(name.value.trim())}`,
      { team: team.value.trim(), access: access.value }));
  });
  const rows = h("tbody");
  if (!data.folders.length) rows.append(h("tr", {}, h("td", { colspan: 2, class: "muted", text: "No project folders yet." })));
  for (const folder of data.folders) {
    rows.append(h("tr", { dataset: { folder: folder.name } },
      h("td", {}, h("code", { text: folder.path }), folder.exists ? null : [" ", pill("not on disk", "warn")]),
      h("td", {}, folder.grants.length
        ? h("ul", { class: "folder-grants" }, folder.grants.map((g) => grantRow(folder, g, refresh, status)))
        : h("span", { class: "muted", text: "shared with no team" }))));
  }
  panel.append(h("h2", { text: "Project folders" }),
    h("p", { class: "muted", text: data.configured
      ? "Each user's batches use their own folder under the batch root; a project folder (projects/<name>/) is " +
        "shared with a team read-only (its models are inputs) or read-write (results may be written there too)."
      : `Batches are not configured: set ${data.setting} to the folder holding the models. Grants are kept meanwhile.` }),
    form, status,
    h("div", { class: "table-wrap" }, h("table", { class: "data", id: "folders-table" },
      h("thead", {}, h("tr", {}, h("th", { text: "Folder" }), h("th", { text: "Teams" }))), rows)));
}
