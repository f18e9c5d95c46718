"""The PNG chart is a real image of the requested size with the line drawn in the alert's colour."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from PIL import Image

from daemon.common.charts.png import png_chart

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_png_has_the_size_asked_and_the_line_in_the_alert_colour():
    points = [(T0 + timedelta(seconds=30 * i), v) for i, v in enumerate((1200, 1900, 2600, 3626))]
    data = png_chart(points, threshold=2000, colour="#d1242f", width=480, height=160)
    image = Image.open(io.BytesIO(data)).convert("RGB")
    assert image.size == (480, 160)
    colours = {c for _, c in image.getcolors(maxcolors=100_000)}
    assert (209, 36, 47) in colours  # the line
    assert (117, 117, 117) in colours  # the dashed threshold and time labels


def test_a_single_point_is_refused_clearly():
    with pytest.raises(ValueError, match="at least two points"):
        png_chart([(T0, 1.0)])
