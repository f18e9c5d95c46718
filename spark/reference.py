"""The reference path: every rule evaluated over its full window at one `now`, written to be read.

Each stored table is read once over the longest window any of its rules (or any view built on it)
needs, and held for the evaluation's one job (a lazy local checkpoint: every rule reading the table
reads those blocks instead of opening its files again); views are built from those windows; every
rule's plan (its kind's `plan`, spark/kinds/, SQL text) runs over its table or view; the plans are
one UNION ALL statement, collected in one job. Nothing is kept between calls: this is what the
incremental engine (spark/evaluate.py) must agree with at every cycle, and what `eval --at`,
`replay`, `analyze`, `test-rules` and `diagnose` use.

    findings = evaluate_reference(get_session(), "/var/lib/rocketwatch/store", rules, now,
                                  stale_after=timedelta(seconds=60))
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from rules.findings import Finding
from rules.kinds.base import RuleBase
from rules.tables import TABLES
from spark.kinds import KINDS
from spark.kinds.common import OUTPUT_COLUMNS, lookback
from spark.render import to_finding
from spark.sizing import WINDOW_ONE_PARTITION_MAX_ROWS
from spark.sql import Views, name, names, run, union_all, with_ctes
from spark.state import checkpoint, release
from spark.store_reader import as_utc, partition_paths, read_window, window_rows
from spark.views import VIEW_DEFS, compute_view

log = logging.getLogger(__name__)


def needed(rule: RuleBase, stale_after: timedelta) -> timedelta:
    """How far before `now` a rule reads: the stale lookback, or its `over:` window plus stale_after."""
    return max(lookback(stale_after), rule.window() + stale_after)


def sources(name: str) -> tuple[str, ...]:
    """The stored tables a table or view name reads."""
    return VIEW_DEFS[name].sources if name in VIEW_DEFS else (name,)


def window_starts(rules: Sequence[RuleBase], now: datetime, stale_after: timedelta) -> dict[str, datetime]:
    """Where each stored table's window starts when `rules` are evaluated at `now`."""
    now = as_utc(now)
    starts: dict[str, datetime] = {}
    for rule in rules:
        start = now - needed(rule, rule.stale_after or stale_after)
        for source in sources(rule.table):
            starts[source] = min(start, starts.get(source, start))
    return starts


def plan_reference(spark: SparkSession, store_root: str | Path, rules: Sequence[RuleBase], now: datetime,
                   stale_after: timedelta) -> DataFrame | None:
    """The union of every rule's output over its full window at `now`; None when no rule has samples."""
    now = as_utc(now)
    return _plan(spark, read_windows(spark, store_root, window_starts(rules, now, stale_after), now), rules, now,
                 stale_after)


def _plan(spark: SparkSession, windows: Windows, rules: Sequence[RuleBase], now: datetime,
          stale_after: timedelta) -> DataFrame | None:
    frames = {f"window_{table}": frame for table, frame in windows.frames.items()}
    view_ctes = {view: compute_view(view, {s: f"{{window_{s}}}" for s in sources(view)})
                 for view in {r.table for r in rules if r.table in VIEW_DEFS}}
    branches: dict[str, str] = {}
    for rule in rules:
        if sources(rule.table)[0] not in windows.present:
            continue  # no samples at all: nothing to find, and nothing was ever seen to call no_data
        source = name(rule.table) if rule.table in VIEW_DEFS else f"{{window_{rule.table}}}"
        try:
            branches[rule.alert] = KINDS[rule.kind].plan(rule, source, rule.stale_after or stale_after)
        except Exception:
            # One rule that cannot be planned must not blind every other rule of the cycle.
            log.exception("rule %s: cannot build its plan; skipped this evaluation", rule.alert)
    return union_plan(spark, branches, now, frames, view_ctes)


def union_plan(spark: SparkSession, branches: Mapping[str, str], now: datetime, frames: Mapping[str, DataFrame],
               ctes: Mapping[str, str] | None = None, views: Views | None = None) -> DataFrame | None:
    """One statement: the UNION ALL of `branches` (rule -> SELECT in the output shape) over `frames`
    and the common table expressions `ctes`; None without branches. A branch Spark cannot analyse
    (a type error in a rule's expression) is logged and left out, the others are kept."""
    if not branches:
        return None

    def statement(selected: Mapping[str, str]) -> DataFrame:
        used = {n: q for n, q in (ctes or {}).items() if any(name(n) in b for b in selected.values())}
        text = with_ctes(used, f"SELECT {names(OUTPUT_COLUMNS)} FROM ({union_all(selected.values())})")
        wanted = {k: v for k, v in frames.items() if f"{{{k}}}" in text}
        return run(spark, text, now, views, **wanted)

    try:
        return statement(branches)
    except Exception:
        if len(branches) == 1:
            log.exception("rule %s: Spark cannot plan it; skipped this evaluation", next(iter(branches)))
            return None
    kept = {}
    for rule, branch in branches.items():
        try:
            statement({rule: branch})
            kept[rule] = branch
        except Exception:
            log.exception("rule %s: Spark cannot plan it; skipped this evaluation", rule)
    return statement(kept) if kept else None


class Windows:
    """Each stored table's window as a DataFrame, and which of them hold any file."""

    def __init__(self, frames: Mapping[str, DataFrame], present: set[str]) -> None:
        self.frames = frames
        self.present = present

    def release(self) -> None:
        """Free the windows' blocks (once the evaluation's job is done)."""
        for frame in self.frames.values():
            release(frame)


def read_windows(spark: SparkSession, store_root: str | Path, starts: Mapping[str, datetime],
                 now: datetime) -> Windows:
    """Each table read once over [start, now]; small windows as one partition (no shuffle above)."""
    frames: dict[str, DataFrame] = {}
    present: set[str] = set()
    for table_name, start in starts.items():
        table = TABLES[table_name]
        if partition_paths(store_root, table, start, now):
            present.add(table_name)
        # A view's optional source with no files still needs a typed (empty) frame to join.
        small = window_rows(store_root, table, start, now) <= WINDOW_ONE_PARTITION_MAX_ROWS
        frame = read_window(spark, store_root, table, start, now, one_partition=small)
        # Rules reading one table are branches of one union, each of which would scan the table's
        # files again: 47 scans of 11 tables' 1,136 files at the differential walk's last points
        # (tests/spark/test_incremental.py), evaluated in 19.7-22.9 s; held once, 13.4-16.0 s.
        classic = getattr(spark, "_jsparkSession", None) is not None  # Spark Connect plans on the server
        frames[table_name] = checkpoint(frame) if classic and table_name in present else frame
    return Windows(frames, present)


def collect_findings(plan: DataFrame | None, rules: Sequence[RuleBase]) -> list[Finding]:
    """The collected rows of `plan` as Findings, sorted by rule and labels."""
    rows = plan.collect() if plan is not None else []
    by_name = {r.alert: r for r in rules}
    findings = [to_finding(by_name[row["rule"]], row.asDict()) for row in rows]
    findings.sort(key=lambda f: (f.rule, sorted(f.labels.items())))
    return findings


def evaluate_reference(spark: SparkSession, store_root: str | Path, rules: Sequence[RuleBase], now: datetime,
                       stale_after: timedelta) -> list[Finding]:
    """Findings of `rules` at `now` from their full windows; series older than `stale_after` are no_data."""
    now = as_utc(now)
    windows = read_windows(spark, store_root, window_starts(rules, now, stale_after), now)
    try:
        return collect_findings(_plan(spark, windows, rules, now, stale_after), rules)
    finally:
        windows.release()
