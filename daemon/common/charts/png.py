"""A small PNG line chart of an alert's value for chat messages, drawn with Pillow."""

from __future__ import annotations

import io
from collections.abc import Sequence

from PIL import Image, ImageDraw

from daemon.common.charts.sparkline import Point, scale

_BACKGROUND = (255, 255, 255)
_AXIS = (117, 117, 117)
_TEXT = (33, 33, 33)


def _rgb(colour: str) -> tuple[int, int, int]:
    colour = colour.lstrip("#")
    return int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16)


def png_chart(
    points: Sequence[Point], threshold: float | None = None, title: str = "", colour: str = "#c62828",
    width: int = 480, height: int = 160,
) -> bytes:
    """PNG bytes: the line, the threshold dashed, the first and last time and the min/max values."""
    if len(points) < 2:
        raise ValueError("a chart needs at least two points")
    image = Image.new("RGB", (width, height), _BACKGROUND)
    draw = ImageDraw.Draw(image)
    top, bottom, left, right = 18, 16, 56, 8
    plot_w, plot_h = width - left - right, height - top - bottom
    xy, threshold_y = scale(points, threshold, plot_w, plot_h, pad=3)
    xy = [(x + left, y + top) for x, y in xy]
    draw.rectangle((left, top, left + plot_w, top + plot_h), outline=(224, 224, 224))
    if threshold_y is not None:
        y = threshold_y + top
        for x in range(left, left + plot_w, 8):
            draw.line((x, y, min(x + 4, left + plot_w), y), fill=_AXIS, width=1)
        draw.text((2, y - 6), _short(threshold), fill=_AXIS)
    draw.line(xy, fill=_rgb(colour), width=2, joint="curve")
    x, y = xy[-1]
    draw.ellipse((x - 3, y - 3, x + 3, y + 3), fill=_rgb(colour))
    values = [v for _, v in points]
    draw.text((2, top - 2), _short(max(values)), fill=_TEXT)
    draw.text((2, top + plot_h - 10), _short(min(values)), fill=_TEXT)
    draw.text((left, height - bottom + 2), f"{points[0][0]:%H:%M:%S}", fill=_AXIS)
    end = f"{points[-1][0]:%H:%M:%S} UTC"
    draw.text((left + plot_w - draw.textlength(end), height - bottom + 2), end, fill=_AXIS)
    if title:
        draw.text((left, 2), title[:70], fill=_TEXT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _short(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.3g}"
