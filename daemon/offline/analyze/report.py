"""The analysis: replay the built-in rules over the inputs' time span and read the facts an expert
would look for — flow-control episodes, pinned committed offsets, stuck threads, membership churn,
dead letters, slow puts — into one report with a finding per group."""

from __future__ import annotations

import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from daemon.collectors.logparse.lines import Problem
from daemon.offline.analyze.build import Built, Stuck, build
from daemon.offline.analyze.dead_letters import dead_letter_findings
from daemon.offline.analyze.finding import Finding
from daemon.offline.analyze.inputs import discover
from daemon.offline.analyze.membership import membership_findings
from daemon.offline.replay import Transition, replay, steps

STALE_AFTER = timedelta(minutes=2)  # store.log writes a minute, snapshots stand for a while


@dataclass
class Report:
    """Everything `analyze` tells."""

    cluster: str
    cluster_told: bool  # False: "offline", as neither the user nor any file named the cluster
    brokers: list[str]  # the brokers whose store or logs were read, by name (none: unnamed or absent)
    files: list[tuple[str, str, int]]
    span: tuple[datetime, datetime] | None
    findings: list[Finding]
    timeline: list[Transition]
    events: list[dict[str, Any]]
    put_minutes: list[dict[str, Any]]
    offsets: list[dict[str, Any]]
    stuck: list[Stuck]
    idle_consume_threads: dict[str, int]
    problems: list[Problem]
    skipped: list[tuple[str, str]]
    unused: list[tuple[str, str]] = field(default_factory=list)  # RocketMQ files with nothing analyze reads
    unnamed_broker_inputs: int = 0  # broker-side inputs whose broker no file named


def analyze(paths: list[Path], cluster: str | None = None, client_tz: str | None = None, broker: str | None = None,
            step: timedelta = timedelta(minutes=1), spark: Any = None) -> Report:
    """Read the paths, replay the built-in rules over their span, and assemble the report."""
    inputs = discover(paths)
    built = build(inputs, cluster, client_tz, broker)
    timeline = _replay(built, step, spark) if built.span else []
    events = sorted(built.rows.get("log_event", []), key=lambda r: r["ts"])
    return Report(
        cluster=built.names.cluster, cluster_told=built.names.cluster_told, brokers=built.names.brokers,
        unused=[(str(p), why) for p, why in inputs.unused],
        unnamed_broker_inputs=sum(1 for name in built.names.by_path.values() if not name),
        files=built.files, span=built.span, findings=_findings(built, events),
        timeline=timeline, events=events,
        put_minutes=sorted(built.rows.get("broker", []), key=lambda r: r["ts"]),
        offsets=sorted(built.rows.get("consumer_queue", []), key=lambda r: (r["group"], r["topic"], r["queue_id"])),
        stuck=built.stuck, idle_consume_threads=built.idle_consume_threads, problems=built.problems,
        skipped=[(str(p), why) for p, why in inputs.skipped],
    )


def _replay(built: Built, step: timedelta, spark: Any) -> list[Transition]:
    from rules.loader import load_rule_files
    from spark.reference import evaluate_reference
    from spark.session import get_session

    assert built.span is not None
    rules = list(load_rule_files(["builtin"]).rules)
    with tempfile.TemporaryDirectory(prefix="rocketwatch-analyze-") as tmp:
        built.write(Path(tmp))
        session = spark or get_session()
        times = evaluation_times(built.span, step)
        return replay(partial(evaluate_reference, session, tmp), rules, {r.alert: r.timing for r in rules}, times, STALE_AFTER)


def evaluation_times(span: tuple[datetime, datetime], step: timedelta) -> list[datetime]:
    """`step` apart from the first sample to the last, the last included: past it there is no data,
    and a time there would read every series as silent (a broker "stopped reporting" that did not)."""
    start, end = span
    times = list(steps(start, end, step))
    return times if times[-1] == end else [*times, end]


