"""Decoders against the real 4.9.7 captures; expected values are the fixture README's oracle."""

from __future__ import annotations

import pytest

from daemon.collectors.remoting import bodies, frame
from daemon.collectors.remoting.bodies import MessageQueue
from daemon.collectors.remoting.codes import RequestCode, ResponseCode
from daemon.collectors.remoting.errors import ConsumerNotOnline, TopicNotExist, response_error
from tests.daemon.collectors.wire import body, meta, response, wire_path

ROUNDS = ["t1", "t2"]
STUCK_Q3 = MessageQueue("OrderTopic", "broker-a", 3)


def running_info(rnd: str, group: str, pid: int, jstack: bool = False) -> bodies.ConsumerRunningInfo:
    suffix = "_jstack" if jstack else ""
    return bodies.decode_consumer_running_info(
        body(f"{rnd}_307_GET_CONSUMER_RUNNING_INFO_{group}_{pid}{suffix}")
    )


def consume_stats(rnd: str, group: str) -> bodies.ConsumeStats:
    return bodies.decode_consume_stats(body(f"{rnd}_208_GET_CONSUME_STATS_{group}"))


# ---- 307 stuckGroup ----


@pytest.mark.parametrize(("rnd", "last_pull"), [("t1", 1795304316523), ("t2", 1795304381121)])
@pytest.mark.parametrize("jstack", [False, True])
def test_307_stuck_queue_3(rnd: str, last_pull: int, jstack: bool) -> None:
    info = running_info(rnd, "stuckGroup", 5764, jstack)
    pq = info.mq_table[STUCK_Q3]
    assert pq.commit_offset == 0
    assert pq.cached_msg_count == 2
    assert pq.cached_msg_min_offset == 0
    assert pq.cached_msg_max_offset == 3626
    assert pq.cached_msg_size_mib == 0
    assert pq.locked is True
    assert pq.dropped is False
    assert pq.last_consume_timestamp == 1795304184796
    if not jstack:  # the jstack capture is a separate request, a moment later
        assert pq.last_pull_timestamp == last_pull
    others = [q for mq, q in info.mq_table.items() if mq != STUCK_Q3]
    assert others and all(q.cached_msg_count == 0 for q in others)


@pytest.mark.parametrize("rnd", ROUNDS)
def test_307_stuck_status_and_settings(rnd: str) -> None:
    info = running_info(rnd, "stuckGroup", 5764)
    status = info.status_table["OrderTopic"]
    assert status.consume_ok_tps == 7.0
    assert status.pull_tps == 7.0
    assert status.consume_failed_msgs == 0
    settings = bodies.consumer_settings(info.properties)
    assert settings == bodies.ConsumerSettings(
        pull_threshold_for_queue=1000,
        pull_threshold_size_mib=100,
        max_span=2000,
        consume_timeout_min=15,
        max_reconsume_times=16,  # reported -1, concurrent → 16
        orderly=False,
    )
    assert info.jstack is None


@pytest.mark.parametrize("rnd", ROUNDS)
def test_307_jstack_names_the_blocked_thread(rnd: str) -> None:
    raw = body(f"{rnd}_307_GET_CONSUMER_RUNNING_INFO_stuckGroup_5764_jstack")
    info = bodies.decode_consumer_running_info(raw)
    assert len(raw) > 28_000
    assert info.jstack is not None
    assert "ConsumeMessageThread_stuckGroup_2" in info.jstack
    assert "ConsumeMessageThread_stuckGroup_3" in info.jstack
    assert "\n" in info.jstack


def test_307_success_is_judged_by_code_not_remark() -> None:
    cmd = response("t1_307_GET_CONSUMER_RUNNING_INFO_stuckGroup_5764")
    assert cmd.code == ResponseCode.SUCCESS
    assert cmd.remark == "not set any response code"


@pytest.mark.parametrize(
    ("rnd", "commits", "counts", "max_offset"),
    [
        ("t1", [208, 208, 208, 208], [208, 208, 208, 208], 415),
        ("t2", [288, 289, 289, 288], [160, 159, 159, 160], 447),
    ],
)
def test_307_slow_group(rnd: str, commits: list[int], counts: list[int], max_offset: int) -> None:
    info = running_info(rnd, "slowGroup", 5782)
    queues = [info.mq_table[MessageQueue("AuditTopic", "broker-a", q)] for q in range(4)]
    assert [q.commit_offset for q in queues] == commits
    assert [q.cached_msg_count for q in queues] == counts
    assert [q.cached_msg_min_offset for q in queues] == commits
    assert {q.cached_msg_max_offset for q in queues} == {max_offset}
    status = info.status_table["AuditTopic"]
    assert status.consume_rt == pytest.approx(200.3, abs=0.1)
    assert status.consume_ok_tps == pytest.approx(4.98, abs=0.03)


