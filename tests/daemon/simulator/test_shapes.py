"""The simulator's bodies have the shape of the real 4.9.7 bodies (same request code).

Both are parsed with the project's tolerant fastjson parser; then, at every level, a bean must
have the same keys in the same order with the same value types, and a map (Java Map: data keys)
must have the same key type and the same set of value shapes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from daemon.collectors.remoting import fastjson
from daemon.simulator import SimulatorThread
from tests.daemon.simulator.conftest import GROUP_A, call
from tests.fixtures_path import WIRE

# Properties whose value is a Java Map (keys are data, not bean property names).
MAP_KEYS = {
    "brokerAddrTable", "clusterAddrTable", "brokerAddrs", "filterServerTable", "subscriptionGroupTable",
    "subscriptionTable", "offsetTable", "mqTable", "properties", "statusTable", "table",
}  # fmt: skip


def shape(value: Any, key: str = "") -> Any:
    """A hashable description of a parsed body's structure (not its data)."""
    if isinstance(value, dict):
        if key in MAP_KEYS or any(not isinstance(k, str) for k in value):
            key_types = frozenset(type(k).__name__ for k in value)
            return ("map", key_types, frozenset(shape(v) for v in value.values()))
        return ("bean", tuple((k, shape(v, k)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("list", frozenset(shape(v) for v in value))
    return type(value).__name__


def fixture(name: str) -> Any:
    return fastjson.loads((WIRE / f"{name}.body").read_bytes())


def served(
    sim: SimulatorThread, target: str, code: int, ext: dict[str, str] | None = None, version: int = 401
) -> Any:
    addr = sim.namesrv_addr if target == "namesrv" else sim.broker_addrs[target]
    resp = call(addr, code, ext or {}, version=version)
    assert resp.code == 0, resp.remark
    return fastjson.loads(resp.body)


def client_id(sim: SimulatorThread) -> str:
    body = call(sim.broker_addrs["broker-a"], 203, {"consumerGroup": GROUP_A}).body.decode()
    m = re.search(r'"clientId":"([^"]+)"', body)
    assert m is not None
    return m.group(1)


CASES = [
    ("t1_106_GET_BROKER_CLUSTER_INFO", "namesrv", 106, {}, 401),
    ("t1_105_GET_ROUTEINFO_BY_TOPIC_OrderTopic_v0", "namesrv", 105, {"topic": "OrderTopic"}, 0),
    ("t1_105_GET_ROUTEINFO_BY_TOPIC_OrderTopic_v400", "namesrv", 105, {"topic": "OrderTopic"}, 400),
    ("t1_105_GET_ROUTEINFO_BY_TOPIC_OrderTopic_v401", "namesrv", 105, {"topic": "OrderTopic"}, 401),
    ("t1_105_GET_ROUTEINFO_BY_TOPIC_OrderTopic_v407", "namesrv", 105, {"topic": "OrderTopic"}, 407),
    ("t1_105_GET_ROUTEINFO_BY_TOPIC_DLQ_failGroup_v0", "namesrv", 105, {"topic": f"%RETRY%{GROUP_A}"}, 0),
    ("t1_206_GET_ALL_TOPIC_LIST_FROM_NAMESERVER", "namesrv", 206, {}, 401),
    ("t1_201_GET_ALL_SUBSCRIPTIONGROUP_CONFIG", "broker-a", 201, {}, 401),
    ("t1_203_GET_CONSUMER_CONNECTION_LIST_stuckGroup", "broker-a", 203, {"consumerGroup": GROUP_A}, 401),
    ("t1_208_GET_CONSUME_STATS_stuckGroup", "broker-a", 208, {"consumerGroup": GROUP_A}, 401),
    ("t1_208_GET_CONSUME_STATS_stuckGroup_OrderTopic", "broker-b", 208, {"consumerGroup": GROUP_A, "topic": "OrderTopic"}, 401),
    ("t1_202_GET_TOPIC_STATS_INFO_OrderTopic", "broker-a", 202, {"topic": "OrderTopic"}, 401),
    ("t1_202_GET_TOPIC_STATS_INFO_RETRY_failGroup", "broker-b", 202, {"topic": f"%RETRY%{GROUP_A}"}, 401),
    ("t1_303_QUERY_CONSUME_TIME_SPAN_OrderTopic_stuckGroup", "broker-a", 303, {"topic": "OrderTopic", "group": GROUP_A}, 401),
    ("t1_300_QUERY_TOPIC_CONSUME_BY_WHO_OrderTopic", "broker-a", 300, {"topic": "OrderTopic"}, 401),
    ("t1_43_GET_ALL_CONSUMER_OFFSET", "broker-a", 43, {}, 401),
]  # fmt: skip


@pytest.mark.parametrize(("name", "target", "code", "ext", "version"), CASES, ids=[c[0] for c in CASES])
def test_body_shape_matches_the_capture(
    stuck_sim: SimulatorThread, name: str, target: str, code: int, ext: dict[str, str], version: int
) -> None:
    assert shape(served(stuck_sim, target, code, ext, version)) == shape(fixture(name))


@pytest.mark.parametrize("jstack", [False, True])
def test_running_info_shape_matches_the_capture(stuck_sim: SimulatorThread, jstack: bool) -> None:
    ext = {"consumerGroup": GROUP_A, "clientId": client_id(stuck_sim), "jstackEnable": str(jstack).lower()}
    ours = served(stuck_sim, "broker-a", 307, ext)
    real = fixture("t1_307_GET_CONSUMER_RUNNING_INFO_stuckGroup_5764" + ("_jstack" if jstack else ""))
    assert shape(ours) == shape(real)
    assert set(ours["properties"]) == set(real["properties"])  # the same client settings are reported


def _runtime_keys(table: dict[str, str]) -> set[str]:
    # Path-named and delay-level keys depend on the host and on scheduled-message use.
    return {k for k in table if not k.startswith(("commitLogDiskRatio_", "scheduleMessageOffset_"))}


def test_runtime_info_has_the_captured_keys_all_strings(stuck_sim: SimulatorThread) -> None:
    ours = served(stuck_sim, "broker-b", 28)
    real = fixture("t1_28_GET_BROKER_RUNTIME_INFO")
    assert list(ours) == list(real) == ["table"]
    assert _runtime_keys(ours["table"]) == _runtime_keys(real["table"])
    assert all(isinstance(v, str) for v in ours["table"].values())
    assert any(k.startswith("commitLogDiskRatio_") for k in ours["table"])


def test_subscription_groups_include_the_brokers_system_groups(stuck_sim: SimulatorThread) -> None:
    ours = served(stuck_sim, "broker-a", 201)["subscriptionGroupTable"]
    real = fixture("t1_201_GET_ALL_SUBSCRIPTIONGROUP_CONFIG")["subscriptionGroupTable"]
    scenario_groups = {"stuckGroup", "healthyGroup", "failGroup", "slowGroup"}
    assert set(real) - scenario_groups <= set(ours)
    assert {GROUP_A, "orderConsumerB"} <= set(ours)


def test_fixture_metadata_agrees_with_the_bodies_used() -> None:
    # Guard against a renamed capture: every body used above was answered with code 0.
    for name, *_ in CASES:
        meta = json.loads((WIRE / f"{name}.json").read_text())
        assert meta["responseHeader"]["code"] == 0