def _findings(built: Built, events: list[dict[str, Any]]) -> list[Finding]:
    found: list[Finding] = []
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e["group"]:
            by_group[e["group"]].append(e)
    for stuck in built.stuck:
        t = stuck.thread
        found.append(Finding(
            stuck.group or stuck.jvm,
            f"consume thread {t.thread} is stuck ({stuck.blocking}) in every dump: {t.top_frame}",
            [f"called from {t.app_frame}" if t.app_frame else "no application frame above the client's",
             f"state {t.state}, same stack in {t.dumps} dumps of {stuck.jvm}",
             "a stuck handler pins the committed offset at its message: lag grows and a restart re-consumes "
             "everything after it"],
        ))
    for group, group_events in sorted(by_group.items()):
        found += _flow_control(group, group_events)
        found += membership_findings(group, group_events)
    found += _pinned_offsets(built)
    found += dead_letter_findings(built.rows.get("topic_queue", []), built.clients)
    slow = [(m, _slow_puts(m)) for m in built.rows.get("broker", []) if _slow_puts(m) > 0]
    if slow:
        worst, count = max(slow, key=lambda pair: pair[1])
        found.append(Finding(worst["broker"], f"{len(slow)} minute(s) with puts of 500 ms or more (worst: {count} "
                                              f"at {worst['ts']:%H:%M} UTC)",
                             ["from store.log [PAGECACHERT]; a healthy broker puts in under 10 ms: producers wait, "
                              "and every group on this broker sees messages late"]))
    return found


def _slow_puts(minute: dict[str, Any]) -> int:
    return sum(minute.get(c) or 0 for c in ("put_latency_500ms_1s", "put_latency_1_2s", "put_latency_2_3s",
                                             "put_latency_3_4s", "put_latency_4_5s", "put_latency_5_10s",
                                             "put_latency_ge_10s"))


def _flow_control(group: str, events: list[dict[str, Any]]) -> list[Finding]:
    out = []
    flows = [e for e in events if e["event"].startswith("flow_control")]
    by_queue: dict[tuple[str, str, str, int], list[dict[str, Any]]] = defaultdict(list)
    for e in flows:
        by_queue[(e["event"], e["topic"], e["broker"], e["queue_id"])].append(e)
    for (event, topic, broker, queue), rows in sorted(by_queue.items()):
        kind = event.removeprefix("flow_control_")
        peak = max(r["value"] or 0 for r in rows)
        out.append(Finding(group, f"flow control ({kind}) on {topic}/{broker}/{queue} from {rows[0]['ts']:%H:%M:%S} "
                                  f"to {rows[-1]['ts']:%H:%M:%S} UTC, {kind} up to {peak:.0f}",
                           [f"client {rows[-1]['client_id'] or 'unknown'}; {len(rows)} log line(s), and the client "
                            f"logs only every 1000th occurrence",
                            _FLOW_CONTROL_CAUSE.get(kind, "the client paused its pulls on this queue")]))
    return out


# Said only for the kind the log line names: a span is one message, a count or size is a slow handler.
_FLOW_CONTROL_CAUSE = {
    "span": "the oldest message the client holds has not finished while those after it were consumed "
            "(consumeConcurrentlyMaxSpan, 2000 by default): pulls on this queue wait for it",
    "count": "more messages cached on this queue than pullThresholdForQueue (1000 by default): the handler is "
             "slower than the pulls",
    "size": "more MiB cached on this queue than pullThresholdSizeForQueue (100 by default): the handler is slower "
            "than the pulls",
}


def _pinned_offsets(built: Built) -> list[Finding]:
    out = []
    maxima = {(r["topic"], r["queue_id"]): r["max_offset"] for r in built.rows.get("topic_queue", [])}
    for facts in built.facts.get("stores", {}).values():
        for key, queues in sorted(facts.get("committed", {}).items()):
            topic, _, group = key.rpartition("@")
            typical = statistics.median(queues.values()) if queues else 0
            for queue, committed in sorted(queues.items()):
                if len(queues) < 2 or typical <= 100 or committed >= typical * 0.1:
                    continue
                top = maxima.get((topic, queue))
                if top is not None and top <= committed:
                    continue  # a queue that receives little, all of it consumed: nothing is pinned
                # Queues fill independently: the siblings' offsets say nothing of this queue's own lag.
                lag = f"lag {top - committed} on this queue" if top is not None else (
                    f"its lag is not in these inputs (no consume queue of {topic} in the store): "
                    f"`mqadmin consumerProgress -g {group}` shows it")
                unless = "" if top is not None else "unless this queue receives few messages, "
                out.append(Finding(group, f"{topic} queue {queue}: committed offset {committed} while its other "
                                          f"queues are near {typical:.0f}",
                                   [f"the committed offset is the lowest message still being consumed: {unless}the "
                                    f"message at offset {committed} has not finished, and everything after it will "
                                    f"be consumed again on restart",
                                    lag]))
    return out
