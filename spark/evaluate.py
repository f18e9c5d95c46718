"""Evaluate every rule against the sample store at one instant, in one Spark job.

Each table is read once over the longest window any of its rules (or any view built on it)
needs; views are computed from those windows; threshold rules of one table share one pass
(spark/kinds/fused.py); every plan is unioned and collected once. On big stores, rules that
judge only each series' newest sample read only the cycles holding one (spark/newest.py), and
stall rules on tables judge each series' newest sample against its run, kept between cycles and
extended from the new files (spark/stall_runs.py); other stall rules (on views, reducing, or
calling now()) find their candidates in the samples since `over` plus the series quiet since
then, known from the same newest times (spark/kinds/stall.py). Churn rules on tables count their
groups' set changes from sets kept per store file (spark/churn_sets.py). The Columns of every
rule are built once per rule declaration (spark/column_cache.py).

    evaluator = Evaluator(get_session(), "/var/lib/rocketwatch/store")
    findings = evaluator.evaluate(ruleset.rules, now, stale_after=timedelta(seconds=60))

Evaluation is a pure function of (rules, store, now): `now` is an argument, never the clock, and
what an Evaluator keeps between calls (newest times, stall runs) only saves reading: the findings
are those of a fresh Evaluator.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial, reduce
from pathlib import Path
from typing import TypeGuard

from pyspark.sql import DataFrame, SparkSession

from rules.findings import Finding
from rules.kinds.base import RuleBase
from rules.kinds.churn import ChurnRule
from rules.kinds.stall import StallRule
from rules.tables import TABLES, Table
from spark.churn_sets import ChurnSets, SplitSample, keeps_sets
from spark.codegen import WHOLE_STAGE_MIN_ROWS, whole_stage_for
from spark.kinds import KINDS
from spark.kinds.churn import plan_churn_from_sets
from spark.kinds.common import OUTPUT_COLUMNS, lookback, one_row_per_series
from spark.kinds.fused import fusable, plan_fused
from spark.kinds.stall import plan_stall, plan_stall_from_runs
from spark.lazy_frames import OnFirstUse
from spark.newest import reads_newest_only
from spark.newest_state import NewestTimes, Wanted, collect_parts
from spark.render import to_finding
from spark.stall_runs import StallRuns, keeps_runs
from spark.store_reader import as_utc, partition_paths, read_at, read_window, rows_at, window_rows
from spark.views import VIEW_DEFS, compute_view

log = logging.getLogger(__name__)

# Below this many rows in a table's lookback, the extra job that finds the newest sample times
# costs more than it saves (a few cycles of a small cluster, diagnose's samples, the rule tests).
# At 16k queue series (336k rows per table) pruning took the evaluation from 10.3 s to 8.2 s.
PRUNE_MIN_ROWS = 50_000
# Up to this many rows in a table's window, it is read as one partition and no plan above it
# shuffles: each rule becomes one task of a single-stage job instead of a few stages of two tasks.
# Measured at 16k queue series (0.3-0.5M rows per table): the collect took 2.4-2.8 s instead of
# 3.4-3.7 s, and with a few hundred rows (diagnose, small clusters) 2.3-2.6 s instead of 3.3-4.1 s.
ONE_PARTITION_MAX_ROWS = 1_000_000


_HASHES = "_h1 long, _h2 int"
# After the stall runs or churn sets fail to update, whole windows judge those rules for this many
# more cycles before the state is rebuilt: a failure that repeats (the driver's memory) would
# otherwise add a rebuild attempt to every cycle (at 1.6M series, ~30 s each).
RETRY_AFTER_CYCLES = 10


def _knows_quiet(rule: RuleBase) -> TypeGuard[StallRule]:
    """A stall rule judging each series on its own: its prefilter can use the quiet series (plan_stall)."""
    return isinstance(rule, StallRule) and not rule.reduces


def needed(rule: RuleBase, stale_after: timedelta) -> timedelta:
    """How far before `now` a rule reads: the stale lookback, or its `over:` window plus stale_after."""
    return max(lookback(stale_after), rule.window() + stale_after)


def _sources(name: str) -> tuple[str, ...]:
    """The stored tables a table or view name reads."""
    return VIEW_DEFS[name].sources if name in VIEW_DEFS else (name,)


def _table_starts(by_table: Mapping[str, Sequence[RuleBase]], now: datetime,
                  stale_after: timedelta) -> dict[str, datetime]:
    """Where each stored table's window starts: the earliest any rule (or view) reading it needs."""
    starts: dict[str, datetime] = {}
    for name, table_rules in by_table.items():
        start = now - max(needed(r, r.stale_after or stale_after) for r in table_rules)
        for source in _sources(name):
            starts[source] = min(start, starts.get(source, start))
    return starts


