"""Differential tests of the evaluation engine (issue 33, DESIGN §10): incremental == reference at every cycle.

Generated histories (tests/spark/histories.py: gaps, a pause of every collector, series appearing and
disappearing, counter resets, nulls, cycles committed late across clusters) are committed to one
store in commit order. At each evaluation point (after some commits, `now` a few seconds past the
newest committed ts; inside the pause, `now` minutes past it with nothing new), the Evaluator that
lives across cycles (spark.evaluate) and the reference over the full windows (spark.reference) judge
every built-in rule over the same store, and must agree on every finding: rule, labels, severity,
no_data and threshold exactly, value within 1e-9 relative. A daemon restart is a new Evaluator from
some evaluation point on, loading the state the one before saved (spark/saved_state.py; saves
also run in the background every 5 minutes of the histories' time), compared the same way. Many histories share one store (a history is a
cluster, and every rule keys by cluster), so each point costs two Spark jobs whatever their number.

    RW_DIFF_PROFILE=long .venv/bin/python -m pytest tests/spark/test_incremental.py   # more seeds and cycles
    RW_DIFF_SEEDS=2 .venv/bin/python -m pytest tests/spark/test_incremental.py        # replay one seed
"""

from __future__ import annotations

import itertools
import math
import os
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from daemon.store.writer import ParquetStore
from rules.findings import Finding
from rules.kinds.base import RuleBase
from rules.loader import BUILTIN_DIR, load_rule_files
from spark.evaluate import Evaluator
from spark.reference import evaluate_reference
from spark.saved_state import state_directory
from spark.sizing import Sizing
from tests.spark.histories import INTERVAL, SCENARIOS, Cycle, cycle_of, describe, generate
from tests.spark.history_daemon import DAEMON_SCENARIOS

BIG_CLUSTER = Sizing(one_partition_max_rows=0, partition_rows=40, generated_min_rows=0)
STALE = timedelta(seconds=60)  # 2 x the 30 s collect interval, the daemon's default (DESIGN §7)
REL_TOL = 1e-9


@dataclass(frozen=True)
class Profile:
    """How much history one run generates and how often it is judged."""

    seeds: tuple[int, ...]
    histories: int
    cycles: int
    evaluations: int  # evaluation points spread over each seed's time (besides the ones below)
    straddles: int  # late commits with an evaluation just before and just after them
    restarts: int  # daemon restarts per seed (a new Evaluator)
    timeout_s: int  # per seed: its walk runs in the setup of its first test


PROFILES = {
    # ~21 points, each two evaluations of the 31 built-in rules over 4 histories and the daemon's stream.
    "default": Profile(seeds=(20261127,), histories=4, cycles=40, evaluations=18, straddles=3, restarts=1,
                       timeout_s=1800),
    "long": Profile(seeds=(20261127, 1, 2, 3), histories=6, cycles=64, evaluations=64, straddles=8, restarts=2,
                    timeout_s=3600),
}
PROFILE_NAME = os.environ.get("RW_DIFF_PROFILE", "default")
PROFILE = PROFILES[PROFILE_NAME]
# RW_DIFF_SEEDS=3,17 replays those seeds with the profile's sizes (a failure message names its seed).
SEEDS = tuple(int(s) for s in os.environ["RW_DIFF_SEEDS"].split(",")) if os.environ.get("RW_DIFF_SEEDS") else PROFILE.seeds
# A seed's walk runs in its first test's setup: 876 s (default profile, 41 rules) on a loaded 2-core
# machine, past the suite's timeout; the profile's own is the hang guard.
pytestmark = [pytest.mark.spark, pytest.mark.timeout(PROFILE.timeout_s)]

# Built-in rules no history can make fire, with why. Every table the pack reads is generated, so none.
NOT_GENERATED: dict[str, str] = {}


@dataclass(frozen=True)
class Point:
    """One evaluation: after `commits` commits, at `now`; `restart` starts a new Evaluator first."""

    commits: int
    now: datetime
    restart: bool = False
    in_pause: bool = False


