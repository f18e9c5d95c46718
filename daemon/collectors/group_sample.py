"""Everything about one consumer group, right now: discovery once, then one `Sample` per call of `take_sample`.

Discovery (once): cluster info (106) from the name server → brokers; each master's subscription
groups (201) → the masters that know the group. A sample (each `--every`): broker runtime (28) of
every address of those brokers first, then the group's connection list (203), consume stats (208),
consume time span (303), each online client's running info (307, with `jstackEnable` on request),
the stats of its topics incl. %RETRY% and %DLQ% (202), the other groups on its topics (300) and
their consume stats (208) and connection lists (203). Rows use the sample-table shapes of
rules/tables.py (built by daemon/collectors), so the built-in rules read them unchanged.
Never heartbeats, never pulls (ref §8); a failing call becomes a note, never an exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from daemon.collectors.broker_runtime import broker_row
from daemon.collectors.client_rows import (
    DLQ_PREFIX,
    RETRY_PREFIX,
    consumer_client_rows,
    consumer_queue_rows,
    consumer_status_rows,
    pop_queue_rows,
    process_queue_rows,
    topic_queue_rows,
)
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.bodies import ConsumerConnection
from daemon.collectors.remoting.errors import ConsumerNotOnline, RemotingError, TopicNotExist

T = TypeVar("T")

# A proxy's gRPC clients are listed so; they answer no running info. A remoting client in pop mode is
# listed CONSUME_PASSIVELY and found by the mqPopTable of its running info (pop_queue rows).
POP = "CONSUME_POP"
BROADCASTING = "BROADCASTING"
TABLES = ("consumer_queue", "process_queue", "consumer_status", "consumer_client", "topic_queue", "broker",
          "pop_queue")


class CollectError(Exception):
    """Nothing could be collected (no name server answered, no broker known); the text says why."""


@dataclass(frozen=True)
class Target:
    """Where the group lives: its masters (name, addr), every address of those brokers, the clusters."""

    group: str
    topic: str | None
    masters: list[tuple[str, str]]
    addrs: list[tuple[str, int, str]]
    cluster_of: dict[str, str]
    configured: bool  # some master has a subscription group config for it


@dataclass
class Sample:
    """One round of calls about the group, all rows stamped with `ts`."""

    ts: datetime
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {t: [] for t in TABLES})
    connection: ConsumerConnection | None = None
    connection_addr: str | None = None  # the broker that reported the clients: it can relay to them
    peer_connections: dict[str, ConsumerConnection | None] = field(default_factory=dict)
    peers: set[str] = field(default_factory=set)
    jstacks: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def online(self) -> bool:
        """True when some broker reported a connected client of the group."""
        return self.connection is not None and bool(self.connection.connections)


class _Calls:
    """Runs calls under a bound; a failure becomes one line in `failures`, never an exception."""

    def __init__(self, admin: AdminClient, timeout: float, concurrency: int = 16) -> None:
        self.admin = admin
        self.timeout = timeout
        self.semaphore = asyncio.Semaphore(concurrency)

    async def run(
        self, failures: list[str], what: str, make: Callable[[], Awaitable[T]],
        answers: tuple[type[RemotingError], ...] = (), timeout: float | None = None,
    ) -> tuple[T | None, Exception | None]:
        async with self.semaphore:
            try:
                return await asyncio.wait_for(make(), (timeout or self.timeout) * 2), None
            except answers as exc:
                return None, exc
            except RemotingError as exc:
                failures.append(f"{what}: {exc}")
                return None, exc
            except TimeoutError as exc:
                failures.append(f"{what}: no answer within {(timeout or self.timeout) * 2:.3g} s")
                return None, exc


async def discover(admin: AdminClient, namesrv: str, group: str, topic: str | None, timeout: float) -> Target:
    """The brokers that serve `group`; CollectError when the name server cannot be read."""
    try:
        info = await asyncio.wait_for(admin.get_cluster_info(namesrv, timeout=timeout), timeout * 2)
    except (RemotingError, TimeoutError) as exc:
        raise CollectError(f"name server {namesrv}: cluster info (106) failed: {exc or 'timeout'}") from None
    cluster_of = {b: c for c, names in info.clusters.items() for b in names}
    masters = [
        (name, broker.master_addr) for name, broker in sorted(info.brokers.items()) if broker.master_addr
    ]
    if not masters:
        raise CollectError(f"name server {namesrv} knows no broker with a master (clusters: "
                           f"{', '.join(sorted(info.clusters)) or 'none'})")
    calls = _Calls(admin, timeout)
    notes: list[str] = []

    async def knows(addr: str) -> bool:
        configs, _ = await calls.run(notes, f"{addr}: subscription groups (201)",
                                     lambda: admin.get_subscription_groups(addr, timeout=timeout))
        return configs is not None and group in configs

    known = await asyncio.gather(*(knows(addr) for _, addr in masters))
    if len(notes) == len(masters):
        raise CollectError(f"no broker answered: {notes[0]}" + (f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""))
    mine = [m for m, k in zip(masters, known, strict=True) if k]
    names = {name for name, _ in (mine or masters)}
    addrs = [(n, i, a) for n, b in sorted(info.brokers.items()) if n in names for i, a in sorted(b.addrs.items()) if a]
    return Target(group, topic, mine or masters, addrs, cluster_of, configured=bool(mine))


async def take_sample(admin: AdminClient, target: Target, *, jstack: bool, timeout: float) -> Sample:
    """One sample of everything about the target group (see the module docstring)."""
    sample = Sample(datetime.now(UTC))
    calls = _Calls(admin, timeout)
    await asyncio.gather(*(_runtime(calls, target, sample, n, i, a, timeout) for n, i, a in target.addrs))
    conn_task = _connection(calls, target, sample, target.group, timeout)
    stats_tasks = [_consume_stats(calls, target, sample, target.group, n, a, None, timeout) for n, a in target.masters]
    connection, *_ = await asyncio.gather(conn_task, *stats_tasks)
    sample.connection = connection
    mine = [r for r in sample.rows["consumer_queue"] if r["group"] == target.group]
    topics = sorted({r["topic"] for r in mine if r["topic_kind"] == "normal"})
    if connection is not None:
        topics = sorted(set(topics) | {t for t in connection.subscriptions if not t.startswith(RETRY_PREFIX)})
    if target.topic is not None:
        topics = [target.topic]
        sample.rows["consumer_queue"] = [
            r for r in sample.rows["consumer_queue"] if r["topic"] in (target.topic, RETRY_PREFIX + target.group)
        ]
    tasks: list[Awaitable[Any]] = []
    for name, addr in target.masters:
        tasks += [_delay(calls, target, sample, addr, t, timeout) for t in topics]
        tasks += [_peers(calls, sample, name, addr, t, timeout) for t in topics]
        tasks += [_topic_stats(calls, target, sample, name, addr, t, timeout)
                  for t in [*topics, RETRY_PREFIX + target.group, DLQ_PREFIX + target.group]]
    if connection is not None and connection.connections:
        # A client heartbeats only to the brokers of its topics: relay through one that knows it.
        relay = sample.connection_addr or target.masters[0][1]
        tasks += [_running_info(calls, target, sample, relay, cid, jstack, timeout)
                  for cid in sorted(set(connection.client_ids))]
    await asyncio.gather(*tasks)
    sample.peers.discard(target.group)
    peer_tasks: list[Awaitable[Any]] = []
    for peer in sorted(sample.peers):
        peer_tasks.append(_peer_connection(calls, target, sample, peer, timeout))
        peer_tasks += [_consume_stats(calls, target, sample, peer, n, a, t, timeout)
                       for n, a in target.masters for t in topics]
    await asyncio.gather(*peer_tasks)
    return sample


def _cluster(target: Target, broker: str) -> str:
    return target.cluster_of.get(broker, "")


async def _runtime(calls: _Calls, target: Target, sample: Sample, name: str, broker_id: int, addr: str,
                   timeout: float) -> None:
    kv, _ = await calls.run(sample.failures, f"broker {name} {addr}: runtime info (28)",
                            lambda: calls.admin.get_broker_runtime_info(addr, timeout=timeout))
    if kv is not None:
        sample.rows["broker"].append(broker_row(_cluster(target, name), sample.ts, name, broker_id, addr, kv))


async def _connection(calls: _Calls, target: Target, sample: Sample, group: str,
                      timeout: float) -> ConsumerConnection | None:
    """The first master's non-empty connection list; None when every broker answers 206."""
    for name, addr in target.masters:
        conn, _ = await calls.run(
            sample.failures, f"broker {name} {addr}: group {group} connection list (203)",
            lambda addr=addr: calls.admin.get_consumer_connections(addr, group, timeout=timeout),
            answers=(ConsumerNotOnline,),
        )
        if conn is not None and conn.connections:
            cluster = _cluster(target, name)
            sample.rows["consumer_client"].extend(consumer_client_rows(cluster, sample.ts, group, conn))
            if group == target.group:
                sample.connection_addr = addr
            return conn
    return None