def window_starts(rules: Sequence[RuleBase], now: datetime, stale_after: timedelta) -> dict[str, datetime]:
    """Where each stored table's window starts when `rules` are evaluated at `now`."""
    by_table: dict[str, list[RuleBase]] = defaultdict(list)
    for rule in rules:
        by_table[rule.table].append(rule)
    return _table_starts(by_table, as_utc(now), stale_after)


class Evaluator:
    """Reads each table's window once, plans every rule on it, collects all findings at once."""

    def __init__(self, spark: SparkSession, store_root: str | Path, prune_min_rows: int | None = PRUNE_MIN_ROWS,
                 one_partition_max_rows: int = ONE_PARTITION_MAX_ROWS, stall_runs: bool = True,
                 whole_stage_min_rows: int | None = WHOLE_STAGE_MIN_ROWS) -> None:
        self.spark = spark
        self.store_root = Path(store_root)
        # Newest-sample pruning (spark/newest.py) for tables whose window holds at least this many
        # rows; None turns it off.
        self.prune_min_rows = prune_min_rows
        # Tables whose window holds at most this many rows are read as one partition; 0 never.
        self.one_partition_max_rows = one_partition_max_rows
        self._newest = NewestTimes(spark, store_root)
        # Stall rules on tables with newest times kept are judged from runs kept between cycles.
        self.stall_runs = stall_runs
        self._runs = StallRuns(spark, store_root)
        # Churn rules on big tables are judged from member sets kept per store file.
        self._sets = ChurnSets(spark, store_root)
        # Cycles left before the runs and sets are rebuilt after they failed to update.
        self._paused = 0
        # Operators are compiled from this many rows in the largest window (spark/codegen.py); None
        # leaves the session's setting alone.
        self.whole_stage_min_rows = whole_stage_min_rows
        # This cycle's reads of tables at their newest times, shared by the table's rules and views.
        self._read_at: dict[tuple[str, tuple[datetime, ...]], DataFrame] = {}

    def plan(self, rules: Sequence[RuleBase], now: datetime, stale_after: timedelta) -> DataFrame | None:
        """The union of every rule's output for `now`, or None when no rule has data to read."""
        now = as_utc(now)
        self._read_at = {}
        by_table: dict[str, list[RuleBase]] = defaultdict(list)
        for rule in rules:
            by_table[rule.table].append(rule)
        windows, present = self._windows(by_table, now, stale_after)
        live = {name: rs for name, rs in by_table.items() if _sources(name)[0] in present}
        # No samples yet (a fresh store, a collector not configured): nothing to find, and nothing
        # to call no_data either, since no series was ever seen in the window.
        wanted = [Wanted(name, rs[0].table_def.key, start) for name, rs in live.items()
                  if (start := self._newest_from(_sources(name)[0], rs, now, stale_after)) is not None]
        names = {want.name for want in wanted}
        churn = [r for rs in live.values() for r in rs if keeps_sets(r) and self._big(r.table, now - r.window(), now)]
        times, runs, sets = self._incremental(wanted, [r for name, rs in live.items() if name in names for r in rs],
                                              churn, now, stale_after)
        outputs: list[DataFrame] = []
        for name, table_rules in live.items():
            newest = [r for r in table_rules if name in times and reads_newest_only(r)]
            if newest or any(r in runs for r in table_rules):
                at_newest = self._frame(name, self._at_newest(name, windows, times[name]))
                if self._one_row_each(name, times[name]):
                    at_newest = one_row_per_series(at_newest)
                outputs.extend(self._plan_table(newest, at_newest, now, stale_after, False))
                outputs.extend(self._plan_runs([r for r in runs if r in table_rules], at_newest, now, stale_after))
            counted = self._plan_sets([r for r in sets if r in table_rules], now, stale_after, outputs)
            rest = [r for r in table_rules if r not in newest and r not in runs and r not in counted]
            if rest:
                outputs.extend(self._plan_table(rest, self._frame(name, windows), now, stale_after, name in times))
        if not outputs:
            return None
        return reduce(DataFrame.unionByName, outputs).select(*OUTPUT_COLUMNS)

    def _newest_from(self, table: str, rules: Sequence[RuleBase], now: datetime,
                     stale_after: timedelta) -> datetime | None:
        """From when the newest sample times of `table` are worth keeping (spark/newest_state.py): the
        start of its newest-only rules' lookback and of its stall rules' windows, when that holds at
        least prune_min_rows rows of `table`; None when there is nothing to prune."""
        starts = [now - lookback(r.stale_after or stale_after) for r in rules if reads_newest_only(r)]
        starts += [now - r.window() - (r.stale_after or stale_after) for r in rules if _knows_quiet(r)]
        if self.prune_min_rows is None or not starts:
            return None
        start = min(starts)
        if self.prune_min_rows > 0 and window_rows(self.store_root, TABLES[table], start, now) < self.prune_min_rows:
            return None
        return start

    @staticmethod
    def _frame(name: str, windows: Mapping[str, DataFrame]) -> DataFrame:
        return compute_view(name, windows) if name in VIEW_DEFS else windows[name]

    def _at_newest(self, name: str, windows: Mapping[str, DataFrame], times: Sequence[datetime]) -> dict[str, DataFrame]:
        """The source windows of `name` cut down to `times`, read from the files holding those times
        only; one partition each when that is at most one_partition_max_rows rows (at 160k queue
        series one cycle of a table is 160k rows, its window 3-5M): the rules judging newest samples
        then run without a shuffle."""
        frames = {}
        for source in _sources(name):
            if source in windows:
                key = (source, tuple(sorted(times)))
                if key not in self._read_at:
                    rows = rows_at(self.store_root, TABLES[source], times)
                    self._read_at[key] = read_at(self.spark, self.store_root, TABLES[source], times,
                                                 one_partition=0 < rows <= self.one_partition_max_rows)
                frames[source] = self._read_at[key]
        return frames

    def _one_row_each(self, name: str, times: Sequence[datetime]) -> bool:
        """Whether the table `name` holds exactly one row per series at `times`: every series has a row
        there (its newest), so as many rows in the files holding them as series means one each. A row
        written twice, a series with rows at two of the times, or a file holding other times too makes
        the counts differ: the plans then keep each series' newest row."""
        return (name in TABLES
                and rows_at(self.store_root, TABLES[name], times) == self._newest.series(name))

    def _plan_table(self, table_rules: Sequence[RuleBase], frame: DataFrame, now: datetime,
                    stale_after: timedelta, newest_known: bool) -> list[DataFrame]:
        """The plans of the rules reading one table (or view) frame; threshold rules fused per stale_after.

        `newest_known`: this cycle's newest times of the frame's series are kept (stall rules use them).
        """
        outputs: list[DataFrame] = []
        fused: dict[timedelta, list[RuleBase]] = defaultdict(list)
        for rule in table_rules:
            if fusable(rule):
                fused[rule.stale_after or stale_after].append(rule)
        for stale, group in fused.items():
            try:
                outputs.append(plan_fused(group, frame, now, stale))
            except Exception:
                log.exception("rules %s: cannot fuse their plans; planning them one by one",
                              ", ".join(r.alert for r in group))
                outputs.extend(self._plan_each(group, frame, now, stale_after, False))
        outputs.extend(self._plan_each([r for r in table_rules if not fusable(r)], frame, now, stale_after,
                                       newest_known))
        return outputs

    def _plan_each(self, rules: Sequence[RuleBase], frame: DataFrame, now: datetime,
                   stale_after: timedelta, newest_known: bool) -> list[DataFrame]:
        """Each rule's own plan; a rule Spark cannot plan is logged and skipped."""
        outputs = []
        for rule in rules:
            stale = rule.stale_after or stale_after
            try:
                if newest_known and _knows_quiet(rule):
                    output = plan_stall(rule, frame, now, stale, quiet=self._quiet(rule, now, stale))
                else:
                    output = KINDS[rule.kind](rule, frame, now, stale)
                outputs.append(output)
            except Exception:
                # One rule Spark cannot plan must not blind every other rule of the cycle.
                log.exception("rule %s: cannot build its plan; skipped this cycle", rule.alert)
        return outputs

    def _big(self, table: str, start: datetime, now: datetime) -> bool:
        """Whether `table` holds enough rows in [start, now] for incremental state to pay (prune_min_rows)."""
        return self.prune_min_rows is not None and (
            self.prune_min_rows <= 0 or window_rows(self.store_root, TABLES[table], start, now) >= self.prune_min_rows)

    def _incremental(self, wanted: Sequence[Wanted], rules: Sequence[RuleBase], churn: Sequence[ChurnRule],
                     now: datetime, stale_after: timedelta
                     ) -> tuple[dict[str, list[datetime]], list[StallRule], list[ChurnRule]]:
        """The newest times of `wanted`, the stall rules among `rules` judged from their runs this cycle
        (spark/stall_runs.py) and the `churn` rules judged from their kept sets (spark/churn_sets.py),
        all brought up to `now`: they read the new files in two Spark jobs."""
        chosen = [r for r in rules if self.stall_runs and isinstance(r, StallRule) and keeps_runs(r)]
        if self._paused:
            self._paused -= 1
            chosen, churn = [], []
        newest_parts, newest_finish = self._newest.prepare(wanted, now) if wanted else ([], lambda _: {})
        # Two jobs: in one, every newest-times row (one per series and table) also carried the
        # runs' dozen columns as nulls, 8 bytes each in Arrow; the first evaluation at 1.6M series
        # then collected 1.1 GiB, past spark.driver.maxResultSize.
        try:
            runs_parts, runs_finish = self._runs.prepare([(r, r.stale_after or stale_after) for r in chosen], now)
            self._sets.catch_up(churn, now)
            sets_parts, sets_finish = self._sets.prepare(churn, now)
            found = collect_parts(runs_parts + sets_parts)
            current = set(runs_finish(found)) | set(sets_finish(found))
            return (newest_finish(collect_parts(newest_parts)), [r for r in chosen if r.alert in current],
                    [r for r in churn if r.alert in current])
        except Exception:
            # The whole-window plans still judge these rules; the runs and sets start over next cycle.
            log.exception("stall rules %s, churn rules %s: cannot bring their kept state up to date; judging "
                          "them from the whole window for %d cycles, then rebuilding it",
                          ", ".join(r.alert for r in chosen) or "none", ", ".join(r.alert for r in churn) or "none",
                          RETRY_AFTER_CYCLES + 1)
            self._paused = RETRY_AFTER_CYCLES
            self._runs = StallRuns(self.spark, self.store_root)
            self._sets = ChurnSets(self.spark, self.store_root)
            return (self._newest.times(wanted, now) if wanted else {}), [], []

    def _plan_sets(self, rules: Sequence[ChurnRule], now: datetime, stale_after: timedelta,
                   outputs: list[DataFrame]) -> list[ChurnRule]:
        """Append the plans of churn rules from their kept sets to `outputs`; returns the rules planned."""
        planned = []
        for rule in rules:
            stale = rule.stale_after or stale_after
            try:
                groups = self._sets.candidates(rule, now, stale)
            except SplitSample as exc:
                log.info("churn rule %s: %s; judged from the whole window this cycle", rule.alert, exc)
                continue
            try:
                if groups.num_rows:
                    columns = [c for c in groups.column_names if c not in ("_h1", "_h2", "ts", "_set")]
                    frame = self.spark.createDataFrame(groups.select(columns))
                    outputs.append(plan_churn_from_sets(rule, frame, now, stale))
            except Exception:
                log.exception("rule %s: cannot build its plan; skipped this cycle", rule.alert)
            planned.append(rule)
        return planned

    def _plan_runs(self, rules: Sequence[StallRule], at_newest: DataFrame, now: datetime,
                   stale_after: timedelta) -> list[DataFrame]:
        """Plans of stall rules from their runs and each series' newest sample (plan_stall_from_runs)."""
        outputs = []
        for rule in rules:
            stale = rule.stale_after or stale_after
            try:
                found = self._runs.candidates(rule, now, stale)
                candidates = self.spark.createDataFrame(found if found.num_rows else [], f"{_HASHES}, _since timestamp")
                outputs.append(plan_stall_from_runs(rule, at_newest, now, stale, candidates))
            except Exception:
                log.exception("rule %s: cannot build its plan; skipped this cycle", rule.alert)
        return outputs

    def _quiet(self, rule: StallRule, now: datetime, stale_after: timedelta) -> DataFrame:
        """The series of the rule's table with their newest sample in its window but not since `over`."""
        table = self._newest.quiet(rule.table, now - rule.window() - stale_after, now - rule.over)
        return self.spark.createDataFrame(table if table.num_rows else [], _HASHES)

    def _windows(self, by_table: dict[str, list[RuleBase]], now: datetime,
                 stale_after: timedelta) -> tuple[Mapping[str, DataFrame], set[str]]:
        """Each table read once, over the longest window any rule (or view) reading it needs.

        Returns the windows by table name, each read when first used (a table whose rules all read
        its newest times only needs none), and the names of the tables that have samples in them.
        """
        starts = _table_starts(by_table, now, stale_after)
        view_sources = {source for name in by_table if name in VIEW_DEFS for source in VIEW_DEFS[name].sources}
        windows = OnFirstUse()
        present: set[str] = set()
        for name, start in starts.items():
            table = TABLES[name]
            if partition_paths(self.store_root, table, start, now):
                present.add(name)
            elif name not in view_sources:
                continue
            # A view's optional source with no files still needs a typed (empty) frame to join.
            windows.add(name, partial(self._read_window, table, start, now))
        return windows, present

    def _read_window(self, table: Table, start: datetime, now: datetime) -> DataFrame:
        small = (self.one_partition_max_rows > 0
                 and window_rows(self.store_root, table, start, now) <= self.one_partition_max_rows)
        return read_window(self.spark, self.store_root, table, start, now, one_partition=small)

    def _largest_window(self, rules: Sequence[RuleBase], now: datetime, stale_after: timedelta) -> int:
        """Rows in the largest table window `rules` read at `now` (from Parquet footers)."""
        return max((window_rows(self.store_root, TABLES[name], start, now)
                    for name, start in window_starts(rules, now, stale_after).items()), default=0)

    @contextmanager
    def planned(self, rules: Sequence[RuleBase], now: datetime, stale_after: timedelta) -> Iterator[DataFrame | None]:
        """The cycle's plan (or None), under the session settings it is collected with (spark/codegen.py)."""
        now = as_utc(now)
        rows_read = self._largest_window(rules, now, stale_after) if self.whole_stage_min_rows is not None else 0
        try:
            with whole_stage_for(self.spark, rows_read, self.whole_stage_min_rows):
                yield self.plan(rules, now, stale_after)
        finally:
            self._read_at.clear()

    def evaluate(self, rules: Sequence[RuleBase], now: datetime, stale_after: timedelta) -> list[Finding]:
        """Findings of `rules` at `now`; series older than `stale_after` (unless a rule sets its own) are no_data."""
        with self.planned(rules, now, stale_after) as plan:
            # One collect per cycle: every Spark job costs ~0.3 s whatever its size (DESIGN §10).
            rows = plan.collect() if plan is not None else []
        by_name = {r.alert: r for r in rules}
        findings = [to_finding(by_name[row["rule"]], row.asDict()) for row in rows]
        findings.sort(key=lambda f: (f.rule, sorted(f.labels.items())))
        return findings
