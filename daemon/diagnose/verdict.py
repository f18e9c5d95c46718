"""One verdict for one group: where the problem is, the evidence, peers, stuck threads, next steps.

Order of questions, as an expert asks them: does the group exist and is anyone consuming it (an
unknown, offline or POP group gets its own verdict); is a broker it reads from unwell (a broker
finding, or every group of the topic lagging); is it this group's consumers (marked queues or
stuck threads: one queue, one client, or all queues); otherwise is there a backlog at all beyond
what is in flight. The runbook text comes from the built-in rules, exactly as alerts carry it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from daemon.collectors.group_sample import POP, Sample, Target
from daemon.collectors.threads import StuckThread
from daemon.common.judged_on import GroupBasis
from daemon.diagnose.evidence import (
    BLOCKED,
    CONSUMER_MARKS,
    COUNT,
    FROZEN,
    LAG,
    SIZE,
    SPAN,
    Peer,
    QueueEvidence,
    broker_status,
    client_status,
    dlq_growth,
    peers,
    queue_evidence,
    retry_dlq,
)
from rules.findings import SEVERITY_ORDER, Finding
from rules.tables import LAGGING_MESSAGES
from rules.templates import TemplateError, parse_template, render_template, tidy

HEALTHY, PROBLEM, OFFLINE, UNKNOWN, POP_GROUP = "healthy", "problem", "offline", "unknown", "pop"
EXIT = {HEALTHY: 0, PROBLEM: 1, OFFLINE: 1, UNKNOWN: 2, POP_GROUP: 0}

# Which rule's runbook explains each queue mark, most specific first: the steps follow this order.
MARK_RULES = {
    SPAN: "ProcessQueueSpanTooLong", BLOCKED: "ConsumptionBlocked", FROZEN: "StuckMessage",
    COUNT: "ProcessQueueCachedCountHigh", SIZE: "ProcessQueueCachedSizeHigh", LAG: "OneGroupLagging",
}
BROKER_RULES = {
    "BrokerPutLatencyHigh": "put latency", "DispatchBehind": "dispatch behind", "PageCacheLockHeld": "page cache lock",
    "TransientStorePoolExhausted": "transient store pool exhausted", "SendQueueWaiting": "send queue waiting",
    "PullQueueWaiting": "pull queue waiting", "CommitLogDiskFilling": "commitlog disk filling",
}


@dataclass
class Verdict:
    """What `rocketwatch diagnose` prints, as data."""

    group: str
    status: str
    side: str  # consumer, broker, none
    scope: str | None  # one queue, one client, all queues, put latency, ... (None when healthy)
    headline: str
    clients: list[str] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)
    evidence: list[QueueEvidence] = field(default_factory=list)
    peers: list[Peer] = field(default_factory=list)
    threads: list[StuckThread] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # What the samples show for a rule the verdict names that did not match on them (its window is
    # longer than the samples, or its level higher than diagnose's mark): diagnose's own finding.
    seen: list[Finding] = field(default_factory=list)
    next_steps: list[tuple[str, str]] = field(default_factory=list)  # (rule, text)
    notes: list[str] = field(default_factory=list)
    samples: int = 0
    dlq_growth: int = 0
    client_status: list[dict[str, Any]] = field(default_factory=list)
    brokers: list[dict[str, Any]] = field(default_factory=list)
    retry_lag: int = 0
    dlq_total: int = 0
    basis: GroupBasis | None = None  # what the group is judged on, and why (daemon/common/judged_on.py)

    @property
    def exit_code(self) -> int:
        """0 healthy, 1 problem found, 2 could not collect."""
        return EXIT[self.status]

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole verdict."""
        return {
            "group": self.group, "status": self.status, "side": self.side, "scope": self.scope,
            "headline": self.headline, "exit_code": self.exit_code, "clients": self.clients, "queues": self.queues,
            "evidence": [e.as_json() for e in self.evidence], "peers": [p.as_json() for p in self.peers],
            "threads": [t.__dict__ for t in self.threads],
            "findings": [{"rule": f.rule, "severity": f.severity, "labels": f.labels, "value": f.value,
                          "summary": f.annotations.get("summary", "")} for f in self.findings],
            "seen": [{"rule": f.rule, "labels": f.labels, "summary": f.annotations.get("summary", "")}
                     for f in self.seen],
            "next_steps": [{"rule": r, "text": t} for r, t in self.next_steps],
            "notes": self.notes, "samples": self.samples, "dlq_growth": self.dlq_growth,
            "client_status": self.client_status, "brokers": self.brokers, "retry_lag": self.retry_lag,
            "dlq_total": self.dlq_total, "judged_on": self.basis.as_json() if self.basis is not None else None,
        }