async def _peer_connection(calls: _Calls, target: Target, sample: Sample, peer: str, timeout: float) -> None:
    sample.peer_connections[peer] = await _connection(calls, target, sample, peer, timeout)


async def _consume_stats(calls: _Calls, target: Target, sample: Sample, group: str, name: str, addr: str,
                         topic: str | None, timeout: float) -> None:
    what = f"broker {name} {addr}: group {group}{f' topic {topic}' if topic else ''} consume stats (208)"
    stats, _ = await calls.run(sample.failures, what,
                               lambda: calls.admin.get_consume_stats(addr, group, topic, timeout=timeout))
    if stats is not None:
        rows = consumer_queue_rows(_cluster(target, name), sample.ts, group, stats)
        sample.rows["consumer_queue"].extend(rows)


async def _delay(calls: _Calls, target: Target, sample: Sample, addr: str, topic: str, timeout: float) -> None:
    """consume_delay_ms of the group's rows from QUERY_CONSUME_TIME_SPAN (303): the broker's own delay."""
    spans, _ = await calls.run(
        sample.failures, f"broker {addr}: group {target.group} topic {topic} consume time span (303)",
        lambda: calls.admin.query_consume_time_span(addr, topic, target.group, timeout=timeout),
    )
    by_queue = {(s.message_queue.broker_name, s.message_queue.queue_id): s.delay_time for s in spans or ()}
    for row in sample.rows["consumer_queue"]:
        key = (row["broker"], row["queue_id"])
        if row["group"] == target.group and row["topic"] == topic and key in by_queue:
            row["consume_delay_ms"] = max(0, by_queue[key])


