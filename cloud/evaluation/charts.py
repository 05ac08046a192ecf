"""Horizontal bar charts as inline SVG (no script, no fonts to fetch): the report's figures."""
from __future__ import annotations

import html
from collections.abc import Sequence

ROW_PX, LABEL_PX, BAR_PX, VALUE_PX = 18, 260, 360, 80


def _value_text(value: float, percent: bool, unit: str) -> str:
    if percent:
        return f"{value:.0%}"
    if unit == "$":
        return f"${value:.4f}"
    return f"{value:.1f}{unit}" if value != int(value) else f"{int(value)}{unit}"


def bar_chart(bars: Sequence[tuple[str, float]], percent: bool = False, unit: str = "", name: str = "") -> str:
    """One bar per (label, value); percent charts run 0..100%, others 0..max."""
    top = 1.0 if percent else max([v for _, v in bars] + [0.0]) or 1.0
    height = ROW_PX * max(1, len(bars)) + 8
    width = LABEL_PX + BAR_PX + VALUE_PX
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{html.escape(name)}" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    if not bars:
        parts.append(f'<text x="4" y="{ROW_PX - 4}" class="empty">no data</text>')
    for i, (label, value) in enumerate(bars):
        y = 4 + i * ROW_PX
        length = max(0.0, min(1.0, value / top)) * BAR_PX
        tone = "bar" if not percent else ("bar good" if value >= 0.8 else "bar mid" if value >= 0.5 else "bar low")
        parts.append(f'<text x="{LABEL_PX - 6}" y="{y + ROW_PX - 6}" text-anchor="end">'
                     f'{html.escape(label[:40])}</text>')
        parts.append(f'<rect class="{tone}" x="{LABEL_PX}" y="{y + 2}" width="{length:.1f}" '
                     f'height="{ROW_PX - 5}"><title>{html.escape(label)}: '
                     f'{_value_text(value, percent, unit)}</title></rect>')
        parts.append(f'<text x="{LABEL_PX + length + 4:.1f}" y="{y + ROW_PX - 6}">'
                     f'{_value_text(value, percent, unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)
