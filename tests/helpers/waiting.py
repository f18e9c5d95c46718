"""Wait on an event instead of sleeping: poll a condition until it holds, fail naming it when it never does."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from daemon.simulator import SimulatorThread

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], what: str, timeout: float = 30.0, interval: float = 0.05) -> T:
    """Poll `predicate` until it returns something true and return that; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:.0f}s")
        time.sleep(interval)


def offsets_committed(
    sim: SimulatorThread, groups: Iterable[str] | None = None, topics: Iterable[str] | None = None
) -> None:
    """Wait until every consumer group (or each of `groups`) has a committed offset on every queue of
    every topic it subscribes (its retry topic too; or only `topics`), on every broker: from then on
    the brokers' ConsumeStats list those queues of every group."""
    wanted = None if groups is None else list(groups)
    only = None if topics is None else set(topics)

    def committed(model: object) -> bool:
        names = wanted if wanted is not None else list(model.groups)  # type: ignore[attr-defined]
        return all(
            model.brokers[mq.broker].committed(group, topic, mq.queue_id) >= 0  # type: ignore[attr-defined]
            for group in names
            for topic in model.groups[group].subscribed  # type: ignore[attr-defined]
            if only is None or topic in only
            for mq in model.queues_of(topic)  # type: ignore[attr-defined]
        )

    wait_until(lambda: sim.inspect(committed), "a committed offset of every group on every queue it consumes")


def pulled_ahead_of_commit(sim: SimulatorThread) -> None:
    """Wait until some queue's pull offset runs ahead of its committed offset (messages in flight)."""

    def ahead(model: object) -> bool:
        return any(
            offset > max(broker.committed(*key), 0)
            for broker in model.brokers.values()  # type: ignore[attr-defined]
            for key, offset in broker.pull_offsets.items()
        )

    wait_until(lambda: sim.inspect(ahead), "a pull offset ahead of its committed offset")
