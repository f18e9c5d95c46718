"""The pieces every generated history is made of (tests/spark/histories.py): its clock, scenario events and
where they go.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

# Crosses an hour, so the windows span two store partitions.
START = datetime(2026, 11, 21, 10, 47, 30, tzinfo=UTC)
INTERVAL = timedelta(seconds=30)
TAIL = 4  # an event ends this many cycles before its history does (windowed kinds: WINDOWED_TAIL)


@dataclass
class Event:
    """A scenario event active for cycles start <= i < end of one history."""

    kind: str
    start: int
    end: int
    target: str = ""  # group, broker or host name; "" for the cluster
    level: float = 0.0  # magnitude, per kind
    extra: dict[str, Any] = field(default_factory=dict)

    def on(self, i: int) -> bool:
        """Whether the event is active at cycle i."""
        return self.start <= i < self.end

def ms(seconds: float) -> timedelta:
    """`seconds` as a timedelta, rounded to the millisecond."""
    return timedelta(milliseconds=round(seconds * 1000))


class Placer:
    """Places events on lanes (a group, a broker's metric, ...) so that two events never share one."""

    def __init__(self, rng: random.Random, cycles: int, hidden: Iterable[int]) -> None:
        self.rng = rng
        self.cycles = cycles
        self.hidden = set(hidden)  # cycles nobody collects
        self.busy: dict[str, list[tuple[int, int]]] = {}

    def place(self, lanes: Iterable[str], shortest: int, longest: int, first: int = 2, tail: int = TAIL,
              at: int | None = None) -> tuple[int, int] | None:
        """A free (start, end) on all `lanes`, starting at `at` (or from `first` on) and ending `tail` cycles
        before the history does; None when nothing fits."""
        lanes = list(lanes)
        last_end = self.cycles - tail
        tries = [(self.rng.randint(shortest, longest), None) for _ in range(40)]
        tries += [(shortest, start) for start in range(first, last_end - shortest + 1)]  # then every start, shortest
        for length, start in tries:
            length = min(length, last_end - (at if at is not None else first))
            if length < shortest:
                return None
            if start is None:
                start = at if at is not None else self.rng.randint(first, last_end - length)
            end = start + length
            if end <= last_end and self._seen(start, end, shortest) and self._free(lanes, start, end):
                for lane in lanes:
                    self.busy.setdefault(lane, []).append((start, end))
                return start, end
        return None

    def _seen(self, start: int, end: int, shortest: int) -> bool:
        """Whether enough of [start, end) is collected: a few cycles, two of them once the event is `shortest` old
        (a stall or a lag spans a pause; the findings need samples when they are due)."""
        seen = [c for c in range(start, end) if c not in self.hidden]
        return len(seen) >= min(shortest, 3) and sum(1 for c in seen if c >= start + shortest - 2) >= 2

    def _free(self, lanes: list[str], start: int, end: int) -> bool:
        """No event on `lanes` within a cycle of [start, end)."""
        return all(e < start or s > end for lane in lanes for s, e in self.busy.get(lane, []))