def _fill(template: str, values: dict[str, Any]) -> str | None:
    """A rule's runbook text for `values`; None when it names something the samples do not give."""
    try:
        parts = parse_template(template)
        text = tidy(render_template(parts, values))
    except (TemplateError, TypeError):
        return None
    # A placeholder left as `{name}` would print a hole where a fact belongs: no step rather than that.
    return None if "{" in text.replace("{{", "") else text


def _basis(findings: Sequence[Finding], wanted: Sequence[str], runbook: dict[str, str],
           seen: dict[str, tuple[str, dict[str, Any]]]) -> tuple[list[Finding], list[tuple[str, str]]]:
    """The findings a verdict stands on and their next steps, from one list, in the verdict's order.

    A wanted rule that matched contributes its findings; one that did not (a window longer than the
    samples) contributes diagnose's own finding from `seen` (rule -> its sentence, template values),
    listed as such, with the rule's next steps filled from the samples. Nothing else has steps.
    """
    by_rule: dict[str, Finding] = {}
    for f in sorted(findings, key=lambda f: -SEVERITY_ORDER.get(f.severity or "", 0)):
        by_rule.setdefault(f.rule, f)
    own: list[Finding] = []
    steps: list[tuple[str, str]] = []
    for rule in dict.fromkeys([*wanted, *by_rule]):
        if rule in by_rule:
            text = by_rule[rule].annotations.get("next_steps")
        elif rule in wanted and rule in seen and rule in runbook:
            sentence, values = seen[rule]
            text = _fill(runbook[rule], values)
            own.append(Finding(rule=rule, labels={k: str(v) for k, v in values.items() if k in ("group", "topic")},
                               severity=None, value=None, threshold=None,
                               annotations={"summary": sentence, "next_steps": text or ""}))
        else:
            continue
        if text:
            steps.append((rule, " ".join(text.split())))
    return own, steps


