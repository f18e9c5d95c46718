"""The daemon's jobs on its scheduler: each cluster's collections, the evaluations half an interval
after them, dispatch and maintenance; the first evaluation at start-up; how a reload moves them (DESIGN §9)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from config.models import ClusterConfig, RocketwatchConfig
from daemon.app.jobs import (
    DISPATCH,
    EVALUATE,
    MAINTAIN,
    collect_job_id,
    evaluate_offset,
    job_intervals,
    next_evaluation,
    run_slot,
)
from rules.durations import format_duration

log = logging.getLogger("rocketwatch")

# One run of a job at a time; runs missed while it ran are dropped, not queued; none is ever too late to run.
_JOB_OPTIONS = {"max_instances": 1, "coalesce": True, "misfire_grace_time": None}


def utcnow() -> datetime:
    """The daemon's clock; everything downstream takes `now` as an argument."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class JobRuns:
    """What each job runs; `tracked` wraps every run, so shutdown can wait for the one in flight."""

    tracked: Callable[..., Awaitable[None]]
    collect: Callable[[ClusterConfig], Awaitable[None]]
    evaluate: Callable[[], Awaitable[None]]
    dispatch: Callable[[], Awaitable[None]]
    maintain: Callable[[], Awaitable[None]]
    # How the last evaluation went ("loaded the saved state; folded 2 cycle(s)", "rebuilt (...)"), for the log.
    last_evaluation: Callable[[], str] = lambda: ""


class Schedule:
    """Places the daemon's jobs on `scheduler` as the config asks, and moves them when it changes."""

    def __init__(self, scheduler: AsyncIOScheduler, runs: JobRuns) -> None:
        self.scheduler = scheduler
        self.runs = runs
        self.config: RocketwatchConfig | None = None

    def start(self, config: RocketwatchConfig) -> None:
        """Every job, first runs from now: collections at once, the first evaluation half an interval later."""
        self.config = config
        first = utcnow()
        for cluster in config.clusters:
            self._add_collect_job(cluster, first)
        intervals = job_intervals(config)
        # The first evaluation runs once, on its own: it rebuilds the kept state from the store's
        # window on a JVM that has compiled nothing yet (7.5-9.1 s at 16 series, 2.0-2.6 s once
        # warm). The evaluations on the cadence start after it, at their next slot, so none of
        # them waits on it and every one runs (`make demo` evaluates every 5 s).
        self.scheduler.add_job(self.runs.tracked, "date", args=[self.run_first_evaluation], id=EVALUATE,
                               run_date=first + evaluate_offset(config), **_JOB_OPTIONS)
        for job_id, run, start in ((DISPATCH, self.runs.dispatch, None), (MAINTAIN, self.runs.maintain, first)):
            self.scheduler.add_job(
                self.runs.tracked, "interval", args=[run], id=job_id, seconds=intervals[job_id].total_seconds(),
                **({"next_run_time": start} if start is not None else {}), **_JOB_OPTIONS,
            )

    def scheduled_now(self, job_id: str) -> datetime:
        """The time the running `job_id` was scheduled for (daemon/app/jobs.py `run_slot`), or utcnow()."""
        job = self.scheduler.get_job(job_id)
        interval = getattr(getattr(job, "trigger", None), "interval", None)
        next_run = job.next_run_time if job is not None else None
        return run_slot(next_run, interval, utcnow())

    @property
    def evaluating_on_cadence(self) -> bool:
        """Whether the first evaluation is done and the evaluations run on their interval."""
        job = self.scheduler.get_job(EVALUATE)
        return job is not None and isinstance(job.trigger, IntervalTrigger)

    async def run_first_evaluation(self) -> None:
        """The start-up evaluation (the date job); then the evaluations on the cadence, from their next slot."""
        started = time.monotonic()
        try:
            await self.runs.evaluate()
        finally:
            # Even when it failed: the evaluations on the cadence are how the daemon retries.
            config = self.config
            interval = config.evaluate.interval
            start = self._next_slot(config, config.clusters)
            self.scheduler.add_job(self.runs.tracked, "interval", args=[self.runs.evaluate], id=EVALUATE,
                                   seconds=interval.total_seconds(), next_run_time=start, replace_existing=True,
                                   **_JOB_OPTIONS)
            how = self.runs.last_evaluation()
            log.info("first evaluation done in %.1fs%s; evaluating every %s from %s", time.monotonic() - started,
                     f" ({how})" if how else "", format_duration(interval), start.strftime("%H:%M:%S"))
            if not config.spark.master.startswith("sc://"):
                from daemon.diagnose.warmup import daemon_java_options, start_in_background

                # The first start on a machine: a class archive for the next one's JVM, written in the
                # background once this evaluation no longer competes with it for the cores.
                start_in_background(daemon_java_options(config.spark.conf))

    def _next_collection(self, clusters: Iterable[ClusterConfig]) -> datetime | None:
        jobs = [self.scheduler.get_job(collect_job_id(c.name)) for c in clusters]
        return min((job.next_run_time for job in jobs if job is not None and job.next_run_time is not None),
                   default=None)

    def _add_collect_job(self, cluster: ClusterConfig, first: datetime) -> None:
        self.scheduler.add_job(
            self.runs.tracked, "interval", args=[self.runs.collect, cluster], id=collect_job_id(cluster.name),
            seconds=self.config.collect.interval.total_seconds(), next_run_time=first, **_JOB_OPTIONS,
        )

    def reschedule(self, old: RocketwatchConfig, new: RocketwatchConfig) -> None:
        """Jobs follow a reloaded config: clusters added and removed, intervals changed from now on."""
        if self.config is None:
            return  # not scheduled yet (Spark still starting): start() reads the new config when it runs
        self.config = new
        before, after = job_intervals(old), job_intervals(new)
        previous = {c.name: c for c in old.clusters}
        for job_id in before.keys() - after.keys():
            self.scheduler.remove_job(job_id)
        for cluster in new.clusters:
            job_id = collect_job_id(cluster.name)
            if job_id not in before:
                self._add_collect_job(cluster, utcnow())
            elif previous[cluster.name] != cluster:
                self.scheduler.modify_job(job_id, args=[self.runs.collect, cluster])
        changed = [job_id for job_id, interval in after.items() if job_id in before and before[job_id] != interval]
        for job_id in changed:
            if job_id == EVALUATE and not self.evaluating_on_cadence:
                continue  # the first evaluation, once done, starts them at the new interval
            # The next run comes one new interval from now.
            self.scheduler.reschedule_job(job_id, trigger="interval", seconds=after[job_id].total_seconds())
        if self.evaluating_on_cadence and any(job_id == EVALUATE or job_id.startswith(collect_job_id(""))
                                              for job_id in changed):
            self._phase_evaluations(new, kept=[c for c in new.clusters if c.name in previous])

    def _phase_evaluations(self, config: RocketwatchConfig, kept: Iterable[ClusterConfig]) -> None:
        """Evaluations from now on run at the first slot after now, evaluate_offset after a collection of
        the clusters collected before the reload (a cluster added by it is collected at once, off the cadence)."""
        start = self._next_slot(config, kept)
        self.scheduler.reschedule_job(EVALUATE, trigger="interval", seconds=config.evaluate.interval.total_seconds(),
                                      start_date=start)

    def _next_slot(self, config: RocketwatchConfig, clusters: Iterable[ClusterConfig]) -> datetime:
        """The first evaluation slot after now on the collections of `clusters` (daemon/app/jobs.py)."""
        now = utcnow()
        return next_evaluation(now, self._next_collection(clusters) or now, evaluate_offset(config),
                               config.evaluate.interval)
