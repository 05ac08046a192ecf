// Building DOM safely. Everything that came from a model or a host goes in as text nodes; the only
// HTML ever parsed is Markdown and highlighted code, and both pass through DOMPurify first.

/* global DOMPurify, marked, hljs */

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) {
      if (typeof value === "function") node.addEventListener(key.slice(2), value);
    }
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, ...children);
  return node;
}

export function append(node, ...children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

const MARKDOWN_PURIFY = {
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option", "iframe", "object", "embed"],
  FORBID_ATTR: ["style"],
  RETURN_DOM_FRAGMENT: true,
};

let purifyHooked = false;

function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function hookPurify() {
  if (purifyHooked) return;
  purifyHooked = true;
  // Raw HTML inside a model's Markdown is shown as the text it is, never rendered.
  marked.use({ renderer: { html: (token) => escapeHtml(token.text || token.raw || "") } });
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  });
}

// Markdown from a model, as a sanitised DocumentFragment with highlighted code blocks.
export function markdown(text) {
  hookPurify();
  const html = marked.parse(text || "", { gfm: true, breaks: false, async: false });
  const fragment = DOMPurify.sanitize(html, MARKDOWN_PURIFY);
  for (const code of fragment.querySelectorAll("pre > code")) {
    const match = /language-([\w-]+)/.exec(code.className || "");
    const source = code.textContent;
    clear(code).append(highlighted(source, match ? match[1] : "python"));
    code.classList.add("hljs");
  }
  return fragment;
}

// Syntax-highlighted code as a DocumentFragment (highlight.js escapes; DOMPurify keeps only spans).
export function highlighted(source, language = "python") {
  let html;
  try {
    const lang = hljs.getLanguage(language) ? language : "python";
    html = hljs.highlight(source, { language: lang, ignoreIllegals: true }).value;
  } catch {
    return document.createTextNode(source);
  }
  return DOMPurify.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true });
}

export function codeBlock(source, language = "python") {
  const code = h("code", { class: "hljs language-" + language });
  code.append(highlighted(source, language));
  return h("pre", { class: "code" }, code);
}

// Coalesce many updates into one per animation frame.
export function throttled(fn) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fn();
    });
  };
}

export function formatCost(cost) {
  if (cost === null || cost === undefined) return "—";
  if (cost === 0) return "$0";
  return cost < 0.01 ? "$" + cost.toFixed(4) : "$" + cost.toFixed(2);
}

export function formatTime(seconds) {
  if (!seconds) return "—";
  const date = new Date(seconds * 1000);
  const today = new Date();
  const sameDay = date.toDateString() === today.toDateString();
  return sameDay
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" }) + " " +
      date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

export function formatNumber(n) {
  return (n || 0).toLocaleString("en-US");
}

export function pill(text, kind = "") {
  return h("span", { class: "pill " + kind, text });
}

// An image that enlarges to a full-screen overlay on click (Esc or click closes it).
export function zoomableImage(src, alt, width, height) {
  const img = h("img", { src, alt, class: "zoomable", loading: "lazy", width, height });
  img.addEventListener("click", () => openLightbox(src, alt));
  return img;
}

export function openLightbox(src, alt) {
  const close = () => {
    overlay.remove();
    document.removeEventListener("keydown", onKey);
  };
  const onKey = (event) => {
    if (event.key === "Escape") close();
  };
  const overlay = h("div", { class: "lightbox", role: "dialog", "aria-label": alt, onclick: close },
    h("img", { src, alt }), h("button", { class: "lightbox-close", "aria-label": "Close", text: "×" }));
  document.addEventListener("keydown", onKey);
  document.body.append(overlay);
}

export function copyButton(getText, label = "Copy") {
  const button = h("button", { class: "ghost small", type: "button", text: label });
  button.addEventListener("click", async (event) => {
    event.stopPropagation();
    try {
      await navigator.clipboard.writeText(getText());
      button.textContent = "Copied";
    } catch {
      button.textContent = "Copy failed";
    }
    setTimeout(() => (button.textContent = label), 1500);
  });
  return button;
}