def decide(target: Target, samples: Sequence[Sample], findings: Sequence[Finding],
           threads: Sequence[StuckThread], runbook: dict[str, str]) -> Verdict:
    """The verdict for `target.group` from its samples, the rule findings and the stuck threads."""
    group, last = target.group, samples[-1]
    notes = sorted({n for s in samples for n in s.failures})
    evidence = queue_evidence(samples, group)
    peer_list = peers(samples, group)
    retry_lag, dlq_total = retry_dlq(last, group)
    base = dict(group=group, evidence=evidence, peers=peer_list, threads=list(threads), findings=list(findings),
                notes=notes, samples=len(samples), dlq_growth=dlq_growth(samples, group),
                client_status=client_status(last, group), brokers=broker_status(last), retry_lag=retry_lag,
                dlq_total=dlq_total)
    total_lag = sum(e.lag for e in evidence)
    any_rows = any(r["group"] == group for s in samples for r in s.rows["consumer_queue"])
    if not any_rows and not last.online and not target.configured:
        return Verdict(status=UNKNOWN, side="none", scope=None, headline=(
            f"group {group} is unknown: no broker of cluster(s) {', '.join(sorted(set(target.cluster_of.values())))} "
            "has a subscription config, committed offsets or a connected client for it; check the group name"
        ), **base)  # type: ignore[arg-type]
    if not last.online:
        status = OFFLINE if total_lag > 0 else HEALTHY
        head = (f"group {group} is offline: no client is connected (broker answers 206) but its offsets are "
                f"there; {total_lag} message(s) are waiting")
        wanted = ["ConsumerGroupOffline"] if total_lag > 0 else []
        seen, steps = _basis(findings, wanted, runbook, {"ConsumerGroupOffline": (
            f"no client of {group} is connected and {total_lag} message(s) wait", {"group": group})})
        return Verdict(status=status, side="consumer", scope="no client online", headline=head, seen=seen,
                       next_steps=steps, **base)  # type: ignore[arg-type]
    assert last.connection is not None
    pop_rows = last.rows.get("pop_queue", [])
    if pop_rows:
        return _pop_verdict(group, pop_rows, total_lag, findings, runbook, base)
    if last.connection.consume_type == POP:
        lagging = total_lag > LAGGING_MESSAGES
        head = (f"group {group} is consumed through a proxy (gRPC clients, listed CONSUME_POP): they answer no "
                f"running info, so only the broker side is judged: lag {total_lag}"
                f"{', growing' if any(LAG in e.marks for e in evidence) else ''}")
        return Verdict(status=PROBLEM if lagging else POP_GROUP, side="consumer" if lagging else "none",
                       scope="all queues" if lagging else None, headline=head,
                       next_steps=_basis(findings, [], runbook, {})[1], **base)  # type: ignore[arg-type]
    broker_findings = [f for f in findings if f.rule in BROKER_RULES]
    # A cache at its limits, a frozen commit or a stuck thread is the consumer's own doing,
    # whatever the broker does; a slow broker starves consumers but does not fill their caches.
    consumer = _consumer_side(evidence, threads, strong=True)
    if consumer is not None and not threads and not any({SPAN, BLOCKED} & set(e.marks) for e in evidence) \
            and peer_list and all(p.lagging for p in peer_list):
        # Full caches and slow commits in every group of the topic at once: what they share is
        # the broker or the topic's traffic, not one team's handler.
        consumer = None
    if consumer is None:
        broker = _broker_side(target, broker_findings, evidence, peer_list)
        if broker is not None:
            scope, head, wanted = broker
            topics = ", ".join(sorted({e.topic for e in evidence}))
            seen, steps = _basis(findings, wanted, runbook, {"AllGroupsLagging": (
                f"every group on {topics} lags beyond what is in flight: {group} by {total_lag}, "
                + ", ".join(f"{p.group} by {p.lag}" for p in peer_list), {"group": group, "topic": topics})})
            return Verdict(status=PROBLEM, side="broker", scope=scope, headline=head, seen=seen,
                           next_steps=steps, **base)  # type: ignore[arg-type]
        consumer = _consumer_side(evidence, threads, strong=False)
    if consumer is None:
        consumer = _failing(group, last, int(base["dlq_growth"]), dlq_total)  # type: ignore[call-overload]
    if consumer is not None:
        scope, head, clients, queues, wanted = consumer
        if broker_findings:
            head += "; the broker also shows " + ", ".join(sorted({BROKER_RULES[f.rule] for f in broker_findings}))
        bad = [e for e in evidence if e.key in queues]
        own = _seen(group, samples, bad, peer_list, int(base["dlq_growth"]), dlq_total, retry_lag)  # type: ignore[call-overload]
        seen, steps = _basis([f for f in findings if f.labels.get("category") != "broker"], wanted, runbook, own)
        return Verdict(status=PROBLEM, side="consumer", scope=scope, headline=head, clients=clients, queues=queues,
                       seen=seen, next_steps=steps, **base)  # type: ignore[arg-type]
    lagging_peers = [p.group for p in peer_list if p.lagging]
    tail = f"; peer(s) {', '.join(lagging_peers)} lag, not this group" if lagging_peers else ""
    head = (f"group {group} is healthy: lag {total_lag} is in flight only (committed offsets move, no cache at "
            f"its limits){tail}")
    return Verdict(status=HEALTHY, side="none", scope=None, headline=head, **base)  # type: ignore[arg-type]


def _failing(group: str, last: Sample, dlq: int, dlq_total: int = 0,
             ) -> tuple[str, str, list[str], list[str], list[str]] | None:
    """Messages failing: dead letters during the samples, or clients reporting failed consumes."""
    status = [r for r in last.rows["consumer_status"] if r["group"] == group]
    failed_tps = sum(r["consume_failed_tps"] or 0.0 for r in status)
    if dlq <= 0 and failed_tps <= 0:
        return None
    retry_lag = sum(max(0, r["broker_offset"] - r["consumer_offset"]) for r in last.rows["consumer_queue"]
                    if r["group"] == group and r["topic_kind"] == "retry")
    failing = sorted({r["client_id"] for r in status if (r["consume_failed_tps"] or 0) > 0})
    parts = []
    if failed_tps > 0:
        parts.append(f"its clients fail {failed_tps:.3g} message(s)/s (RECONSUME_LATER or an exception)")
    if dlq > 0:
        parts.append(f"{dlq} message(s) went to %DLQ%{group} during the samples (out of retries)")
    elif dlq_total > 0:
        # A few seconds of samples may see no new dead letter; the ones already there are the story.
        parts.append(f"%DLQ%{group} holds {dlq_total} dead letter(s) (out of retries)")
    parts.append(f"%RETRY%{group} holds {retry_lag} waiting")
    head = f"this group's consumers, failing messages: {'; '.join(parts)}"
    if failing:
        head += f"; client{'s' if len(failing) > 1 else ''} {', '.join(failing)}"
    wanted = (["DeadLetterQueueGrowing"] if dlq > 0 or dlq_total > 0 else []) + (
        ["RetryBacklogGrowing"] if retry_lag > 0 or failed_tps > 0 else [])
    return "failing messages", head, failing, [], wanted


