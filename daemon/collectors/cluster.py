"""One collection cycle of one cluster over the remoting protocol (DESIGN §5, ref §2, §3.6-3.7, §8).

Cluster info (106) → brokers; groups from 201 and %RETRY% topics (206, cached), filtered by the
Selection; per group 203 → clients, 307 → process_queue/consumer_status (+ thread_dump if asked),
208/303 → consumer_queue; 202 → topic_queue; 28 → broker. Every call yields a collector_health row,
which also says how its target fared in the whole cycle and, for a broker, which one it is (name and
id from the cluster info; daemon/collectors/health.py); a bad server costs at most `call_timeout`;
nothing raises out. Never heartbeats, never pulls.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from config.name_filter import Selection, is_system_group
from daemon.collectors.broker_runtime import broker_row, fill_replication_behind
from daemon.collectors.client_rows import (
    DLQ_PREFIX,
    RETRY_PREFIX,
    consumer_client_rows,
    consumer_queue_rows,
    consumer_status_rows,
    mark_pop_groups,
    pop_queue_rows,
    process_queue_rows,
    thread_dump_rows,
    topic_queue_rows,
)
from daemon.collectors.collect_cycle import CollectCycle
from daemon.collectors.health import with_target_figures
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.bodies import ClusterInfo, ConsumerConnection
from daemon.collectors.remoting.codes import RequestCode
from daemon.collectors.remoting.errors import ConsumerNotOnline, TopicNotExist
from daemon.collectors.topic_list import TopicListCache, retry_topic_groups

log = logging.getLogger(__name__)

PROCESS_QUEUE = "process_queue"
CONSUMER_QUEUE = "consumer_queue"
COLLECTOR_HEALTH = "collector_health"
CONSUMER_STATUS = "consumer_status"
CONSUMER_CLIENT = "consumer_client"
TOPIC_QUEUE = "topic_queue"
BROKER = "broker"
POP_QUEUE = "pop_queue"

BROADCASTING = "BROADCASTING"
# Listed so by a proxy's gRPC clients, which answer no running info. A remoting client in pop mode is
# listed CONSUME_PASSIVELY like any push consumer: its running info's mqPopTable says it pops (ref §10).
CONSUME_POP = "CONSUME_POP"


@dataclass
class CollectResult:
    """Rows per table name, plus counts and a one-line summary of the cycle."""

    rows: dict[str, list[dict[str, Any]]]
    summary: str
    masters: int = 0
    groups: int = 0
    online_groups: int = 0
    clients: int = 0
    calls: int = 0
    failed_calls: int = 0


async def _discover(cycle: CollectCycle, namesrv_addrs: Iterable[str]) -> ClusterInfo | None:
    """The cluster info from the first name server that knows the cluster."""
    code = RequestCode.GET_BROKER_CLUSTER_INFO
    for ns in namesrv_addrs:
        info, _ = await cycle.call(
            ns, code, lambda ns=ns: cycle.admin.get_cluster_info(ns, timeout=cycle.call_timeout)
        )
        if info is None:
            continue
        if cycle.cluster not in info.clusters:
            # A freshly restarted name server knows no brokers for up to 30 s: try the next one.
            known = ", ".join(sorted(info.clusters)) or "none"
            cycle.fail_row(ns, code, f"namesrv {ns} knows no cluster {cycle.cluster!r} (known: {known})")
            continue
        return info
    return None


def _all_addrs(info: ClusterInfo, cluster: str) -> list[tuple[str, int, str]]:
    """(broker name, broker id, addr) of every master and slave of the cluster."""
    return [
        (name, broker_id, addr)
        for name in sorted(info.clusters.get(cluster, []))
        if (broker := info.brokers.get(name)) is not None
        for broker_id, addr in sorted(broker.addrs.items())
        if addr
    ]


async def _broker_runtime(cycle: CollectCycle, name: str, broker_id: int, addr: str) -> None:
    kv, _ = await cycle.call(
        addr, RequestCode.GET_BROKER_RUNTIME_INFO,
        lambda: cycle.admin.get_broker_runtime_info(addr, timeout=cycle.call_timeout),
    )
    if kv is not None:
        cycle.broker.append(broker_row(cycle.cluster, cycle.now, name, broker_id, addr, kv))


async def _topic_stats(cycle: CollectCycle, name: str, addr: str, topic: str) -> None:
    stats, error = await cycle.call(
        addr, RequestCode.GET_TOPIC_STATS_INFO,
        lambda: cycle.admin.get_topic_stats(addr, topic, timeout=cycle.call_timeout),
        # No %DLQ% topic until the first dead letter, no topic on a broker that does not serve it.
        answers=(TopicNotExist,),
    )
    if stats is not None:
        cycle.topic_queue.extend(topic_queue_rows(cycle.cluster, cycle.now, name, topic, stats, cycle.group_names))


def _masters(info: ClusterInfo, cluster: str) -> list[tuple[str, str]]:
    masters = []
    for name in sorted(info.clusters.get(cluster, [])):
        broker = info.brokers.get(name)
        addr = broker.master_addr if broker is not None else None
        if addr:
            masters.append((name, addr))
        else:
            log.info("cluster %s: broker %s has no master registered", cluster, name)
    return masters


async def _groups_by_master(cycle: CollectCycle, masters: list[tuple[str, str]]) -> dict[str, set[str]]:
    code = RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG

    async def one(addr: str) -> tuple[str, set[str]]:
        configs, _ = await cycle.call(
            addr, code, lambda: cycle.admin.get_subscription_groups(addr, timeout=cycle.call_timeout)
        )
        return addr, {g for g in (configs or {}) if cycle.selection.group(g, is_system=is_system_group(g))}

    return dict(await asyncio.gather(*(one(addr) for _, addr in masters)))


async def _connections(cycle: CollectCycle, group: str, addrs: list[str]) -> tuple[str, ConsumerConnection] | None:
    """The first broker's non-empty connection list of `group`; None when no broker has one."""
    code = RequestCode.GET_CONSUMER_CONNECTION_LIST
    for addr in addrs:
        conn, _ = await cycle.call(
            addr,
            code,
            lambda addr=addr: cycle.admin.get_consumer_connections(addr, group, timeout=cycle.call_timeout),
            answers=(ConsumerNotOnline,),
        )
        # A client heartbeats only to the brokers of its routes: 206 here may be "online elsewhere".
        if conn is not None and conn.connections:
            return addr, conn
    return None


