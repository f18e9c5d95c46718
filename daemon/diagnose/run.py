"""`rocketwatch diagnose`: discover, sample `--samples` times `--every` apart, evaluate, decide.

Spark starts in a background thread as soon as the group is known to exist, so its start-up
overlaps the sampling, and then rehearses planning the rules on the first sample while the others
are taken; the rules then run once over a temp store holding exactly these samples.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from daemon.collectors.group_sample import CollectError, Sample, Target, discover, take_sample
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.threads import all_stuck
from daemon.common.judged_on import judged_on
from daemon.diagnose.rules_eval import (
    SparkStarter,
    builtin_rules,
    evaluate,
    judgeable,
    relevant,
    write_samples,
)
from daemon.diagnose.verdict import Verdict, decide

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    """What the operator asked for."""

    namesrv: str
    group: str
    topic: str | None = None
    samples: int = 5
    every: float = 1.0
    jstack: bool = False
    timeout: float = 3.0
    spark_master: str = "local[2]"

    @property
    def sampling_span(self) -> timedelta:
        """From the first sample's start to the last's, as scheduled."""
        return timedelta(seconds=self.every * (max(1, self.samples) - 1))


@dataclass
class Timings:
    """Where the seconds went (the benchmark reports them)."""

    discover_s: float = 0.0
    sampling_s: float = 0.0
    spark_wait_s: float = 0.0
    evaluate_s: float = 0.0
    total_s: float = 0.0


async def _sample(opts: Options, on_known: Callable[[Sample, float], None],
                  timings: Timings) -> tuple[Target, list[Sample]]:
    async with RemotingClient(default_timeout=opts.timeout) as client:
        admin = AdminClient(client)
        start = time.monotonic()
        target = await discover(admin, opts.namesrv, opts.group, opts.topic, opts.timeout)
        timings.discover_s = time.monotonic() - start
        samples: list[Sample] = []
        start = time.monotonic()
        for i in range(max(1, opts.samples)):
            samples.append(await take_sample(admin, target, jstack=opts.jstack, timeout=opts.timeout))
            if i == 0 and _known(target, samples[0]):
                on_known(samples[0], start + opts.sampling_span.total_seconds())
            if i + 1 < opts.samples:
                await asyncio.sleep(max(0.0, start + opts.every * (i + 1) - time.monotonic()))
        return target, samples


def _known(target: Target, sample: Sample) -> bool:
    return target.configured or sample.online or any(r["group"] == target.group for r in sample.rows["consumer_queue"])


def diagnose(opts: Options, timings: Timings | None = None) -> Verdict:
    """Collect, evaluate and decide; CollectError when nothing could be collected."""
    timings = timings or Timings()
    t0 = time.perf_counter()
    starter: list[SparkStarter] = []
    rules = builtin_rules()

    def start_spark(first: Sample, sampling_ends: float) -> None:
        starter.append(SparkStarter(opts.spark_master,
                                    rehearsal=(first, judgeable(rules, opts.sampling_span), sampling_ends)))

    target, samples = asyncio.run(_sample(opts, start_spark, timings))
    t1 = time.perf_counter()
    timings.sampling_s = t1 - t0 - timings.discover_s
    runbook = {r.alert: r.next_steps for r in rules}
    findings = []
    notes: list[str] = []
    topics = {r["topic"] for s in samples for r in s.rows["consumer_queue"] if r["group"] == opts.group}
    if starter:
        try:
            session = starter[0].session()
            t2 = time.perf_counter()
            timings.spark_wait_s = t2 - t1
            with tempfile.TemporaryDirectory(prefix="rocketwatch-diagnose-") as tmp:
                write_samples(Path(tmp), samples)
                found = evaluate(session, Path(tmp), judgeable(rules, samples[-1].ts - samples[0].ts), samples, opts.every)
                findings = relevant(found, target, topics)
            timings.evaluate_s = time.perf_counter() - t2
        except Exception as exc:  # the verdict stands on the samples alone; say what is missing
            log.debug("rule evaluation failed", exc_info=True)
            notes.append(f"built-in rules not evaluated: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    jstacks: dict[str, list[str]] = {}
    for s in samples:
        for cid, text in s.jstacks.items():
            jstacks.setdefault(cid, []).append(text)
    verdict = decide(target, samples, findings, all_stuck(jstacks, opts.group), runbook)
    verdict.notes += notes
    verdict.basis = next((b for b in judged_on(samples[-1].rows, rules, samples[-1].failures) if b.group == opts.group),
                         None)
    if opts.jstack and not jstacks and samples[-1].online:
        verdict.notes.append("--jstack: no client returned a thread dump (clients may not allow it)")
    timings.total_s = time.perf_counter() - t0
    return verdict


__all__ = ["CollectError", "Options", "Timings", "diagnose"]