def _broker_side(target: Target, broker_findings: Sequence[Finding], evidence: Sequence[QueueEvidence],
                 peer_list: Sequence[Peer]) -> tuple[str, str, list[str]] | None:
    if broker_findings:
        worst = max(broker_findings, key=lambda f: SEVERITY_ORDER.get(f.severity or "", 0))
        scopes = sorted({BROKER_RULES[f.rule] for f in broker_findings})
        where = sorted({f.labels.get("broker", "") for f in broker_findings} - {""})
        head = (f"the broker side: {', '.join(scopes)} on {', '.join(where) or 'a broker'} that {target.group} "
                f"reads from; {worst.annotations.get('summary', '').strip()}")
        return ", ".join(scopes), " ".join(head.split()), sorted({f.rule for f in broker_findings})
    lagging_here = sum(e.lag for e in evidence) > LAGGING_MESSAGES
    if lagging_here and peer_list and all(p.lagging for p in peer_list):
        head = (f"the broker side: every group on the topic lags ({target.group} and "
                f"{', '.join(p.group for p in peer_list)}): what they share is the broker or the topic's traffic")
        return "all groups lagging", head, ["AllGroupsLagging"]
    return None


def _consumer_side(
    evidence: Sequence[QueueEvidence], threads: Sequence[StuckThread], *, strong: bool,
) -> tuple[str, str, list[str], list[str], list[str]] | None:
    """Consumer-side verdict: from limits, frozen commits and stuck threads (strong), or from backlog alone."""
    if strong:
        bad = [e for e in evidence if set(e.marks) & set(CONSUMER_MARKS)]
        if not bad and not threads:
            return None
    else:
        bad = [e for e in evidence if LAG in e.marks]
        if not bad:
            return None
    marked = {m for e in bad for m in e.marks}
    wanted = [rule for mark, rule in MARK_RULES.items() if mark in marked]
    clients = sorted({e.owner for e in bad if e.owner} | {t.client_id for t in threads})
    owners = {e.owner for e in evidence if e.owner}
    queues = [e.key for e in bad]
    marks = sorted({m for e in bad for m in e.marks})
    detail = "; ".join(_queue_line(e) for e in bad[:4]) + (f"; +{len(bad) - 4} more" if len(bad) > 4 else "")
    if bad and len(bad) == len(evidence) and len(evidence) > 1:
        scope = "all queues"
    elif (len(clients) == 1 and len(owners) > 1 and len(bad) > 1
          and len(bad) == sum(1 for e in evidence if e.owner == clients[0])):
        scope = "one client"
    else:
        scope = "one queue" if len(bad) <= 1 else "some queues"
    head = f"this group's consumers, {scope}: {detail or 'stuck consume threads'}"
    if marks:
        head += f" [{', '.join(marks)}]"
    if clients:
        head += f"; client{'s' if len(clients) > 1 else ''} {', '.join(clients)}"
    unowned = [e.key for e in bad if e.owner is None]
    if unowned:
        head += f"; held by no client: {', '.join(unowned[:4])}"
    if threads:
        head += f"; {len(threads)} consume thread(s) stuck: " + ", ".join(t.thread for t in threads)
    return scope, head, clients, queues, wanted


def _queue_line(e: QueueEvidence) -> str:
    parts = [f"queue {e.key} lag {e.lag}, committed {e.committed}"]
    if e.cached_span and SPAN in e.marks:
        parts.append(f"span {e.cached_span} > {e.limit_span}")
    if COUNT in e.marks:
        parts.append(f"cached {e.cached_count} > {e.limit_count}")
    if SIZE in e.marks:
        parts.append(f"{e.cached_size_mib} MiB > {e.limit_size_mib} MiB")
    if FROZEN in e.marks and e.cached_min_offset is not None:
        parts.append(f"waiting on offset {e.cached_min_offset}")
    if BLOCKED in e.marks:
        parts.append("nothing consumed for over a minute")
    return ", ".join(parts)


