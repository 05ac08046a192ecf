// A viewer for a script's full output: plain text only (textContent, never HTML), and virtualised so
// that 60,000 lines scroll smoothly: only the lines in view (plus a margin) are in the DOM.

import { copyButton, h } from "./dom.js";

const LINE_PX = 18; // must match .output-lines line-height in nexus.css
const PLAIN_LIMIT = 400; // below this many lines a plain <pre> is simplest
const MARGIN = 60;

export function outputView(text, title = "Output") {
  const lines = text.replace(/\n$/, "").split("\n");
  const count = text ? lines.length : 0;
  const download = h("button", { class: "ghost small", type: "button", text: "Download" });
  download.addEventListener("click", () => {
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    const link = h("a", { href: url, download: "output.txt" });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  });
  const head = h("div", { class: "section-head" },
    h("span", { class: "section-title", text: title }),
    h("span", { class: "muted", text: count ? `${count.toLocaleString("en-US")} line${count === 1 ? "" : "s"}` : "empty" }),
    h("span", { class: "spacer" }),
    count ? copyButton(() => text) : null,
    count ? download : null);
  const body = count <= PLAIN_LIMIT ? plainLines(text) : virtualLines(lines);
  return h("div", { class: "output" }, head, count ? body : h("div", { class: "muted empty-output", text: "(no output)" }));
}

function plainLines(text) {
  const pre = h("pre", { class: "output-lines plain" });
  pre.textContent = text;
  return pre;
}

function virtualLines(lines) {
  const scroller = h("div", { class: "output-lines virtual", tabindex: "0", dataset: { lines: String(lines.length) } });
  const spacer = h("div", { class: "output-spacer" });
  const pre = h("pre", { class: "output-window" });
  const widest = lines.reduce((max, line) => Math.max(max, line.length), 0);
  spacer.style.height = lines.length * LINE_PX + "px";
  spacer.style.width = Math.min(widest, 2000) + 2 + "ch";
  spacer.append(pre);
  scroller.append(spacer);
  let shown = [-1, -1];
  const render = () => {
    const top = scroller.scrollTop;
    const height = scroller.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / LINE_PX) - MARGIN);
    const last = Math.min(lines.length, Math.ceil((top + height) / LINE_PX) + MARGIN);
    if (first === shown[0] && last === shown[1]) return;
    shown = [first, last];
    pre.style.transform = `translateY(${first * LINE_PX}px)`;
    pre.textContent = lines.slice(first, last).join("\n");
  };
  scroller.addEventListener("scroll", () => requestAnimationFrame(render), { passive: true });
  // First paint once attached (clientHeight is 0 before that).
  requestAnimationFrame(render);
  render();
  return scroller;
}