def test_307_fail_group_status() -> None:
    info = running_info("t1", "failGroup", 5776)
    assert info.status_table["AuditTopic"].consume_failed_tps == 2.0
    assert info.status_table["%RETRY%failGroup"].consume_failed_tps == 3.3
    assert info.status_table["AuditTopic"].consume_ok_tps == 0.0


@pytest.mark.parametrize("rnd", ROUNDS)
def test_307_healthy_group_caches_nothing(rnd: str) -> None:
    info = running_info(rnd, "healthyGroup", 5770)
    assert info.mq_table and all(q.cached_msg_count == 0 for q in info.mq_table.values())


# ---- 208 ----


@pytest.mark.parametrize(("rnd", "broker_offset", "total"), [("t1", 3708, 3712), ("t2", 3772, 3778)])
@pytest.mark.parametrize("suffix", ["", "_OrderTopic"])
def test_208_stuck(rnd: str, broker_offset: int, total: int, suffix: str) -> None:
    stats = consume_stats(rnd, f"stuckGroup{suffix}")
    q3 = stats.offsets[STUCK_Q3]
    assert (q3.broker_offset, q3.consumer_offset, q3.last_timestamp) == (broker_offset, 0, 0)
    assert q3.pull_offset is None  # 4.9.7 has no pullOffset
    assert stats.total_diff == total
    assert stats.consume_tps == 7.0
    other_lags = [o.broker_offset - o.consumer_offset for mq, o in stats.offsets.items() if mq != STUCK_Q3]
    assert all(0 <= lag <= 1 for lag in other_lags)


@pytest.mark.parametrize(("rnd", "total"), [("t1", 2), ("t2", 0)])
def test_208_healthy(rnd: str, total: int) -> None:
    assert consume_stats(rnd, "healthyGroup").total_diff == total


def test_208_healthy_t2_q3_and_tps() -> None:
    stats = consume_stats("t2", "healthyGroup")
    q3 = stats.offsets[STUCK_Q3]
    assert (q3.broker_offset, q3.consumer_offset) == (3772, 3772)
    assert stats.consume_tps == 8.0


@pytest.mark.parametrize(
    ("rnd", "consumers", "total"), [("t1", [207, 207, 207, 208], 835), ("t2", [287, 287, 286, 287], 645)]
)
def test_208_slow(rnd: str, consumers: list[int], total: int) -> None:
    stats = consume_stats(rnd, "slowGroup")
    audit = [stats.offsets[MessageQueue("AuditTopic", "broker-a", q)] for q in range(4)]
    assert [o.consumer_offset for o in audit] == consumers
    assert stats.total_diff == total
    # lastTimestamp = store time of the last consumed message (≈ 23:36:04Z), far behind the capture.
    assert all(1795304100000 < o.last_timestamp < 1795304200000 for o in audit)


@pytest.mark.parametrize(
    ("rnd", "retry", "tps"), [("t1", (3224, 3222), 5.066666666666666), ("t2", (3484, 3482), 6.0)]
)
def test_208_fail_group_includes_retry_topic(rnd: str, retry: tuple[int, int], tps: float) -> None:
    stats = consume_stats(rnd, "failGroup")
    r = stats.offsets[MessageQueue("%RETRY%failGroup", "broker-a", 0)]
    assert (r.broker_offset, r.consumer_offset) == retry
    assert stats.consume_tps == tps


# ---- namesrv: 106, 105 ----


@pytest.mark.parametrize("rnd", ROUNDS)
def test_106_cluster_info(rnd: str) -> None:
    info = bodies.decode_cluster_info(body(f"{rnd}_106_GET_BROKER_CLUSTER_INFO"))
    assert info.clusters == {"DefaultCluster": ["broker-a"]}
    assert info.brokers["broker-a"].addrs == {0: "127.0.0.1:10911"}
    assert info.brokers["broker-a"].master_addr == "127.0.0.1:10911"
    assert info.brokers["broker-a"].cluster == "DefaultCluster"


@pytest.mark.parametrize("rnd", ROUNDS)
def test_105_all_versions_decode_to_the_same_route(rnd: str) -> None:
    raw = {
        v: body(f"{rnd}_105_GET_ROUTEINFO_BY_TOPIC_OrderTopic_{v}") for v in ("v0", "v400", "v401", "v407")
    }
    assert b"{0:" in raw["v0"] and b"{0:" in raw["v400"]
    assert b'{"0":' in raw["v401"] and b'{"0":' in raw["v407"]
    routes = {v: bodies.decode_topic_route(b) for v, b in raw.items()}
    assert len({repr(r) for r in routes.values()}) == 1
    route = routes["v0"]
    assert route.brokers[0].addrs == {0: "127.0.0.1:10911"}
    assert route.queues == [bodies.QueueData("broker-a", 8, 8, 6, 0)]