def _seen(group: str, samples: Sequence[Sample], bad: Sequence[QueueEvidence], peer_list: Sequence[Peer],
          dlq: int, dlq_total: int, retry_lag: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """Diagnose's own finding per rule a consumer verdict names: its sentence and the template
    values of the queue (or group) it is about, taken from the last sample's rows."""
    last = samples[-1]
    own: dict[str, tuple[str, dict[str, Any]]] = {}
    for mark, rule in MARK_RULES.items():
        e = next((e for e in bad if mark in e.marks), None)
        if e is None or (mark == LAG and (not peer_list or any(p.lagging for p in peer_list))):
            continue  # OneGroupLagging says the peers keep up: only when the samples show it
        sentence = f"{_queue_line(e)} [{mark}] across {len(samples)} sample(s)"
        if mark == LAG:
            lag = sum(x.lag for x in bad)
            sentence = (f"{group} lags {lag} message(s) beyond what is in flight, not shrinking, while "
                        f"{', '.join(p.group for p in peer_list)} keep(s) up")
        own[rule] = (sentence, _queue_values(last, group, e))
    group_values: dict[str, Any] = {"group": group}
    if dlq > 0:
        own["DeadLetterQueueGrowing"] = (f"{dlq} message(s) went to %DLQ%{group} during the samples", group_values)
    elif dlq_total > 0:
        own["DeadLetterQueueGrowing"] = (f"%DLQ%{group} holds {dlq_total} dead letter(s)", group_values)
    own["RetryBacklogGrowing"] = (f"%RETRY%{group} holds {retry_lag} message(s) waiting to be retried",
                                  group_values)
    return own


def _queue_values(last: Sample, group: str, e: QueueEvidence) -> dict[str, Any]:
    """Template values of one queue: its consumer_queue and (held) process_queue rows, as the rules see them."""
    key = (e.topic, e.broker, e.queue_id)
    values: dict[str, Any] = {"group": group, "lag": e.lag}
    for row in last.rows["consumer_queue"]:
        if row["group"] == group and (row["topic"], row["broker"], row["queue_id"]) == key:
            values.update(row)
    for row in last.rows["process_queue"]:
        if row["group"] == group and not row["dropped"] and (row["topic"], row["broker"], row["queue_id"]) == key:
            values.update(row)
            values["span"] = row["cached_max_offset"] - row["cached_min_offset"]
    values.pop("ts", None)
    return values


def _pop_verdict(group: str, pop_rows: list[dict[str, Any]], total_lag: int, findings: Sequence[Finding],
                 runbook: dict[str, str], base: dict[str, Any]) -> Verdict:
    """A group whose clients pop (5.x pop mode): judged on waitAckCount against popThresholdForQueue."""
    full = sorted({r["client_id"] for r in pop_rows if r["wait_ack_count"] > r["pop_threshold_for_queue"]})
    worst = max(pop_rows, key=lambda r: r["wait_ack_count"])
    if full:
        head = (f"group {group} consumes in pop mode and client(s) {', '.join(full)} stopped popping: "
                f"{worst['wait_ack_count']} popped messages wait for their ack, above popThresholdForQueue "
                f"{worst['pop_threshold_for_queue']}; the consume threads are stuck or slow, and each unacknowledged "
                f"message is revived into %RETRY%{group}_{worst['topic']} after "
                f"{worst['pop_invisible_time_ms'] // 1000} s; lag {total_lag}")
        return Verdict(status=PROBLEM, side="consumer", scope="one client" if len(full) == 1 else "all queues",
                       headline=head, clients=full, next_steps=_basis(findings, [], runbook, {})[1],
                       **base)  # type: ignore[arg-type]
    lagging = total_lag > LAGGING_MESSAGES
    head = (f"group {group} consumes in pop mode (its clients' running info has a mqPopTable): judged on "
            f"waitAckCount against popThresholdForQueue ({worst['wait_ack_count']}/{worst['pop_threshold_for_queue']} "
            f"at most) and the broker side; lag {total_lag}")
    return Verdict(status=PROBLEM if lagging else POP_GROUP, side="consumer" if lagging else "none",
                   scope="all queues" if lagging else None, headline=head,
                   next_steps=_basis(findings, [], runbook, {})[1], **base)  # type: ignore[arg-type]
