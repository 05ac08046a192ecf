// The chat page's reference models (a federated session): a pill in the header naming them, and a small form to
// attach models from the person's folders (paths relative to their folder, or projects/<name>/...). Scripts see
// them read-only as refs["<name>"]; 3D views draw them greyed behind the working model.

import { api } from "./api.js";
import { h } from "./dom.js";

export class ReferencesControl {
  // `after`: the header node it follows; `session()`: the session id, creating the session when there is none.
  constructor(after, session, notice) {
    this.session = session;
    this.notice = notice;
    this.pill = h("span", { id: "refs-indicator", class: "pill info refs-indicator", role: "note", tabindex: "0", hidden: true });
    this.input = h("input", { id: "refs-paths", type: "text", spellcheck: "false", autocomplete: "off",
      placeholder: "MEP.ifc, projects/tower/STR.ifc", "aria-label": "Reference models (paths in your folders)" });
    this.attach = h("button", { id: "refs-attach", type: "button", class: "ghost", text: "Attach",
      onclick: () => this.submit() });
    this.form = h("span", { id: "refs-form", class: "refs-form", hidden: true }, this.input, this.attach);
    this.toggle = h("button", { id: "refs-toggle", type: "button", class: "ghost", text: "References…",
      title: "Attach reference models (read-only) to this conversation", "aria-expanded": "false",
      onclick: () => this.open(this.form.hidden) });
    after.after(this.pill, this.toggle, this.form);
  }

  open(show) {
    this.form.hidden = !show;
    this.toggle.setAttribute("aria-expanded", String(show));
    if (show) this.input.focus();
  }

  async submit() {
    const refs = this.input.value.split(",").map((p) => p.trim()).filter(Boolean);
    try {
      const id = await this.session();
      const answer = await api("PUT", `/api/sessions/${encodeURIComponent(id)}/refs`, { refs });
      this.show(answer.refs);
      this.open(false);
    } catch (error) {
      this.notice(error.message);
    }
  }

  show(refs) {
    const list = refs || [];
    this.pill.hidden = !list.length;
    this.pill.textContent = list.length ? `References: ${list.map((r) => r.name).join(", ")}` : "";
    const full = list.length ? `Reference models, read-only: ${list.map((r) => r.path).join(", ")}` : "";
    this.pill.title = full;
    this.pill.setAttribute("aria-label", full);
    this.input.value = list.map((r) => r.path).join(", ");
  }
}
