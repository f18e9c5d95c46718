"""The built-in rules and views on exactly the diagnose samples: a temp Parquet store, one Spark job.

Spark takes seconds to start (DESIGN §10), so `SparkStarter` starts it in a background thread
while the samples are taken. Findings are the rules' conditions at the last sample, before any
`for:` hold: diagnose reports what is true now, the daemon decides when to page.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from daemon.collectors.group_sample import Sample, Target
from daemon.store.writer import ParquetStore
from rules.findings import Finding
from rules.kinds.base import RuleBase

log = logging.getLogger(__name__)


# A JVM that lives for one evaluation gains nothing from C2: C1 only starts the session in ~0.4 s
# less wait after sampling and evaluates ~1 s sooner (bench/diagnose.py). Nor from G1's concurrent
# threads: the serial collector planned and collected ~0.3 s sooner (4.8-5.0 s vs 5.0-5.3 s cold).
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def session_conf() -> dict[str, str]:
    """Spark settings for diagnose's one evaluation: interpreted operators, C1 only, Spark's classes
    from the class-data-sharing archive (daemon/diagnose/class_archive.py) once a run has written it."""
    from daemon.diagnose.class_archive import java_options

    # One evaluation over a few hundred rows: generating and compiling Java code for every operator
    # costs more than interpreting them. Measured cold (2 cores, load ~4): collect 7.8 s with
    # codegen, 5.6 s without; warm 3.1 s vs 1.6 s. Applies only when diagnose starts the session.
    from spark.sizing import INTERPRETED

    return {**INTERPRETED, "spark.driver.extraJavaOptions": f"{SHORT_LIVED_JVM} {java_options(options=SHORT_LIVED_JVM)}".strip()}


class SparkStarter:
    """Starts (or reuses) the process's SparkSession in a thread; `session()` waits for it.

    With `rehearsal` (a first sample, the rules, and when sampling ends on the monotonic clock),
    the thread then plans those rules on that sample without running them (see `rehearse`).
    """

    def __init__(self, master: str = "local[2]",
                 rehearsal: tuple[Sample, Sequence[RuleBase], float] | None = None) -> None:
        self._master = master
        self._rehearsal = rehearsal
        self._session: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="rocketwatch-spark-start", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            from spark.session import get_session

            self._session = get_session(self._master, session_conf())
        except BaseException as exc:  # reported to the operator by session(), not lost in a thread
            self._error = exc
            return
        if self._rehearsal is not None:
            sample, rules, sampling_ends = self._rehearsal
            try:
                rehearse(self._session, rules, sample, until=sampling_ends)
            except Exception:  # only a warm-up: the real evaluation reports its own errors
                log.debug("rehearsal plan failed", exc_info=True)

    def session(self) -> Any:
        """The SparkSession once started; raises RuntimeError with the cause if it could not start."""
        self._thread.join()
        if self._error is not None:
            raise RuntimeError(f"Spark could not start ({self._master}): {self._error}") from self._error
        return self._session


def builtin_rules() -> list[RuleBase]:
    """The built-in rule pack (rules/builtin)."""
    from rules.loader import BUILTIN_DIR, load_rule_files

    return list(load_rule_files([BUILTIN_DIR]).rules)


def judgeable(rules: Sequence[RuleBase], span: timedelta) -> list[RuleBase]:
    """The rules samples spanning `span` can judge: those whose `over:` window the span covers.

    A growth or stall rule over 10 minutes compares the newest sample with one from minutes ago;
    five samples a second apart hold no such sample, so its answer would be noise. (Spark time
    is the cost of diagnose: every rule left out is planning saved.)
    """
    return [r for r in rules if r.window() <= span and r.table != "collector_health"]


def rehearse(session: Any, rules: Sequence[RuleBase], sample: Sample, until: float) -> None:
    """Plan `rules` on one sample through to physical plans, without running them, table by table
    until `until` (monotonic clock): the JVM then has the analyzer, optimizer and planner code warm
    for the real evaluation."""
    # Measured with bench/diagnose.py: a JVM that has never planned the pack takes ~2.4 s to plan it
    # and 2.0 s to collect it; after a rehearsal, 1.8 s and 1.7 s (median 9.1 -> 7.8 s in all).
    from spark.reference import plan_reference

    by_table: dict[str, list[RuleBase]] = {}
    for rule in rules:
        by_table.setdefault(rule.table, []).append(rule)
    with tempfile.TemporaryDirectory(prefix="rocketwatch-rehearsal-") as tmp:
        write_samples(Path(tmp), [sample])
        # Tables with the most rules first: their plans exercise the most code.
        for table_rules in sorted(by_table.values(), key=len, reverse=True):
            if time.monotonic() >= until:
                return
            plan = plan_reference(session, Path(tmp), table_rules, sample.ts, timedelta(seconds=1))
            if plan is not None and hasattr(plan, "_jdf"):  # classic sessions; Connect plans on the server
                plan._jdf.queryExecution().executedPlan()


def write_samples(root: Path, samples: Sequence[Sample]) -> None:
    """Every sample's rows into a fresh Parquet store at `root`, stamped with the sample's ts."""
    store = ParquetStore(root)
    for sample in samples:
        store.append_all(sample.rows, sample.ts)


def evaluate(session: Any, root: Path, rules: Sequence[RuleBase], samples: Sequence[Sample],
             every: float) -> list[Finding]:
    """Findings of `rules` at the last sample's time; series missing from the last sample are skipped."""
    from spark.reference import evaluate_reference

    now = samples[-1].ts
    # Only the newest sample counts as current: anything older than one interval is history.
    # (Planning in two threads was tried: 11.1 s vs 10.7 s cold on 2 cores, so one job it is.)
    stale_after = timedelta(seconds=max(every, 1.0))
    findings = evaluate_reference(session, root, rules, now, stale_after)
    return [f for f in findings if not f.no_data]


def relevant(findings: Sequence[Finding], target: Target, topics: set[str]) -> list[Finding]:
    """Findings about the group, or about the brokers and topics it reads (those without a group label)."""
    brokers = {name for name, _, _ in target.addrs}
    out = []
    for f in findings:
        group = f.labels.get("group")
        if group is not None:
            if group == target.group:
                out.append(f)
        elif f.labels.get("broker") in brokers or f.labels.get("topic") in topics:
            out.append(f)
    return out
