"""Membership findings of one group: a rebalance is worth an operator's time only when it is churn
(more changes in a window than a deploy makes) or when it takes a queue from a client that still had
messages of it cached. A group's clients starting and stopping cleanly is not a finding; a client
that vanished without unregistering is, since what it had consumed but not committed is redone."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from daemon.offline.analyze.finding import Finding

# As the built-in RebalanceChurn rule (rules/builtin/consumer-groups.yaml): more than 3 in 10 minutes.
CHURN_WINDOW = timedelta(minutes=10)
CHURN_ABOVE = 3
_BROKER_SIDE = ("consumer_registered", "consumer_unregistered", "consumer_channel_removed")


def membership_findings(group: str, events: list[dict[str, Any]]) -> list[Finding]:
    """Churn, clients gone without a word, and queues taken away while messages were cached."""
    return _churn(group, events) + _vanished(group, events) + _dropped_with_cache(group, events)


def membership_changes(events: list[dict[str, Any]]) -> list[datetime]:
    """When the group's set of clients changed: from broker.log when it speaks of the group, else
    from the clients' rebalance lines (a new client, or a new count of clients)."""
    broker_side = sorted(e["ts"] for e in events if e["event"] in _BROKER_SIDE)
    if broker_side:
        return broker_side
    changes: list[datetime] = []
    known: set[str] = set()
    size: float | None = None
    for e in sorted((e for e in events if e["event"] == "rebalance_assigned"), key=lambda e: e["ts"]):
        client = e["client_id"] or "?"
        # One rebalance is logged once per topic and queue: only a new client or a new count is a change.
        if client not in known or e["value"] != size:
            changes.append(e["ts"])
        known.add(client)
        size = e["value"]
    return changes


def _churn(group: str, events: list[dict[str, Any]]) -> list[Finding]:
    changes = membership_changes(events)
    best: tuple[int, int] = (0, 0)  # (count, index of the window's first change)
    start = 0
    for end, moment in enumerate(changes):
        while moment - changes[start] > CHURN_WINDOW:
            start += 1
        if end - start + 1 > best[0]:
            best = (end - start + 1, start)
    count, first = best
    if count <= CHURN_ABOVE:
        return []
    window = changes[first:first + count]
    kinds = defaultdict(int)
    for e in events:
        if e["event"] in _BROKER_SIDE and window[0] <= e["ts"] <= window[-1]:
            kinds[e["event"]] += 1
    detail = (f"{kinds['consumer_registered']} join(s), {kinds['consumer_unregistered']} clean leave(s), "
              f"{kinds['consumer_channel_removed']} dropped connection(s) in broker.log" if kinds
              else "counted from the clients' rebalance lines (no broker.log speaks of this group)")
    return [Finding(group, f"rebalance churn: {count} membership changes within {_minutes(CHURN_WINDOW)} minutes "
                           f"({window[0]:%H:%M:%S} to {window[-1]:%H:%M:%S} UTC)",
                    [detail, "every join, leave or drop makes the whole group rebalance; queues that move "
                             "mid-flight are consumed again by their new owner from the committed offset"])]


def _vanished(group: str, events: list[dict[str, Any]]) -> list[Finding]:
    return [Finding(group, f"client {e['client_id'] or '(id not logged)'} left without unregistering at "
                           f"{e['ts']:%H:%M:%S} UTC",
                    ["broker.log: its connection went away (`NETTY EVENT: remove not active channel`) with no "
                     "`unregister a consumer` before it: a crash, kill -9 or a lost network, not a clean stop",
                     "its queues went to the other clients, which consume again from the last committed offset "
                     "(committed every 5 s)"])
            for e in events if e["event"] == "consumer_channel_removed"]


def _dropped_with_cache(group: str, events: list[dict[str, Any]]) -> list[Finding]:
    assignments: dict[tuple[datetime, str, str], set[tuple[str, int]]] = defaultdict(set)
    for e in events:
        if e["event"] == "rebalance_assigned":
            queues = assignments[(e["ts"], e["client_id"] or "?", e["topic"])]
            if e["queue_id"] is not None:
                queues.add((e["broker"], e["queue_id"]))
    flows = [e for e in events if e["event"].startswith("flow_control") and e["queue_id"] is not None]
    out: list[Finding] = []
    held: dict[tuple[str, str], tuple[datetime, set[tuple[str, int]]]] = {}
    for (ts, client, topic), queues in sorted(assignments.items()):
        since, before = held.get((client, topic), (ts, set()))
        for broker, queue in sorted(before - queues):
            # Flow control on the queue while this client held it: it had messages of it cached.
            cached = [f for f in flows if (f["topic"], f["broker"], f["queue_id"]) == (topic, broker, queue)
                      and f["client_id"] in (client, None) and since <= f["ts"] <= ts]
            if cached:
                out.append(Finding(group, f"the rebalance at {ts:%H:%M:%S} UTC took {topic}/{broker}/{queue} from "
                                          f"{client} while it had messages of that queue cached",
                                   [f"flow control on that queue up to {cached[-1]['ts']:%H:%M:%S} UTC "
                                    f"({len(cached)} log line(s)): the client held messages it had not finished",
                                    "the new owner consumes them again from the committed offset"]))
        held[(client, topic)] = (since if before else ts, queues)
    return out


def _minutes(window: timedelta) -> int:
    return int(window.total_seconds() // 60)
