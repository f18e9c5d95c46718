"""Parse a rocketmq-exporter `/metrics` page into samples grouped by metric name (ref §6).

The exporter writes Prometheus text format 0.0.4 with its own writer: no HELP/TYPE lines, a
trailing comma after the last label (`{group="g",}`) and Java's `Double.toString` numbers
(`1.0`, `3.0E7`, `NaN`). Older builds wrote HELP/TYPE lines through the Java client's
TextFormat; prometheus-client's parser reads both.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

METRIC_PREFIX = "rocketmq_"


class ExpositionError(ValueError):
    """The page is not Prometheus text, or holds nothing from a rocketmq-exporter."""


@dataclass(frozen=True)
class Sample:
    """One line of the page: its labels and its (finite) value."""

    labels: dict[str, str]
    value: float


def parse_exposition(text: str) -> dict[str, list[Sample]]:
    """Samples of every `rocketmq_*` metric by name; ExpositionError when the page is not usable."""
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as exc:  # the parser raises ValueError, IndexError, … on junk
        raise ExpositionError(f"not Prometheus text format: {_first_bad_line(text) or exc}") from None
    by_name: dict[str, list[Sample]] = defaultdict(list)
    other_names = 0
    for family in families:
        for sample in family.samples:
            if not sample.name.startswith(METRIC_PREFIX):
                other_names += 1
                continue
            # NaN/Inf carry no figure a row could hold; the exporter writes them only for unset values.
            if math.isfinite(sample.value):
                by_name[sample.name].append(Sample(dict(sample.labels), sample.value))
    if not by_name:
        if other_names:
            raise ExpositionError(
                f"{other_names} sample(s), none named {METRIC_PREFIX}*: is this a rocketmq-exporter's /metrics?"
            )
        raise ExpositionError(
            "no rocketmq_* metrics yet: the exporter has not finished a collection (it collects once a "
            "minute) or cannot reach its name server (see its log)"
        )
    return dict(by_name)


def _first_bad_line(text: str) -> str | None:
    """`line N: <text>` of the first line the parser rejects on its own; only used on the error path."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            list(text_string_to_metric_families(line + "\n"))
        except Exception as exc:
            shown = line if len(line) <= 80 else line[:77] + "..."
            why = str(exc) if len(str(exc)) <= 80 else str(exc)[:77] + "..."
            return f"line {number}: {shown!r} ({why})"
    return None