async def _running_info(cycle: CollectCycle, addr: str, group: str, client_id: str) -> None:
    info, _ = await cycle.call(
        addr,
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        lambda: cycle.admin.get_consumer_running_info(
            addr, group, client_id, cycle.selection.wants_jstack(group), timeout=cycle.call_timeout),
    )
    if info is not None and info.jstack:
        cycle.thread_dump.extend(thread_dump_rows(cycle.cluster, cycle.now, group, client_id, info.jstack))
    if info is not None:
        cycle.process_queue.extend(process_queue_rows(cycle.cluster, cycle.now, group, client_id, info))
        cycle.consumer_status.extend(consumer_status_rows(cycle.cluster, cycle.now, group, client_id, info))
        cycle.pop_queue.extend(pop_queue_rows(cycle.cluster, cycle.now, group, client_id, info))


async def _consume_stats(cycle: CollectCycle, addr: str, group: str) -> None:
    stats, _ = await cycle.call(
        addr,
        RequestCode.GET_CONSUME_STATS,
        lambda: cycle.admin.get_consume_stats(addr, group, timeout=cycle.call_timeout),
    )
    if stats is not None:
        rows = [r for r in consumer_queue_rows(cycle.cluster, cycle.now, group, stats)
                if r["topic_kind"] != "normal" or cycle.selection.topic(r["topic"])]
        cycle.consumer_queue.extend(rows)
        cycle.topics.setdefault(addr, set()).update(r["topic"] for r in rows)
        normal = sorted({r["topic"] for r in rows if r["topic_kind"] == "normal"})
        await asyncio.gather(*(_consume_delay(cycle, addr, group, topic, rows) for topic in normal))


async def _consume_delay(cycle: CollectCycle, addr: str, group: str, topic: str, rows: list[dict[str, Any]]) -> None:
    """Fill consume_delay_ms from QUERY_CONSUME_TIME_SPAN: the broker's own delay, no PULL needed (ref §8)."""
    spans, _ = await cycle.call(
        addr, RequestCode.QUERY_CONSUME_TIME_SPAN,
        lambda: cycle.admin.query_consume_time_span(addr, topic, group, timeout=cycle.call_timeout),
    )
    by_queue = {(s.message_queue.broker_name, s.message_queue.queue_id): s.delay_time for s in spans or ()}
    for row in rows:
        if row["topic"] == topic and (row["broker"], row["queue_id"]) in by_queue:
            # delayTime is 0 when the group is caught up (commit == max), as the column means.
            row["consume_delay_ms"] = max(0, by_queue[(row["broker"], row["queue_id"])])


async def _collect_group(cycle: CollectCycle, group: str, addrs: list[str]) -> None:
    found = await _connections(cycle, group, addrs)
    tasks: list[Awaitable[None]] = []
    broadcasting = False
    if found is not None:
        addr, conn = found
        cycle.online_groups.add(group)
        cycle.clients += len(conn.connections)
        broadcasting = conn.message_model == BROADCASTING
        cycle.consumer_client.extend(consumer_client_rows(cycle.cluster, cycle.now, group, conn))
        if conn.consume_type != CONSUME_POP:
            # Proxy (gRPC) clients answer no running info: only the broker-side tables fill for them.
            tasks += [_running_info(cycle, addr, group, cid) for cid in sorted(set(conn.client_ids))]
    if not broadcasting:
        # Broadcasting groups keep offsets on the clients; the broker's ConsumeStats mean nothing (ref §7).
        tasks += [_consume_stats(cycle, addr, group) for addr in addrs]
    await asyncio.gather(*tasks)
    for addr in addrs:
        cycle.topics.setdefault(addr, set()).update({RETRY_PREFIX + group, DLQ_PREFIX + group})


