"""Stopping the daemon within a bound: the cycles in flight, a last outbox flush, Spark."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from daemon.sdnotify import sd_notify

if TYPE_CHECKING:
    from daemon.app import Daemon

log = logging.getLogger("rocketwatch")


async def shutdown(daemon: Daemon) -> None:
    """Stop scheduling, let the cycles in flight finish, flush the outbox, stop Spark: all bounded."""
    sd_notify("STOPPING=1")
    budget = daemon.config.daemon.shutdown_timeout.total_seconds()
    deadline = time.monotonic() + budget
    daemon.scheduler.shutdown(wait=False)
    if daemon._reload_tasks:
        # A reload's listeners still reconnecting would otherwise outlive the shutdown that stops them.
        await asyncio.wait(set(daemon._reload_tasks), timeout=min(5.0, budget * 0.2))
    inflight = {t for t in daemon._inflight if not t.done()}
    abandoned = False
    if inflight:
        log.info("stopping: waiting up to %.0fs for %d cycle(s) in flight", budget * 0.6, len(inflight))
        _, late = await asyncio.wait(inflight, timeout=budget * 0.6)
        for task in late:
            log.warning("stopping: %s still running after %.0fs; abandoned", task.get_name(), budget * 0.6)
            task.cancel()
        abandoned = bool(late)
    try:
        await asyncio.wait_for(daemon.dispatch_once(final=True), timeout=max(deadline - time.monotonic(), 1.0))
    except TimeoutError:
        log.warning("stopping: outbox flush cut off after %.0fs; %d notification(s) stay queued and go out "
                    "after the next start", budget, daemon.outbox.depth())
    log.info("stopping: outbox flushed, %d notification(s) left queued", daemon.outbox.depth())
    if abandoned:
        # An evaluation still runs in its thread: stopping Spark under it only adds a stack of
        # errors to the log; the JVM ends with the process anyway.
        log.info("stopping: leaving Spark to exit with the process (an evaluation is still running)")
    elif daemon._evaluator is not None:
        # Evaluations hold the store lock: taking it means none is building a plan on the session.
        try:
            await asyncio.wait_for(daemon._store_lock.acquire(), timeout=max(deadline - time.monotonic(), 1.0))
        except TimeoutError:
            log.info("stopping: leaving Spark to exit with the process (an evaluation still holds the store)")
            return
        try:
            await asyncio.to_thread(stop_spark)
            daemon.metrics.spark_up.set(0)
        finally:
            daemon._store_lock.release()


def stop_spark() -> None:
    """Stop the process's SparkSession; best effort, the JVM may already be gone."""
    from spark.session import stop_session

    try:
        stop_session()
    except Exception:
        log.debug("spark session stop failed", exc_info=True)
