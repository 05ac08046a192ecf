// Coordination in the chat page: the conversation's findings (what the checks after its automations found that
// the scripts introduced: schema, model rules, IDS, the session's rule set), each with its elements; a click on
// one shows the image captured after the automation that introduced it. A BCF archive's open topics can be
// uploaded as the next message's task, and the conversation downloaded as BCF (its topics answered, or its
// findings). The current conversation is the chat page's (the address's #session=ID, else localStorage).

import { ApiError, api } from "./api.js";
import { clear, h, pill } from "./dom.js";

const REMEMBERED = "nexus.session";
const SEVERITY_CLASS = { error: "danger", warning: "warn", info: "info" };

// The conversation the chat page shows: in the address (#session=ID), else the one it remembers.
function current() {
  const match = /(?:^#|&)session=([0-9a-f]+)/.exec(location.hash);
  return match ? match[1] : localStorage.getItem(REMEMBERED);
}
const sessionPath = (id, rest) => `/api/sessions/${encodeURIComponent(id)}${rest}`;

function elementLabel(element) {
  const name = (element.name || "").trim();
  return `${element.ifc_class}${name ? ` '${name}'` : ""} · ${element.global_id || "#" + element.step_id}`;
}

function findingItem(finding, sessionId, preview) {
  const show = () => {
    clear(preview);
    if (!finding.image_id) {
      preview.append(h("p", { class: "muted", text: finding.check_skill
        ? `Found by the check skill ${finding.check_skill}, which captures no image.`
        : "No image was captured after this automation." }));
      return;
    }
    preview.append(h("img", { class: "finding-image", alt: finding.title,
      src: sessionPath(sessionId, `/images/${encodeURIComponent(finding.image_id)}`) }));
  };
  return h("li", { class: "finding-item", dataset: { severity: finding.severity } },
    h("div", {}, pill(finding.severity, SEVERITY_CLASS[finding.severity] || "muted"), " ",
      h("strong", { text: finding.title }), " ",
      h("span", { class: "muted", text: `${finding.rule}${finding.committed ? "" : " · not committed"}` })),
    finding.description ? h("div", { class: "muted", text: finding.description }) : null,
    h("ul", { class: "finding-elements" }, finding.elements.map((e) => h("li", {},
      h("button", { type: "button", class: "link-button finding-element", text: elementLabel(e),
        onclick: show })))));
}

async function uploadBcf(sessionId, file, status) {
  status.textContent = `Reading ${file.name}…`;
  const response = await fetch(sessionPath(sessionId, "/bcf"), {
    method: "POST", credentials: "same-origin", body: file,
    headers: { "X-Requested-With": "nexus", "Content-Type": "application/octet-stream" } });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, data.error || response.statusText);
  const found = data.topics.filter((t) => t.elements > 0).length;
  status.textContent = `${data.topics.length} open topic(s) from ${file.name} (BCF ${data.version}), ` +
    `${found} resolved to elements: they are part of your next message's task.`;
}

export function mountCoordination(panel) {
  if (!panel) return;
  const list = h("ul", { class: "finding-list" });
  const preview = h("div", { class: "finding-preview" });
  const status = h("p", { class: "muted coordination-status", role: "status" });
  const input = h("input", { type: "file", accept: ".bcf,.bcfzip", class: "bcf-file", "aria-label": "BCF archive" });
  const version = h("select", { "aria-label": "BCF version" },
    h("option", { value: "2.1", text: "BCF 2.1" }), h("option", { value: "3.0", text: "BCF 3.0" }));
  const download = h("a", { class: "ghost link-button bcf-download", text: "Download BCF" });
  const refresh = async () => {
    const id = current();
    clear(list);
    clear(preview);
    if (!id) {
      status.textContent = "Start a conversation first.";
      return;
    }
    download.href = sessionPath(id, `/bcf?version=${version.value}`);
    try {
      const { findings } = await api("GET", sessionPath(id, "/findings"));
      status.textContent = findings.length ? `${findings.length} finding(s)` : "No findings in this conversation.";
      findings.forEach((f) => list.append(findingItem(f, id, preview)));
    } catch (error) {
      status.textContent = error.message;
    }
  };
  input.addEventListener("change", async () => {
    const id = current();
    if (!id || !input.files.length) return;
    try {
      await uploadBcf(id, input.files[0], status);
    } catch (error) {
      status.textContent = error.message;
    }
    input.value = "";
  });
  version.addEventListener("change", refresh);
  panel.addEventListener("toggle", () => { if (panel.open) refresh(); });
  panel.append(h("div", { class: "coordination-body" },
    h("div", { class: "coordination-actions" },
      h("label", { class: "ghost link-button" }, "Upload BCF issues… ", input), " ", version, " ", download),
    status, list, preview));
}

mountCoordination(document.getElementById("coordination"));
