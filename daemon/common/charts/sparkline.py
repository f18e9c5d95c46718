"""An inline SVG sparkline: the value over time with the threshold as a dashed line."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

Point = tuple[datetime, float]


def scale(points: Sequence[Point], threshold: float | None, width: float, height: float, pad: float = 2.0
          ) -> tuple[list[tuple[float, float]], float | None]:
    """Points mapped to pixel coordinates (y grows downwards), plus the threshold's y if it has one."""
    values = [v for _, v in points] + ([threshold] if threshold is not None else [])
    low, high = min(values), max(values)
    if high == low:  # a flat line sits in the middle, not on an edge
        low, high = low - 1, high + 1
    t0, t1 = points[0][0], points[-1][0]
    span = (t1 - t0).total_seconds() or 1.0

    def y(v: float) -> float:
        return pad + (high - v) / (high - low) * (height - 2 * pad)

    xy = [(pad + (t - t0).total_seconds() / span * (width - 2 * pad), y(v)) for t, v in points]
    return xy, (y(threshold) if threshold is not None else None)


def svg_sparkline(
    points: Sequence[Point], threshold: float | None = None, width: int = 160, height: int = 36,
    colour: str = "#c62828", title: str = "",
) -> str:
    """An <svg> element; empty text when there are fewer than two points to draw a line through."""
    if len(points) < 2:
        return ""
    xy, threshold_y = scale(points, threshold, width, height)
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    first, last = points[0], points[-1]
    label = title or f"{first[1]:g} at {first[0]:%H:%M:%S} to {last[1]:g} at {last[0]:%H:%M:%S} UTC"
    parts = [
        f'<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>',
    ]
    if threshold_y is not None:
        parts.append(f'<line x1="0" x2="{width}" y1="{threshold_y:.1f}" y2="{threshold_y:.1f}" '
                     'stroke="#757575" stroke-dasharray="3,2" stroke-width="1"/>')
    parts.append(f'<polyline fill="none" stroke="{escape(colour)}" stroke-width="1.5" points="{line}"/>')
    x, y = xy[-1]
    parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{escape(colour)}"/></svg>')
    return "".join(parts)
