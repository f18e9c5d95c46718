"""Stopping the daemon within a bound: the cycles in flight, a last outbox flush, Spark."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from daemon.common.sdnotify import sd_notify

log = logging.getLogger("rocketwatch")


@dataclass(frozen=True)
class StopWork:
    """What a shutdown stops, handed over by the Daemon (so this module needs no Daemon)."""

    budget_s: float  # daemon.shutdown_timeout
    scheduler: Any  # APScheduler's AsyncIOScheduler
    reload_tasks: set[asyncio.Task]
    inflight: set[asyncio.Task]
    flush_outbox: Callable[[], Awaitable[None]]
    outbox_depth: Callable[[], int]
    spark_started: bool
    store_lock: asyncio.Lock  # held by every evaluation
    spark_stopped: Callable[[], None]
    save_state: Callable[[], None] | None = None  # the Evaluator's save (spark/saved_state.py)


async def shutdown(work: StopWork) -> None:
    """Stop scheduling, let the cycles in flight finish, flush the outbox, stop Spark: all bounded."""
    sd_notify("STOPPING=1")
    budget = work.budget_s
    deadline = time.monotonic() + budget
    work.scheduler.shutdown(wait=False)
    if work.reload_tasks:
        # A reload's listeners still reconnecting would otherwise outlive the shutdown that stops them.
        await asyncio.wait(set(work.reload_tasks), timeout=min(5.0, budget * 0.2))
    inflight = {t for t in work.inflight if not t.done()}
    abandoned = False
    if inflight:
        log.info("stopping: waiting up to %.0fs for %d cycle(s) in flight", budget * 0.6, len(inflight))
        _, late = await asyncio.wait(inflight, timeout=budget * 0.6)
        for task in late:
            log.warning("stopping: %s still running after %.0fs; abandoned", task.get_name(), budget * 0.6)
            task.cancel()
        abandoned = bool(late)
    try:
        await asyncio.wait_for(work.flush_outbox(), timeout=max(deadline - time.monotonic(), 1.0))
    except TimeoutError:
        log.warning("stopping: outbox flush cut off after %.0fs; %d notification(s) stay queued and go out "
                    "after the next start", budget, work.outbox_depth())
    log.info("stopping: outbox flushed, %d notification(s) left queued", work.outbox_depth())
    if abandoned:
        # An evaluation still runs in its thread: stopping Spark under it only adds a stack of
        # errors to the log; the JVM ends with the process anyway.
        log.info("stopping: leaving Spark to exit with the process (an evaluation is still running)")
    elif work.spark_started:
        # Evaluations hold the store lock: taking it means none is building a plan on the session.
        try:
            await asyncio.wait_for(work.store_lock.acquire(), timeout=max(deadline - time.monotonic(), 1.0))
        except TimeoutError:
            log.info("stopping: leaving Spark to exit with the process (an evaluation still holds the store)")
            return
        try:
            if work.save_state is not None and not await _saved(work.save_state, deadline):
                return
            await asyncio.to_thread(stop_spark)
            work.spark_stopped()
        finally:
            work.store_lock.release()


async def _saved(save: Callable[[], None], deadline: float) -> bool:
    """Save the evaluation state within the budget's rest; False when cut off (Spark left to the process)."""
    started = time.monotonic()
    try:
        await asyncio.wait_for(asyncio.to_thread(save), timeout=max(deadline - started, 1.0))
    except TimeoutError:
        log.warning("stopping: saving the evaluation state cut off after %.0fs; the next start folds from the "
                    "last save or rebuilds", time.monotonic() - started)
        return False
    log.info("stopping: evaluation state saved in %.1fs", time.monotonic() - started)
    return True


def stop_spark() -> None:
    """Stop the process's SparkSession; best effort, the JVM may already be gone."""
    from spark.session import stop_session

    try:
        stop_session()
    except Exception:
        log.debug("spark session stop failed", exc_info=True)
