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

from daemon.diagnose.collect import POP, Sample, Target
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
from daemon.diagnose.threads import StuckThread
from rules.findings import SEVERITY_ORDER, Finding
from rules.tables import LAGGING_MESSAGES

HEALTHY, PROBLEM, OFFLINE, UNKNOWN, POP_GROUP = "healthy", "problem", "offline", "unknown", "pop"
EXIT = {HEALTHY: 0, PROBLEM: 1, OFFLINE: 1, UNKNOWN: 2, POP_GROUP: 0}

# Which rule's runbook explains each queue mark.
MARK_RULES = {
    SPAN: "ProcessQueueSpanTooLong", COUNT: "ProcessQueueCachedCountHigh", SIZE: "ProcessQueueCachedSizeHigh",
    BLOCKED: "ConsumptionBlocked", FROZEN: "StuckMessage", LAG: "OneGroupLagging",
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
    next_steps: list[tuple[str, str]] = field(default_factory=list)  # (rule, text)
    notes: list[str] = field(default_factory=list)
    samples: int = 0
    dlq_growth: int = 0
    client_status: list[dict[str, Any]] = field(default_factory=list)
    brokers: list[dict[str, Any]] = field(default_factory=list)
    retry_lag: int = 0
    dlq_total: int = 0

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
            "next_steps": [{"rule": r, "text": t} for r, t in self.next_steps],
            "notes": self.notes, "samples": self.samples, "dlq_growth": self.dlq_growth,
            "client_status": self.client_status, "brokers": self.brokers, "retry_lag": self.retry_lag,
            "dlq_total": self.dlq_total,
        }


class _Values(dict[str, str]):
    """Template values; a name not known here stays `{name}` as the rule wrote it."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _fill(template: str, values: dict[str, str]) -> str:
    try:
        return template.format_map(_Values(values))
    except (ValueError, IndexError, AttributeError):
        return template


def _steps(findings: Sequence[Finding], wanted: Sequence[str], raw: dict[str, str],
           values: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """Next steps of the wanted rules: the rendered text of a finding, else the rule's own text."""
    by_rule: dict[str, Finding] = {}
    for f in sorted(findings, key=lambda f: -SEVERITY_ORDER.get(f.severity or "", 0)):
        by_rule.setdefault(f.rule, f)
    out, seen = [], set()
    for rule in [*wanted, *by_rule]:
        if rule in seen:
            continue
        seen.add(rule)
        text = by_rule[rule].annotations.get("next_steps") if rule in by_rule else None
        if text is None and rule in wanted and rule in raw:
            text = _fill(raw[rule], values or {})
        if text:
            out.append((rule, " ".join(text.split())))
    return out


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
        return Verdict(status=status, side="consumer", scope="no client online", headline=head,
                       next_steps=_steps(findings, ["ConsumerGroupOffline"], runbook,
                                         {"group": group, "value": str(total_lag)}), **base)  # type: ignore[arg-type]
    assert last.connection is not None
    if last.connection.consume_type == POP:
        lagging = total_lag > LAGGING_MESSAGES
        head = (f"group {group} is consumed by 5.x POP clients: they keep no ProcessQueue, so only the broker "
                f"side is judged: lag {total_lag}{', growing' if any(LAG in e.marks for e in evidence) else ''}")
        return Verdict(status=PROBLEM if lagging else POP_GROUP, side="consumer" if lagging else "none",
                       scope="all queues" if lagging else None, headline=head,
                       next_steps=_steps(findings, [], runbook), **base)  # type: ignore[arg-type]
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
            return Verdict(status=PROBLEM, side="broker", scope=scope, headline=head,
                           next_steps=_steps(findings, wanted, runbook), **base)  # type: ignore[arg-type]
        consumer = _consumer_side(evidence, threads, strong=False)
    if consumer is None:
        consumer = _failing(group, last, int(base["dlq_growth"]), dlq_total)  # type: ignore[call-overload]
    if consumer is not None:
        scope, head, clients, queues, wanted = consumer
        if broker_findings:
            head += "; the broker also shows " + ", ".join(sorted({BROKER_RULES[f.rule] for f in broker_findings}))
        first = next((e for e in evidence if e.key in queues), None)
        values = {"group": group, **(_values(first) if first is not None else {})}
        return Verdict(status=PROBLEM, side="consumer", scope=scope, headline=head, clients=clients, queues=queues,
                       next_steps=_steps([f for f in findings if f.labels.get("category") != "broker"], wanted,
                                         runbook, values), **base)  # type: ignore[arg-type]
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
    return "failing messages", head, failing, [], ["DeadLetterQueueGrowing", "RetryBacklogGrowing"]


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
    wanted = sorted({MARK_RULES[m] for e in bad for m in e.marks if m in MARK_RULES})
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


def _values(e: QueueEvidence) -> dict[str, str]:
    """Template values of one queue, for a rule's runbook text when the rule itself did not fire yet."""
    values = {"topic": e.topic, "broker": e.broker, "queue_id": str(e.queue_id), "value": str(e.lag)}
    if e.owner:
        values["client_id"] = e.owner
    if e.cached_min_offset is not None:
        values["cached_min_offset"] = str(e.cached_min_offset)
    if e.limit_span is not None:
        values["threshold"] = str(e.limit_span)
    return values
