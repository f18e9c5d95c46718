"""The daemon's scheduled jobs by id, and the interval the config gives each (DESIGN §9)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from config.models import RocketwatchConfig

EVALUATE = "evaluate"
DISPATCH = "dispatch"
MAINTAIN = "maintain"
_COLLECT = "collect:"


def collect_job_id(cluster: str) -> str:
    """The id of the job that collects one cluster."""
    return f"{_COLLECT}{cluster}"


def job_intervals(config: RocketwatchConfig) -> dict[str, timedelta]:
    """Every job's id and how often it runs, as `config` asks."""
    intervals = {collect_job_id(c.name): config.collect.interval for c in config.clusters}
    intervals[EVALUATE] = config.evaluate.interval
    intervals[DISPATCH] = config.notify.interval
    intervals[MAINTAIN] = config.maintenance.interval
    return intervals


def evaluate_offset(config: RocketwatchConfig) -> timedelta:
    """How long after the collections the evaluations run: half an evaluation interval."""
    # Started with the collections, each evaluation read the cycle committed an interval earlier and
    # ran beside the next collection on the same cores. Half an interval later the collection is
    # committed and done: the evaluation reads it at once and has the cores to itself. At 16k queue
    # series (bench/detection_latency.py, 30 s cadence) the evaluation's mean fell from 4.08 s to
    # 2.69 s, the collection's from 4.19 s to 2.28 s, and a broker's death reached Slack in 90 s, not 119 s.
    return config.evaluate.interval / 2


def next_evaluation(now: datetime, next_collection: datetime, offset: timedelta, interval: timedelta) -> datetime:
    """The first evaluation slot after `now`: `offset` after a collection, on the evaluate cadence."""
    # The collections run every interval until next_collection; their slots are next_collection +
    # offset, one evaluate interval apart, before it as after it.
    slot = next_collection + offset
    if slot <= now:
        return slot + interval * (((now - slot) // interval) + 1)
    return slot - interval * ((slot - now - timedelta.resolution) // interval)


def run_slot(next_run_time: datetime | None, interval: timedelta | None, now: datetime) -> datetime:
    """When a running interval job was scheduled for: one interval before its next run (APScheduler
    moves that on as the run starts), or `now` when the run is off its schedule (run by hand)."""
    # Prometheus stamps a rule group's evaluation with its slot, so `for: 1m` at a 30 s cadence
    # holds after exactly two evaluations. Stamped with the moment the busy event loop got to each
    # run, the second came up a few ms short of 60 s about every other time, and the alert fired
    # a whole interval later (bench/detection_latency.py: firing 121 s after the first failed
    # collection, where one interval to the next evaluation, `for` and the evaluation make ~95 s).
    if next_run_time is None or interval is None:
        return now
    slot = next_run_time.astimezone(UTC) - interval
    return slot if timedelta(0) <= now - slot < interval else now