async def _peers(calls: _Calls, sample: Sample, name: str, addr: str, topic: str, timeout: float) -> None:
    groups, _ = await calls.run(sample.failures, f"broker {name} {addr}: who consumes {topic} (300)",
                                lambda: calls.admin.query_topic_consume_by_who(addr, topic, timeout=timeout),
                                answers=(TopicNotExist,))
    sample.peers.update(groups or ())


async def _topic_stats(calls: _Calls, target: Target, sample: Sample, name: str, addr: str, topic: str,
                       timeout: float) -> None:
    stats, _ = await calls.run(sample.failures, f"broker {name} {addr}: topic {topic} stats (202)",
                               lambda: calls.admin.get_topic_stats(addr, topic, timeout=timeout),
                               answers=(TopicNotExist,))  # no %DLQ% topic before the first dead letter
    if stats is not None:
        sample.rows["topic_queue"].extend(topic_queue_rows(_cluster(target, name), sample.ts, name, topic, stats))


async def _running_info(calls: _Calls, target: Target, sample: Sample, relay: str, client_id: str,
                        jstack: bool, timeout: float) -> None:
    info, _ = await calls.run(
        sample.failures, f"client {client_id} (via {relay}): running info (307)",
        lambda: calls.admin.get_consumer_running_info(relay, target.group, client_id, jstack, timeout=timeout),
        # The broker relays to the client with its own 10 s limit; a thread dump takes a while.
        timeout=max(timeout, 10.0) if jstack else timeout,
    )
    if info is None:
        return
    name = next((n for n, _ in target.masters), "")
    cluster = _cluster(target, name)
    sample.rows["process_queue"].extend(process_queue_rows(cluster, sample.ts, target.group, client_id, info))
    sample.rows["consumer_status"].extend(consumer_status_rows(cluster, sample.ts, target.group, client_id, info))
    sample.rows["pop_queue"].extend(pop_queue_rows(cluster, sample.ts, target.group, client_id, info))
    if info.jstack:
        sample.jstacks[client_id] = info.jstack
