"""The sparkline draws the series inside its box, the threshold where it belongs, nothing for one point."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from daemon.common.charts.sparkline import scale, svg_sparkline

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def pts(*values: float) -> list[tuple[datetime, float]]:
    return [(T0 + timedelta(seconds=30 * i), v) for i, v in enumerate(values)]


def test_rising_values_go_up_the_box_and_the_threshold_sits_between():
    xy, threshold_y = scale(pts(100, 200, 400), 300, width=100, height=40)
    assert [round(x) for x, _ in xy] == [2, 50, 98]  # time spread over the width
    ys = [y for _, y in xy]
    assert ys[0] > ys[1] > ys[2]  # higher values are drawn higher (smaller y)
    assert ys[2] == 2.0 and ys[0] == 38.0  # the extremes touch the padded edges
    assert ys[1] > threshold_y > ys[2]


def test_svg_is_a_polyline_with_a_title_naming_first_and_last_values():
    svg = svg_sparkline(pts(1500, 2600, 3626), threshold=2000)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert len(re.findall(r"\d+\.\d,\d+\.\d", svg)) == 3
    assert "1500 at 12:00:00 to 3626 at 12:01:00 UTC" in svg


def test_flat_series_and_single_points():
    xy, _ = scale(pts(7, 7, 7), None, width=100, height=40)
    assert {y for _, y in xy} == {20.0}  # a flat line in the middle
    assert svg_sparkline(pts(5)) == ""  # one point is not a line
