// Small inline-SVG charts for the admin console (no library, nothing from a CDN): stacked bars per day.

const SVG = "http://www.w3.org/2000/svg";
export const PALETTE = ["#3451d1", "#e8590c", "#2b8a3e", "#ae3ec9", "#1098ad", "#f08c00", "#c92a2a", "#5c7cfa"];
const MAX_SERIES = 7; // beyond this, the smallest series are summed as "other"

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children) if (child) node.append(child);
  return node;
}

function title(text) {
  const node = document.createElementNS(SVG, "title");
  node.textContent = text;
  return node;
}

// Every day from the first to the last (YYYY-MM-DD, UTC), so quiet days show as gaps.
export function dayRange(days) {
  if (!days.length) return [];
  const sorted = [...days].sort();
  const out = [];
  const end = new Date(sorted[sorted.length - 1] + "T00:00:00Z");
  for (let d = new Date(sorted[0] + "T00:00:00Z"); d <= end && out.length < 400; d.setUTCDate(d.getUTCDate() + 1)) {
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

// rows: [{day, key, value}] -> {days, series: [{key, color, values: Map(day -> value)}]}, largest first.
export function stack(rows) {
  const totals = new Map();
  for (const r of rows) totals.set(r.key, (totals.get(r.key) || 0) + r.value);
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([key]) => key);
  const kept = ranked.length > MAX_SERIES ? ranked.slice(0, MAX_SERIES - 1) : ranked;
  const series = new Map(kept.map((key, i) => [key, { key, color: PALETTE[i % PALETTE.length], values: new Map() }]));
  for (const r of rows) {
    const name = series.has(r.key) ? r.key : "other";
    if (!series.has(name)) series.set(name, { key: name, color: "#adb5bd", values: new Map() });
    const values = series.get(name).values;
    values.set(r.day, (values.get(r.day) || 0) + r.value);
  }
  return { days: dayRange(rows.map((r) => r.day)), series: [...series.values()] };
}

function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

// A stacked bar chart of rows [{day, key, value}], with a legend; format(value) labels the axis and tooltips.
export function stackedBars(rows, { label, format = String, width = 640, height = 220, empty = "No usage yet." } = {}) {
  const { days, series } = stack(rows);
  const figure = document.createElement("figure");
  figure.className = "chart";
  figure.setAttribute("aria-label", label || "chart");
  if (!days.length) {
    figure.append(Object.assign(document.createElement("div"), { className: "muted", textContent: empty }));
    return figure;
  }
  const pad = { left: 64, right: 12, top: 10, bottom: 28 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const totals = days.map((day) => series.reduce((sum, s) => sum + (s.values.get(day) || 0), 0));
  const top = niceMax(Math.max(...totals));
  const slot = plotW / days.length;
  const barW = Math.max(2, Math.min(36, slot * 0.7));
  const y = (v) => pad.top + plotH - (v / top) * plotH;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart-svg" });
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    chart.append(svg("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), class: "grid" }));
    const tick = svg("text", { x: pad.left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" });
    tick.textContent = format(v);
    chart.append(tick);
  }
  const every = Math.max(1, Math.ceil(days.length / 8));
  days.forEach((day, i) => {
    const x = pad.left + slot * i + (slot - barW) / 2;
    let base = 0;
    for (const s of series) {
      const value = s.values.get(day) || 0;
      if (value <= 0) continue;
      chart.append(svg("rect", { x, y: y(base + value), width: barW, height: Math.max(0.5, y(base) - y(base + value)),
        fill: s.color, "data-series": s.key, "data-day": day }, title(`${day} · ${s.key}: ${format(value)}`)));
      base += value;
    }
    if (i % every === 0) {
      const tick = svg("text", { x: x + barW / 2, y: height - 8, "text-anchor": "middle", class: "axis" });
      tick.textContent = day.slice(5);
      chart.append(tick);
    }
  });
  const legend = document.createElement("ul");
  legend.className = "chart-legend";
  for (const s of series) {
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = s.color;
    const total = [...s.values.values()].reduce((a, b) => a + b, 0);
    item.append(swatch, document.createTextNode(`${s.key} · ${format(total)}`));
    legend.append(item);
  }
  figure.append(chart, legend);
  return figure;
}
