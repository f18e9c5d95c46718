"""collect_cluster with an AdminClient double that answers from the real 4.9.7 captures.

The end-to-end run over the wire against the simulator lives with the simulator's tests; here the
double makes failures (offline groups, timeouts, dead name servers, bugs) easy to inject.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from daemon.collectors.cluster import (
    COLLECTOR_HEALTH,
    CONSUMER_QUEUE,
    PROCESS_QUEUE,
    collect_cluster,
    is_system_group,
)
from daemon.collectors.remoting import bodies
from daemon.collectors.remoting.codes import RequestCode
from daemon.collectors.remoting.errors import (
    RemotingConnectError,
    RemotingTimeout,
    response_error,
)
from daemon.collectors.timeconv import ms_to_datetime
from daemon.store.writer import ParquetStore
from rules.tables import get_table
from tests.daemon.collectors.wire import body, meta

pytestmark = pytest.mark.timeout(30)

NOW = datetime(2026, 11, 21, 23, 38, 36, tzinfo=UTC)
NAMESRV = "127.0.0.1:9876"
BROKER = "127.0.0.1:10911"
PIDS = {"stuckGroup": 5764, "healthyGroup": 5770, "failGroup": 5776, "slowGroup": 5782}


class FakeAdmin:
    """Answers like the captured broker; `faults[(call, key)]` is an exception to raise or "hang"."""

    def __init__(self, rnd: str = "t1", call_timeout: float = 0.2) -> None:
        self.rnd = rnd
        self.call_timeout = call_timeout
        self.faults: dict[tuple[str, str], Any] = {}
        self.calls: list[tuple[str, str]] = []
        self.hangs: list[tuple[str, str, str]] = []  # ("start" | "end", call, key), in the order they happened
        self.cycles = 0

    def new_cycle(self) -> None:
        self.cycles += 1

    async def _fault(self, call: str, key: str, code: RequestCode, addr: str) -> None:
        self.calls.append((call, key))
        fault = self.faults.get((call, key))
        if fault == "hang":
            # What the real client does: give up after the call timeout.
            self.hangs.append(("start", call, key))
            await asyncio.sleep(self.call_timeout)
            self.hangs.append(("end", call, key))
            raise RemotingTimeout(addr, code, self.call_timeout)
        if fault is not None:
            raise fault

    async def get_cluster_info(self, namesrv: str, *, timeout: float | None = None) -> bodies.ClusterInfo:
        await self._fault("106", namesrv, RequestCode.GET_BROKER_CLUSTER_INFO, namesrv)
        return bodies.decode_cluster_info(body(f"{self.rnd}_106_GET_BROKER_CLUSTER_INFO"))

    async def get_topic_list(self, namesrv: str, *, timeout: float | None = None) -> list[str]:
        await self._fault("206", namesrv, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, namesrv)
        return bodies.decode_topic_list(body(f"{self.rnd}_206_GET_ALL_TOPIC_LIST_FROM_NAMESERVER"))

    async def get_subscription_groups(self, addr: str, *, timeout: float | None = None) -> Any:
        await self._fault("201", addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, addr)
        return bodies.decode_subscription_groups(body(f"{self.rnd}_201_GET_ALL_SUBSCRIPTIONGROUP_CONFIG"))

    async def get_consumer_connections(self, addr: str, group: str, *, timeout: float | None = None) -> Any:
        await self._fault("203", group, RequestCode.GET_CONSUMER_CONNECTION_LIST, addr)
        return bodies.decode_consumer_connection(body(f"{self.rnd}_203_GET_CONSUMER_CONNECTION_LIST_{group}"))

    async def get_consumer_running_info(
        self, addr: str, group: str, client_id: str, jstack: bool = False, *, timeout: float | None = None
    ) -> Any:
        await self._fault("307", group, RequestCode.GET_CONSUMER_RUNNING_INFO, addr)
        assert client_id in meta(f"{self.rnd}_clientIds.json")[group]
        assert not jstack
        return bodies.decode_consumer_running_info(
            body(f"{self.rnd}_307_GET_CONSUMER_RUNNING_INFO_{group}_{PIDS[group]}")
        )

    async def get_consume_stats(
        self, addr: str, group: str, topic: str | None = None, *, timeout: float | None = None
    ) -> Any:
        await self._fault("208", group, RequestCode.GET_CONSUME_STATS, addr)
        assert topic is None
        return bodies.decode_consume_stats(body(f"{self.rnd}_208_GET_CONSUME_STATS_{group}"))

    async def get_topic_stats(self, addr: str, topic: str, *, timeout: float | None = None) -> Any:
        await self._fault("202", topic, RequestCode.GET_TOPIC_STATS_INFO, addr)
        captured = {"OrderTopic": "OrderTopic", "AuditTopic": "AuditTopic",
                    "%RETRY%failGroup": "RETRY_failGroup", "%DLQ%failGroup": "DLQ_failGroup"}
        if topic not in captured:
            # What the broker answers for a topic it does not have (captured as t?_ERR_202_…).
            raise response_error(addr, 202, 17, f"topic[{topic}] not exist", role="broker", context=f"topic {topic}")
        return bodies.decode_topic_stats(body(f"{self.rnd}_202_GET_TOPIC_STATS_INFO_{captured[topic]}"))

    async def query_consume_time_span(
        self, addr: str, topic: str, group: str, *, timeout: float | None = None
    ) -> Any:
        await self._fault("303", f"{group}/{topic}", RequestCode.QUERY_CONSUME_TIME_SPAN, addr)
        if (group, topic) == ("stuckGroup", "OrderTopic"):
            return bodies.decode_consume_time_span(body(f"{self.rnd}_303_QUERY_CONSUME_TIME_SPAN_OrderTopic_stuckGroup"))
        return []  # not captured for the other groups: no delay known, the rows keep null

    async def get_broker_runtime_info(self, addr: str, *, timeout: float | None = None) -> Any:
        await self._fault("28", addr, RequestCode.GET_BROKER_RUNTIME_INFO, addr)
        return bodies.decode_kv_table(body(f"{self.rnd}_28_GET_BROKER_RUNTIME_INFO"))


def collect(admin: FakeAdmin, namesrvs: list[str] | None = None, concurrency: int = 8) -> Any:
    return asyncio.run(
        collect_cluster(
            admin,  # type: ignore[arg-type]
            "DefaultCluster",
            namesrvs or [NAMESRV],
            NOW,
            call_timeout=admin.call_timeout,
            concurrency=concurrency,
        )
    )


def rows_of(result: Any, table: str, **match: Any) -> list[dict[str, Any]]:
    return [r for r in result.rows[table] if all(r[k] == v for k, v in match.items())]


@pytest.mark.parametrize("rnd", ["t1", "t2"])
def test_full_cycle_from_captures(rnd: str, tmp_path: Any) -> None:
    admin = FakeAdmin(rnd)
    result = collect(admin)
    assert (result.masters, result.groups, result.online_groups, result.clients) == (1, 4, 4, 4)
    # 106 + 28 + 201 + 4 × 203 + 4 × 307 + 4 × 208 + 202 for OrderTopic, AuditTopic and each
    # group's %RETRY% and %DLQ%; system groups never queried.
    groups = ("stuckGroup", "healthyGroup", "failGroup", "slowGroup")
    assert {key for call, key in admin.calls if call == "202"} == {
        "OrderTopic", "AuditTopic", *(f"%RETRY%{g}" for g in groups), *(f"%DLQ%{g}" for g in groups)
    }
    # + one 303 per group and normal topic it consumes (4) + the namesrv topic list (206).
    assert result.calls == 30 and result.failed_calls == 0
    assert all(r["ok"] and r["error"] is None for r in result.rows[COLLECTOR_HEALTH])
    assert {r["target"] for r in result.rows[COLLECTOR_HEALTH]} == {NAMESRV, BROKER}

    (q3,) = rows_of(result, PROCESS_QUEUE, group="stuckGroup", topic="OrderTopic", queue_id=3)
    assert q3["client_id"] == meta(f"{rnd}_clientIds.json")["stuckGroup"][0]
    assert (
        q3["cached_msg_count"],
        q3["cached_min_offset"],
        q3["cached_max_offset"],
        q3["commit_offset"],
    ) == (
        2,
        0,
        3626,
        0,
    )
    assert q3["last_consume_ts"] == ms_to_datetime(1795304184796)
    assert q3["last_pull_ts"] == ms_to_datetime(1795304316523 if rnd == "t1" else 1795304381121)
    assert (q3["locked"], q3["dropped"], q3["orderly"]) == (True, False, False)
    assert (q3["pull_threshold_for_queue"], q3["pull_threshold_size_mib"], q3["max_span"]) == (
        1000,
        100,
        2000,
    )
    assert (q3["consume_timeout_min"], q3["max_reconsume_times"]) == (15, 16)
    assert q3["ts"] == NOW and q3["cluster"] == "DefaultCluster" and q3["broker"] == "broker-a"

    (cq3,) = rows_of(result, CONSUMER_QUEUE, group="stuckGroup", topic="OrderTopic", queue_id=3)
    assert (cq3["broker_offset"], cq3["consumer_offset"]) == ((3708, 0) if rnd == "t1" else (3772, 0))
    assert cq3["last_consumed_store_ts"] is None and cq3["pull_offset"] is None
    assert cq3["topic_kind"] == "normal"
    (retry,) = rows_of(result, CONSUMER_QUEUE, group="failGroup", topic="%RETRY%failGroup")
    assert retry["topic_kind"] == "retry"
    stuck = rows_of(result, CONSUMER_QUEUE, group="stuckGroup")
    assert sum(r["broker_offset"] - r["consumer_offset"] for r in stuck) == (3712 if rnd == "t1" else 3778)

    # consume_delay_ms from 303: the stuck queue 3 is minutes behind, the others milliseconds.
    delays = {r["queue_id"]: r["consume_delay_ms"] for r in rows_of(result, CONSUMER_QUEUE, group="stuckGroup", topic="OrderTopic")}
    assert delays[3] > 60_000 and all(d < 1_000 for q, d in delays.items() if q != 3)
    if rnd == "t2":
        assert delays[3] == 233006

    # The tables added for the rules: the README oracle values of each round.
    dlq = rows_of(result, "topic_queue", topic="%DLQ%failGroup")
    assert [(r["queue_id"], r["max_offset"], r["topic_kind"], r["group"]) for r in dlq] == [
        (0, 1582 if rnd == "t1" else 1712, "dlq", "failGroup")
    ]
    (retry_tq,) = rows_of(result, "topic_queue", topic="%RETRY%failGroup")
    assert (retry_tq["max_offset"], retry_tq["topic_kind"]) == ((3224 if rnd == "t1" else 3484), "retry")
    audit = rows_of(result, "topic_queue", topic="AuditTopic")
    assert [r["max_offset"] for r in audit] == [416 if rnd == "t1" else 448] * 4
    (broker,) = result.rows["broker"]
    assert (broker["broker"], broker["broker_id"], broker["addr"], broker["version"]) == (
        "broker-a", 0, BROKER, "V4_9_7"
    )
    assert broker["remain_transient_buffers"] is None  # 2147483647: the pool is not in use
    (status,) = rows_of(result, "consumer_status", group="stuckGroup", topic="OrderTopic")
    assert (status["consume_ok_tps"], status["pull_tps"], status["consume_failed_msgs_1h"]) == (7.0, 7.0, 0)
    fail_status = {r["topic"]: r for r in rows_of(result, "consumer_status", group="failGroup")}
    if rnd == "t1":
        assert fail_status["AuditTopic"]["consume_failed_tps"] == pytest.approx(2.0, abs=0.05)
        assert fail_status["AuditTopic"]["consume_ok_tps"] == 0.0
    (client,) = rows_of(result, "consumer_client", group="stuckGroup")
    assert client["client_id"] == meta(f"{rnd}_clientIds.json")["stuckGroup"][0]
    assert (client["message_model"], client["consume_type"]) == ("CLUSTERING", "CONSUME_PASSIVELY")
    assert "OrderTopic=*" in client["subscriptions"]

    # Every row fits the table catalog exactly and is writable.
    store = ParquetStore(tmp_path)
    for table, rows in result.rows.items():
        stored = {c.name for c in get_table(table).stored_columns}
        assert all(set(r) == stored for r in rows), table
        assert store.append(table, rows, NOW) is not None
    assert "1 master(s), 4 group(s) (4 online, 0 offline), 4 client(s)" in result.summary


def test_offline_group_keeps_consumer_queue_rows() -> None:
    admin = FakeAdmin()
    admin.faults[("203", "slowGroup")] = response_error(
        BROKER, 203, 206, "the consumer group[slowGroup] not online", role="broker", context="group slowGroup"
    )
    result = collect(admin)
    assert not rows_of(result, PROCESS_QUEUE, group="slowGroup")
    assert len(rows_of(result, CONSUMER_QUEUE, group="slowGroup")) == 5
    assert ("307", "slowGroup") not in admin.calls
    health = [r for r in result.rows[COLLECTOR_HEALTH] if r["call"] == "GET_CONSUMER_CONNECTION_LIST"]
    assert health and all(r["ok"] for r in health)  # an offline group is an answer, not a collector failure
    assert result.online_groups == 3 and "1 offline" in result.summary


def test_slow_client_costs_its_timeout_and_yields_partial_rows() -> None:
    admin = FakeAdmin(call_timeout=0.3)
    admin.faults[("307", "stuckGroup")] = "hang"
    admin.faults[("208", "failGroup")] = "hang"
    result = collect(admin)
    # The two hangs ran concurrently: both started before either ended.
    assert [kind for kind, _, _ in admin.hangs] == ["start", "start", "end", "end"], admin.hangs
    assert not rows_of(result, PROCESS_QUEUE, group="stuckGroup")
    assert rows_of(result, PROCESS_QUEUE, group="slowGroup")
    assert not rows_of(result, CONSUMER_QUEUE, group="failGroup")
    assert rows_of(result, CONSUMER_QUEUE, group="stuckGroup")
    failed = [r for r in result.rows[COLLECTOR_HEALTH] if not r["ok"]]
    assert {r["call"] for r in failed} == {"GET_CONSUMER_RUNNING_INFO", "GET_CONSUME_STATS"}
    assert all("did not answer" in r["error"] and r["latency_ms"] >= 250 for r in failed)
    assert result.failed_calls == 2


def test_unreachable_namesrv_yields_one_health_row() -> None:
    admin = FakeAdmin()
    admin.faults[("106", NAMESRV)] = RemotingConnectError(NAMESRV, "connection refused")
    result = collect(admin)
    assert result.rows[PROCESS_QUEUE] == [] and result.rows[CONSUMER_QUEUE] == []
    (row,) = result.rows[COLLECTOR_HEALTH]
    assert (row["target"], row["call"], row["ok"]) == (NAMESRV, "GET_BROKER_CLUSTER_INFO", False)
    assert row["error"] == f"cannot connect to {NAMESRV}: connection refused"
    assert "discovery failed" in result.summary


def test_second_namesrv_is_tried() -> None:
    admin = FakeAdmin()
    admin.faults[("106", "10.0.0.1:9876")] = RemotingConnectError("10.0.0.1:9876", "connection refused")
    result = collect(admin, ["10.0.0.1:9876", NAMESRV])
    assert result.groups == 4 and result.failed_calls == 1


def test_unknown_cluster_is_reported() -> None:
    result = asyncio.run(
        collect_cluster(FakeAdmin(), "OtherCluster", [NAMESRV], NOW, call_timeout=0.2)  # type: ignore[arg-type]
    )
    (row,) = result.rows[COLLECTOR_HEALTH]
    assert not row["ok"] and "knows no cluster 'OtherCluster' (known: DefaultCluster)" in row["error"]


def test_failing_broker_and_bugs_never_escape() -> None:
    admin = FakeAdmin()
    admin.faults[("203", "healthyGroup")] = ValueError("boom")
    admin.faults[("208", "healthyGroup")] = RuntimeError("bang")
    result = collect(admin)
    errors = {r["call"]: r["error"] for r in result.rows[COLLECTOR_HEALTH] if not r["ok"]}
    assert errors == {"GET_CONSUMER_CONNECTION_LIST": "boom", "GET_CONSUME_STATS": "bang"}
    assert rows_of(result, PROCESS_QUEUE, group="stuckGroup")

    admin = FakeAdmin()
    admin.faults[("201", BROKER)] = RemotingTimeout(BROKER, 201, 0.2)
    result = collect(admin)
    # The groups are still found from the namesrv's %RETRY% topics and collected.
    assert result.groups == 4 and result.failed_calls == 1
    assert {r["group"] for r in result.rows[CONSUMER_QUEUE]} == set(PIDS)
    assert len(result.rows["broker"]) == 1  # the broker runtime call does not depend on the groups


def test_concurrency_is_bounded() -> None:
    admin = FakeAdmin()
    active = 0
    peak = 0
    original = admin._fault

    async def counting(call: str, key: str, code: RequestCode, addr: str) -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        await original(call, key, code, addr)

    admin._fault = counting  # type: ignore[method-assign]
    collect(admin, concurrency=2)
    assert peak == 2


def test_naive_now_is_taken_as_utc() -> None:
    result = asyncio.run(
        collect_cluster(FakeAdmin(), "DefaultCluster", [NAMESRV], datetime(2026, 1, 1), call_timeout=0.2)  # type: ignore[arg-type]
    )
    assert result.rows[COLLECTOR_HEALTH][0]["ts"] == datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("group", "system"),
    [
        ("TOOLS_CONSUMER", True),
        ("DEFAULT_CONSUMER", True),
        ("__MONITOR_CONSUMER", True),
        ("CID_RMQ_SYS_TRANS", True),
        ("CID_ONSAPI_OWNER", True),
        ("SELF_TEST_C_GROUP", True),
        ("FILTERSRV_CONSUMER", True),
        ("CID_ONS-HTTP-PROXY", True),
        ("SCHEDULE_CONSUMER", True),
        ("stuckGroup", False),
        ("CID_orders", False),
        ("TOOLS_CONSUMER_2", False),
    ],
)
def test_system_groups(group: str, system: bool) -> None:
    assert is_system_group(group) is system


def test_ms_to_datetime() -> None:
    assert ms_to_datetime(0) is None and ms_to_datetime(-1) is None and ms_to_datetime(None) is None
    assert ms_to_datetime(1795304184796) == datetime(2026, 11, 21, 23, 36, 24, 796000, tzinfo=UTC)
    assert ms_to_datetime(10**20) is None
