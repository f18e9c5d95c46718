"""The daemon's scheduled jobs by id, and the interval the config gives each (DESIGN §9)."""

from __future__ import annotations

from datetime import timedelta

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