async def collect_cluster(
    admin: AdminClient,
    cluster_name: str,
    namesrv_addrs: Iterable[str],
    now: datetime,
    *,
    call_timeout: float,
    concurrency: int = 8,
    per_broker: int = 4,
    selection: Selection | None = None,
    topic_lists: TopicListCache | None = None,
) -> CollectResult:
    """Collect one cycle of `cluster_name`: rows per table and a summary; never raises for server trouble.

    `topic_lists` caches the namesrv topic list across cycles (the daemon passes TOPIC_LISTS);
    without it the list is asked each cycle.
    """
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    cycle = CollectCycle(admin, cluster_name, now, call_timeout, asyncio.Semaphore(max(1, concurrency)),
                   selection or Selection(), per_target=max(1, per_broker))
    masters: list[tuple[str, str]] = []
    groups: dict[str, list[str]] = {}
    found: ClusterInfo | None = None
    try:
        admin.new_cycle()
        namesrv = list(namesrv_addrs)
        found = await _discover(cycle, namesrv)
        if found is not None:
            masters = _masters(found, cluster_name)
            addrs = _all_addrs(found, cluster_name)
            cycle.brokers = {addr: (name, broker_id) for name, broker_id, addr in addrs}
            runtime = [_broker_runtime(cycle, n, i, a) for n, i, a in addrs]
            by_master = await _groups_by_master(cycle, masters)
            for _, addr in masters:
                for group in by_master.get(addr, ()):
                    groups.setdefault(group, []).append(addr)
            # A group whose config lives elsewhere (auto-created, deleted config) still has a %RETRY% topic.
            for group in await retry_topic_groups(cycle, namesrv, topic_lists or TopicListCache(0.0)):
                groups.setdefault(group, [addr for _, addr in masters])
            cycle.group_names = set(groups)
            await asyncio.gather(
                *runtime, *(_collect_group(cycle, g, addrs) for g, addrs in sorted(groups.items()))
            )
            fill_replication_behind(cycle.broker)
            mark_pop_groups(cycle.consumer_queue, cycle.pop_queue)
            await asyncio.gather(
                *(_topic_stats(cycle, name, addr, topic)
                  for name, addr in masters for topic in sorted(cycle.topics.get(addr, ())))
            )
    except Exception as exc:  # last line of defence: a bug yields a health row, not a dead daemon
        log.exception("collecting cluster %s failed", cluster_name)
        cycle.health.append(
            {
                "ts": now,
                "cluster": cluster_name,
                "target": cluster_name,
                "call": "collect_cluster",
                "ok": False,
                "error": f"internal error: {exc!r}",
                "latency_ms": 0.0,
            }
        )
    return _result(cycle, masters, groups, discovered=found is not None)


def _result(
    cycle: CollectCycle, masters: list[tuple[str, str]], groups: dict[str, list[str]], *, discovered: bool
) -> CollectResult:
    failed = sum(1 for r in cycle.health if not r["ok"])
    rows = {
        PROCESS_QUEUE: cycle.process_queue,
        CONSUMER_QUEUE: cycle.consumer_queue,
        CONSUMER_STATUS: cycle.consumer_status,
        CONSUMER_CLIENT: cycle.consumer_client,
        TOPIC_QUEUE: cycle.topic_queue,
        BROKER: cycle.broker,
        # Only groups in jstack_groups send a jstack: no table at all for most clusters.
        **({"thread_dump": cycle.thread_dump} if cycle.thread_dump else {}),
        # Only 5.x clients in pop mode have PopProcessQueues.
        **({POP_QUEUE: cycle.pop_queue} if cycle.pop_queue else {}),
        COLLECTOR_HEALTH: with_target_figures(cycle.health, cycle.brokers),
    }
    if not discovered:
        why = (
            next((r["error"] for r in reversed(cycle.health) if not r["ok"]), None) or "no name server given"
        )
        summary = f"{cycle.cluster}: discovery failed, nothing collected: {why}"
    else:
        offline = len(groups) - len(cycle.online_groups)
        summary = (
            f"{cycle.cluster}: {len(masters)} master(s), {len(groups)} group(s) "
            f"({len(cycle.online_groups)} online, {offline} offline), {cycle.clients} client(s); "
            f"{len(cycle.health)} call(s), {failed} failed; "
            + ", ".join(f"{len(v)} {k}" for k, v in rows.items() if k != COLLECTOR_HEALTH) + " row(s)"
        )
    return CollectResult(
        rows=rows,
        summary=summary,
        masters=len(masters),
        groups=len(groups),
        online_groups=len(cycle.online_groups),
        clients=cycle.clients,
        calls=len(cycle.health),
        failed_calls=failed,
    )