@dataclass
class Walk:
    """What one seed's walk found: disagreements, and what the reference fired, so vacuity can be judged."""

    seed: int
    cycles: list[Cycle]
    points: list[Point]
    mismatches: list[str] = field(default_factory=list)
    mismatches_after_restart: list[str] = field(default_factory=list)
    fired: dict[str, set[str]] = field(default_factory=dict)  # rule -> severities it fired with
    resolved: set[str] = field(default_factory=set)  # rules with an instance that fired and later was gone
    no_data: set[str] = field(default_factory=set)
    late_commits: int = 0  # cycles committed after a newer cycle (of another cluster)
    behind_evaluated: int = 0  # cycles committed after an evaluation at a later `now`
    accounts: list[str] = field(default_factory=list)  # Evaluator.last_cycle after each evaluation

    def story(self) -> str:
        """The seed's histories, for a failure message."""
        return "\n".join(describe(self.seed, PROFILE.histories, PROFILE.cycles))


def builtin_rules() -> list[RuleBase]:
    """The built-in rule pack (rules/builtin), as the daemon loads it."""
    return list(load_rule_files([BUILTIN_DIR]).rules)


def evaluation_points(cycles: Sequence[Cycle], profile: Profile, rng: random.Random) -> list[Point]:
    """Where to evaluate: about profile.evaluations points spread over the history's time, one just before
    and one just after each of a few late commits, every 90 s inside a pause of all collectors, and
    profile.restarts daemon restarts at points in the middle half."""
    span = cycles[-1].ts - cycles[0].ts
    spacing = span / profile.evaluations
    late, newest = [], cycles[0].ts
    for n, cycle in enumerate(cycles):
        if cycle.ts < newest:
            late.append(n)
        newest = max(newest, cycle.ts)
    straddled = rng.sample(late, min(profile.straddles, len(late)))
    around = {n for k in straddled for n in (k, k + 1)}  # after the commit before it, and after it
    points: list[Point] = []
    due = cycles[0].ts + spacing * rng.uniform(0.3, 1.0)
    newest = cycles[0].ts
    for n, cycle in enumerate(cycles, start=1):
        newest = max(newest, cycle.ts)
        if n == len(cycles) or newest >= due or n in around:
            # The daemon's clock: a few seconds past the newest cycle, and never back (after a late commit
            # the newest ts has not moved, the clock has).
            now = newest + timedelta(milliseconds=rng.randint(500, 5000))
            if points and now <= points[-1].now:
                now = points[-1].now + timedelta(milliseconds=rng.randint(500, 3000))
            points.append(Point(n, now))
            due = max(due, newest + spacing * rng.uniform(0.6, 1.4))
        following = cycles[n].ts if n < len(cycles) else None
        if following is not None and following - newest > 4 * INTERVAL:
            # Nothing was collected for minutes: `now` moves on alone (series go stale, then absent).
            moment = newest + timedelta(seconds=90)
            while moment < following:
                points.append(Point(n, moment, in_pause=True))
                moment += timedelta(seconds=90)
    # Restarts: with two or more, one right after the pause (the daemon was down with the collectors).
    middle = list(range(len(points) // 4, len(points) * 3 // 4))
    after_pause = [i + 1 for i in middle if points[i].in_pause and not points[i + 1].in_pause]
    chosen = set(after_pause[:1] if profile.restarts > 1 else [])
    chosen |= set(rng.sample([i for i in middle if i not in chosen], profile.restarts - len(chosen)))
    return [Point(p.commits, p.now, i in chosen, p.in_pause) for i, p in enumerate(points)]


def _key(finding: Finding) -> tuple[str, tuple[tuple[str, str], ...]]:
    return finding.rule, tuple(sorted(finding.labels.items()))


def _show(finding: Finding | None) -> str:
    if finding is None:
        return "(no finding)"
    return (f"severity={finding.severity} value={finding.value!r} threshold={finding.threshold!r} "
            f"no_data={finding.no_data}")


def _same(a: Finding, b: Finding) -> bool:
    if (a.severity, a.no_data, a.threshold) != (b.severity, b.no_data, b.threshold):
        return False
    if a.value is None or b.value is None:
        return a.value is None and b.value is None
    return math.isclose(a.value, b.value, rel_tol=REL_TOL, abs_tol=0.0)


def differences(incremental: Sequence[Finding], reference: Sequence[Finding]) -> list[tuple[str, str, str]]:
    """(rule and labels, incremental finding, reference finding) for every finding the two paths disagree on."""
    out = []
    mine: dict[Any, Finding] = {}
    theirs: dict[Any, Finding] = {}
    for found, index, name in ((incremental, mine, "incremental"), (reference, theirs, "reference")):
        for finding in found:
            if _key(finding) in index:
                out.append((_label(finding), f"{name} has two findings for it", _show(finding)))
            index[_key(finding)] = finding
    for key in sorted(set(mine) | set(theirs)):
        a, b = mine.get(key), theirs.get(key)
        if a is None or b is None or not _same(a, b):
            out.append((_label(a or b), _show(a), _show(b)))
    return out


def _label(finding: Any) -> str:
    return f"{finding.rule} {{{', '.join(f'{k}={v}' for k, v in sorted(finding.labels.items()))}}}"


def walk(spark: Any, root: Path, seed: int, profile: Profile) -> Walk:
    """Commit the seed's cycles in order, and at every evaluation point compare the kept Evaluator with the reference."""
    cycles = generate(seed, profile.histories, profile.cycles)
    points = evaluation_points(cycles, profile, random.Random(seed + 1))
    result = Walk(seed, cycles, points)
    store = ParquetStore(root)
    rules = builtin_rules()
    saved = state_directory(root)
    evaluator = Evaluator(spark, root, saved_state=saved)
    generation, restarted_at = 0, None
    committed = 0
    newest: datetime | None = None
    fired_since: set[Any] = set()  # instances that fired and have not resolved since
    for number, point in enumerate(points, start=1):
        while committed < point.commits:
            cycle = cycles[committed]
            if newest is not None and cycle.ts < newest:
                result.late_commits += 1
            if number > 1 and cycle.ts < points[number - 2].now:
                result.behind_evaluated += 1  # an evaluation already judged a `now` past this cycle
            newest = cycle.ts if newest is None else max(newest, cycle.ts)
            store.append_all(cycle.tables, cycle.ts)
            committed += 1
        if point.restart:
            # The restarted daemon runs its cycles as a big cluster's run (generated code, frames
            # spread over partitions); the first evaluator's as a small cluster's: both are compared.
            evaluator.save()
            evaluator = Evaluator(spark, root, BIG_CLUSTER, saved_state=saved)
            generation, restarted_at = generation + 1, number
        last = cycles[point.commits - 1]
        where = (f"evaluation {number}/{len(points)} at now={point.now.isoformat()}"
                 f"{' (inside the pause: nothing new for minutes)' if point.in_pause else ''}, after commit "
                 f"{point.commits}/{len(cycles)} (cluster {last.cluster}, cycle {cycle_of(last.ts)}, "
                 f"ts {last.ts.isoformat()}), evaluator #{generation}"
                 f"{f' (new since evaluation {restarted_at})' if restarted_at else ' (kept since the start)'}"
                 f", seed {seed}")
        try:
            incremental = evaluator.evaluate(rules, point.now, STALE)
            reference = evaluate_reference(spark, root, rules, point.now, STALE)
        except Exception as exc:
            exc.add_note(where)
            raise
        # The engine's own account of the cycle (spark/evaluate.py), when it gives one: folded or rebuilt.
        account = getattr(evaluator, "last_cycle", "")
        result.accounts.append(account)
        for label, mine, theirs in differences(incremental, reference):
            text = (f"{where}{f' [{account}]' if account else ''}:\n    {label}\n"
                    f"      incremental: {mine}\n      reference:   {theirs}")
            (result.mismatches_after_restart if generation else result.mismatches).append(text)
        firing = set()
        for finding in reference:
            if finding.no_data:
                result.no_data.add(finding.rule)
            elif finding.severity is not None:
                result.fired.setdefault(finding.rule, set()).add(finding.severity)
                firing.add(_key(finding))
        # An instance that fired resolves when a later evaluation has no finding for it (no_data is not that).
        gone = fired_since - {_key(f) for f in reference}
        result.resolved |= {rule for rule, _ in gone}
        fired_since = (fired_since - gone) | firing
    return result


@pytest.fixture(scope="module", params=SEEDS, ids=lambda seed: f"{PROFILE_NAME}-seed{seed}")
def walked(request: pytest.FixtureRequest, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walk]:
    """One seed's walk through its histories, shared by the tests below (it is the expensive part)."""
    root = tmp_path_factory.mktemp(f"diff-{request.param}") / "store"
    yield walk(spark, root, request.param, PROFILE)


def _report(found: list[str], walked: Walk) -> str:
    shown = "\n".join(found[:12])
    more = f"\n  ... and {len(found) - 12} more" if len(found) > 12 else ""
    return f"{len(found)} findings differ (seed {walked.seed}):\n{shown}{more}\nhistories:\n{walked.story()}"


def test_kept_evaluator_agrees_with_reference_at_every_cycle(walked: Walk) -> None:
    assert not walked.mismatches, _report(walked.mismatches, walked)


def test_every_cycle_is_judged_from_kept_state(walked: Walk) -> None:
    # A fold that fails falls back to the reference path, whose findings agree by construction: the
    # tests above would pass with the kept state never used.
    failed = [(n, account) for n, account in enumerate(walked.accounts, start=1) if account.startswith("failed")]
    assert not failed, f"evaluations judged from the full window after a failed fold (seed {walked.seed}): {failed}"


def test_restarted_evaluator_agrees_with_reference(walked: Walk) -> None:
    assert any(p.restart for p in walked.points)
    assert any(a.startswith("loaded the saved state; folded") for a in walked.accounts), \
        f"no restart loaded the saved state: {sorted(set(walked.accounts))}"
    big = [a for a in walked.accounts if re.fullmatch(r"folded \d+ cycle\(s\) in \d+ partitions, generated code", a)]
    assert big, f"no steady cycle ran as a big cluster's: {sorted(set(walked.accounts))}"
    assert not walked.mismatches_after_restart, _report(walked.mismatches_after_restart, walked)


def test_every_builtin_rule_fires_and_resolves_somewhere(walked: Walk) -> None:
    rules = {r.alert for r in builtin_rules()} - set(NOT_GENERATED)
    driven: dict[str, list[str]] = {}
    for scenarios in (SCENARIOS, DAEMON_SCENARIOS):
        for kind, (names, _, _) in scenarios.items():
            for name in names:
                driven.setdefault(name, []).append(kind)
    assert not rules - set(driven), f"no scenario of tests/spark/histor*.py drives {sorted(rules - set(driven))}"
    silent = [f"{rule} (scenarios {', '.join(driven[rule])})" for rule in sorted(rules - set(walked.fired))]
    assert not silent, f"never fired in the reference (seed {walked.seed}): {silent}\nhistories:\n{walked.story()}"
    kept = sorted(rules - walked.resolved)
    assert not kept, f"fired but never resolved (seed {walked.seed}): {kept}\nhistories:\n{walked.story()}"


def counter_resets(cycles: Sequence[Cycle]) -> int:
    """How many times a %DLQ% queue's max_offset (the counter DeadLetterQueueGrowing reads) went down."""
    series: dict[tuple[Any, ...], list[tuple[datetime, int]]] = {}
    for cycle in cycles:
        for row in cycle.tables.get("topic_queue", []):
            if row["topic_kind"] == "dlq":
                key = (row["cluster"], row["topic"], row["broker"], row["queue_id"])
                series.setdefault(key, []).append((row["ts"], row["max_offset"]))
    values = [[offset for _, offset in sorted(samples)] for samples in series.values()]
    return sum(1 for offsets in values for before, after in itertools.pairwise(offsets) if after < before)


def test_histories_hold_late_commits_a_pause_resets_and_stale_series(walked: Walk) -> None:
    assert walked.late_commits > 0, "no cycle was committed after a newer cycle of another cluster"
    assert walked.behind_evaluated > 0, "no cycle was committed after an evaluation at a later time"
    assert all(a.now < b.now for a, b in itertools.pairwise(walked.points)), "the evaluation clock went back"
    assert any(p.in_pause for p in walked.points), "no evaluation with minutes of nothing new"
    assert walked.no_data, "no series ever went stale (no_data)"
    assert counter_resets(walked.cycles) > 0, "no counter reset"