def test_105_dlq_route_has_one_queue() -> None:
    route = bodies.decode_topic_route(body("t1_105_GET_ROUTEINFO_BY_TOPIC_DLQ_failGroup_v0"))
    assert [(q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queues] == [(1, 1, 6)]


# ---- broker: 203, 201, 202, 28, 303 ----


@pytest.mark.parametrize("rnd", ROUNDS)
@pytest.mark.parametrize("group", ["stuckGroup", "healthyGroup", "failGroup", "slowGroup"])
def test_203_client_ids(rnd: str, group: str) -> None:
    conn = bodies.decode_consumer_connection(body(f"{rnd}_203_GET_CONSUMER_CONNECTION_LIST_{group}"))
    assert conn.client_ids == meta(f"{rnd}_clientIds.json")[group]
    assert conn.consume_type == "CONSUME_PASSIVELY"
    assert conn.message_model == "CLUSTERING"
    assert f"%RETRY%{group}" in conn.subscriptions
    assert {c.language for c in conn.connections} == {"JAVA"}
    assert {c.version for c in conn.connections} == {407}


@pytest.mark.parametrize("rnd", ROUNDS)
def test_201_group_names(rnd: str) -> None:
    groups = bodies.decode_subscription_groups(body(f"{rnd}_201_GET_ALL_SUBSCRIPTIONGROUP_CONFIG"))
    assert set(groups) == {
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_PULL",
        "FILTERSRV_CONSUMER",
        "SELF_TEST_C_GROUP",
        "TOOLS_CONSUMER",
        "failGroup",
        "healthyGroup",
        "slowGroup",
        "stuckGroup",
    }
    assert groups["stuckGroup"].retry_max_times == 16
    assert groups["stuckGroup"].consume_enable is True


@pytest.mark.parametrize(("rnd", "dlq_max"), [("t1", 1582), ("t2", 1712)])
def test_202_dlq_and_retry(rnd: str, dlq_max: int) -> None:
    dlq = bodies.decode_topic_stats(body(f"{rnd}_202_GET_TOPIC_STATS_INFO_DLQ_failGroup"))
    assert [o.max_offset for o in dlq.offsets.values()] == [dlq_max]
    assert list(dlq.offsets) == [MessageQueue("%DLQ%failGroup", "broker-a", 0)]
    assert dlq.topic_put_tps is None  # 4.9.7 has no topicPutTps
    audit = bodies.decode_topic_stats(body(f"{rnd}_202_GET_TOPIC_STATS_INFO_AuditTopic"))
    assert {o.max_offset for o in audit.offsets.values()} == {416 if rnd == "t1" else 448}


def test_28_runtime_info_values_verbatim() -> None:
    table = bodies.decode_kv_table(body("t1_28_GET_BROKER_RUNTIME_INFO"))
    assert table["brokerVersionDesc"] == "V4_9_7"
    assert table["putTps"].endswith(" ")
    assert table["runtime"].startswith("[ 0 days")
    assert all(isinstance(v, str) for v in table.values())


@pytest.mark.parametrize("rnd", ROUNDS)
def test_303_stuck_queue_time_span(rnd: str) -> None:
    spans = {
        s.message_queue: s
        for s in bodies.decode_consume_time_span(
            body(f"{rnd}_303_QUERY_CONSUME_TIME_SPAN_OrderTopic_stuckGroup")
        )
    }
    q3 = spans[STUCK_Q3]
    assert q3.min_timestamp == q3.consume_timestamp == 1795304148095
    assert q3.delay_time > 60_000
    if rnd == "t2":
        assert q3.delay_time == 233006


@pytest.mark.parametrize("rnd", ROUNDS)
def test_30_31_offsets_in_header(rnd: str) -> None:
    assert response(f"{rnd}_30_GET_MAX_OFFSET_OrderTopic_q3").ext_fields["offset"] == (
        "3708" if rnd == "t1" else "3773"
    )
    assert response(f"{rnd}_31_GET_MIN_OFFSET_OrderTopic_q3").ext_fields["offset"] == "0"
    assert response(f"{rnd}_30_GET_MAX_OFFSET_OrderTopic_q3").body == b""


# ---- error responses ----


@pytest.mark.parametrize("rnd", ROUNDS)
def test_105_unknown_topic_is_17(rnd: str) -> None:
    cmd = response(f"{rnd}_105_GET_ROUTEINFO_BY_TOPIC_NoSuchTopic_v401")
    assert cmd.code == 17 and cmd.body == b""
    assert cmd.remark is not None
    assert cmd.remark.startswith("No topic route info in name server for the topic: NoSuchTopic")
    err = response_error(
        "127.0.0.1:9876", RequestCode.GET_ROUTEINFO_BY_TOPIC, cmd.code, cmd.remark, role="namesrv"
    )
    assert isinstance(err, TopicNotExist) and err.code == 17
    assert "\n" not in str(err)


@pytest.mark.parametrize(
    "name",
    [
        "t1_ERR_203_GET_CONSUMER_CONNECTION_LIST_offlineGroup",
        "t2_ERR_203_GET_CONSUMER_CONNECTION_LIST_offlineGroup",
        "rmqser_ERR_203_GET_CONSUMER_CONNECTION_LIST_offlineGroup",
    ],
)
def test_203_offline_group_is_206(name: str) -> None:
    cmd = response(name)
    assert cmd.code == 206
    assert cmd.remark == "the consumer group[offlineGroup] not online"
    err = response_error(
        "127.0.0.1:10911",
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
        cmd.code,
        cmd.remark,
        role="broker",
        context="group offlineGroup",
    )
    assert isinstance(err, ConsumerNotOnline)
    assert str(err) == (
        "broker 127.0.0.1:10911 answered GET_CONSUMER_CONNECTION_LIST (203) for group offlineGroup "
        "with 206 CONSUMER_NOT_ONLINE: the consumer group[offlineGroup] not online"
    )


def test_202_unknown_topic_is_17() -> None:
    cmd = response("t1_ERR_202_GET_TOPIC_STATS_INFO_NoSuchTopic")
    assert (cmd.code, cmd.remark) == (17, "topic[NoSuchTopic] not exist")


# ---- ROCKETMQ binary headers ----


def test_rmqser_binary_response_decodes() -> None:
    raw = wire_path("rmqser_30_GET_MAX_OFFSET_OrderTopic_q3.frame").read_bytes()
    assert len(raw) == 45
    cmd = frame.decode(raw)
    assert cmd.serialize_type == frame.ROCKETMQ
    assert (cmd.code, cmd.ext_fields, cmd.language, cmd.version) == (0, {"offset": "3782"}, "JAVA", 407)
    assert cmd.is_response


def test_rmqser_binary_request_reencodes_byte_identically() -> None:
    raw = wire_path("rmqser_30_GET_MAX_OFFSET_OrderTopic_q3.req.frame").read_bytes()
    cmd = frame.decode(raw)
    assert cmd.serialize_type == frame.ROCKETMQ
    assert cmd.code == RequestCode.GET_MAX_OFFSET
    assert frame.encode(cmd) == raw


@pytest.mark.parametrize(
    "name",
    [
        "rmqser_105_GET_ROUTEINFO_BY_TOPIC_OrderTopic_v401",
        "rmqser_208_GET_CONSUME_STATS_stuckGroup",
        "rmqser_28_GET_BROKER_RUNTIME_INFO",
        "rmqser_envrestart_28_GET_BROKER_RUNTIME_INFO_binaryrequest",
    ],
)
def test_rmqser_binary_frames_round_trip(name: str) -> None:
    for suffix in (".frame", ".req.frame"):
        raw = wire_path(name + suffix).read_bytes()
        cmd = frame.decode(raw)
        assert cmd.serialize_type == frame.ROCKETMQ
        assert frame.encode(cmd) == raw


def test_rmqser_bodies_are_the_same_fastjson() -> None:
    stats = bodies.decode_consume_stats(body("rmqser_208_GET_CONSUME_STATS_stuckGroup"))
    assert stats.offsets[STUCK_Q3].consumer_offset == 0
    route = bodies.decode_topic_route(body("rmqser_105_GET_ROUTEINFO_BY_TOPIC_OrderTopic_v401"))
    assert route.brokers[0].master_addr == "127.0.0.1:10911"


def test_json_request_to_rocketmq_env_broker_is_answered_in_json() -> None:
    assert response("rmqser_envrestart_28_GET_BROKER_RUNTIME_INFO_jsonrequest").serialize_type == frame.JSON
    assert (
        response("rmqser_envrestart_28_GET_BROKER_RUNTIME_INFO_binaryrequest").serialize_type
        == frame.ROCKETMQ
    )


def test_every_captured_body_parses() -> None:
    from daemon.collectors.remoting.fastjson import loads

    names = sorted(p.name for p in wire_path("").glob("*.frame") if not p.name.endswith(".req.frame"))
    assert len(names) > 80
    for name in names:
        cmd = frame.decode(wire_path(name).read_bytes())
        if cmd.body:
            assert isinstance(loads(cmd.body), dict), name
