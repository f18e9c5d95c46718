"""The daemon's own stream in the generated histories (tests/spark/histories.py): cluster "rocketwatch",
one daemon_health row per host and cycle, with the events that drive the rocketwatch-self rules.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from rules.tables import SELF_CLUSTER
from tests.spark.history_events import INTERVAL, START, Event, Placer, ms

DAEMON_SCENARIOS: dict[str, tuple[tuple[str, ...], int, int]] = {
    "eval_failing": (("RocketwatchEvaluationFailing",), 3, 10),
    "eval_slow": (("RocketwatchEvaluationSlow",), 3, 10),
    "outbox_old": (("RocketwatchOutboxBackingUp",), 3, 10),
    "outbox_deep": (("RocketwatchOutboxDeep",), 3, 10),
    "store_filling": (("RocketwatchStoreDiskFilling",), 3, 10),
    # The HA coordinator stops answering: what the daemon would send is held until it answers again (the
    # oldest held notification is past the warning's minute from the event's first collected cycle on, so a
    # pause of every collector right after that cycle cannot leave the rule unjudged).
    "ha_held": (("RocketwatchCoordinatorUnreachable", "RocketwatchNotificationsHeld"), 3, 10),
}


class DaemonStream:
    """The daemon's own stream (cluster "rocketwatch"): one daemon_health row per host and cycle."""

    def __init__(self, rng: random.Random, cycles: int, pause: range) -> None:
        self.name = SELF_CLUSTER
        self.rng = rng
        self.cycles = cycles
        self.offset_s = round(rng.uniform(1.5, 28.0), 3)
        self.hosts = {"rw-1": range(0, cycles)}
        if rng.random() < 0.7:  # a second daemon host appears, and sometimes goes away again
            born = rng.randint(3, cycles // 3)
            self.hosts["rw-2"] = range(born, rng.choice([cycles, rng.randint(born + 6, cycles - 2)]))
        self.skips = {rng.randint(1, cycles - 2) for _ in range(rng.randint(0, 2))}
        placer = Placer(rng, cycles, self.skips | set(pause))
        self.events: list[Event] = []
        for kind, (_, shortest, longest) in DAEMON_SCENARIOS.items():
            for host in self.hosts:
                if host != "rw-1" and rng.random() < 0.6:
                    continue
                placed = placer.place([f"{kind}:{host}"], shortest, longest, max(2, self.hosts[host].start + 1))
                if placed is not None:
                    self.events.append(Event(kind, placed[0], placed[1], host, rng.random()))

    def _active(self, kind: str, i: int, host: str) -> Event | None:
        return next((e for e in self.events if e.kind == kind and e.target == host and e.on(i)), None)

    def run(self, pause: range) -> list[tuple[int, datetime, dict[str, list[dict[str, Any]]]]]:
        """Every collected cycle's (index, ts, tables)."""
        rng = self.rng
        out = []
        for i in range(self.cycles):
            ts = START + i * INTERVAL + ms(self.offset_s + rng.uniform(-1.0, 1.0))
            rows = []
            for host, alive in self.hosts.items():
                if i not in alive:
                    continue
                failing = self._active("eval_failing", i, host)
                slow = self._active("eval_slow", i, host)
                old = self._active("outbox_old", i, host)
                deep = self._active("outbox_deep", i, host)
                full = self._active("store_filling", i, host)
                held = self._active("ha_held", i, host)
                critical = {e.kind: e.level >= 0.5 for e in (failing, slow, old, deep, full, held) if e is not None}
                ratio = (rng.uniform(0.01, 0.045) if critical.get("store_filling") else rng.uniform(0.06, 0.14)) \
                    if full else rng.uniform(0.3, 0.7)
                rows.append(dict(
                    ts=ts, cluster=SELF_CLUSTER, host=host,
                    evaluate_seconds=None if i == alive.start or rng.random() < 0.03 else round(
                        rng.uniform(95.0, 200.0) if critical.get("eval_slow") else
                        rng.uniform(31.0, 85.0) if slow else rng.uniform(1.5, 8.0), 3),
                    evaluate_interval_s=30.0,
                    evaluation_failures=(i - failing.start + 1) * (3 if critical.get("eval_failing") else 1)
                    if failing else 0,
                    last_cycle_age_s=None if i == alive.start else round(rng.uniform(25.0, 40.0), 3),
                    outbox_depth=(rng.randint(1100, 3000) if critical.get("outbox_deep") else rng.randint(210, 900))
                    if deep else rng.randint(0, 20),
                    outbox_oldest_age_s=round((rng.uniform(3700, 9000) if critical.get("outbox_old") else
                                               rng.uniform(620, 3500)) if old else rng.uniform(0.0, 30.0), 3),
                    store_free_bytes=int(ratio * 500 * 2**30), store_free_ratio=round(ratio, 5),
                    held_notifications=rng.randint(1, 40) if held else 0,
                    held_oldest_age_s=round((i - held.start + 2) * 30.0 + rng.uniform(5.0, 20.0) +
                                            (900.0 if critical.get("ha_held") else 0.0), 3) if held else 0.0,
                    ha_coordinator_up=0 if held else 1))
            if i not in self.skips and i not in pause:
                out.append((i, ts, {"daemon_health": rows}))
        return out
