"""Real request frames over loopback, in JSON and ROCKETMQ binary header form."""

from __future__ import annotations

import contextlib
import re
import socket

import pytest

from daemon.collectors.remoting.frame import FLAG_ONEWAY, JSON, ROCKETMQ, RemotingCommand, encode
from daemon.simulator import MessageQueue, SimulatorThread
from tests.daemon.simulator.conftest import GROUP_A, GROUP_B, call, read_frame
from tests.helpers.waiting import wait_until

BOTH = pytest.mark.parametrize("st", [JSON, ROCKETMQ], ids=["json", "binary"])
Q3 = MessageQueue("OrderTopic", "broker-a", 3)


def client_id(sim: SimulatorThread, group: str) -> str:
    resp = call(sim.broker_addrs["broker-a"], 203, {"consumerGroup": group})
    m = re.search(r'"clientId":"([^"]+)"', resp.body.decode())
    assert m is not None
    return m.group(1)


@BOTH
@pytest.mark.parametrize(
    ("target", "code", "ext"),
    [
        ("namesrv", 106, {}),
        ("namesrv", 105, {"topic": "OrderTopic"}),
        ("namesrv", 105, {"topic": f"%RETRY%{GROUP_A}"}),
        ("namesrv", 206, {}),
        ("broker-a", 201, {}),
        ("broker-a", 203, {"consumerGroup": GROUP_A}),
        ("broker-a", 208, {"consumerGroup": GROUP_A}),
        ("broker-b", 208, {"consumerGroup": GROUP_B, "topic": "OrderTopic"}),
        ("broker-a", 202, {"topic": "OrderTopic"}),
        ("broker-b", 28, {}),
        ("broker-a", 303, {"topic": "OrderTopic", "group": GROUP_A}),
        ("broker-a", 300, {"topic": "OrderTopic"}),
        ("broker-a", 43, {}),
    ],
)
def test_each_call_answers_in_the_request_serialization(
    stuck_sim: SimulatorThread, st: int, target: str, code: int, ext: dict[str, str]
) -> None:
    addr = stuck_sim.namesrv_addr if target == "namesrv" else stuck_sim.broker_addrs[target]
    resp = call(addr, code, ext, serialize_type=st, opaque=4242)
    assert (resp.code, resp.flag, resp.opaque) == (0, 1, 4242)
    assert resp.serialize_type == st
    assert (resp.language, resp.version) == ("JAVA", 407)
    assert resp.remark is None
    assert resp.body.startswith(b"{")


@BOTH
def test_running_info_with_jstack_shows_the_blocked_threads(stuck_sim: SimulatorThread, st: int) -> None:
    cid = client_id(stuck_sim, GROUP_A)
    ext = {"consumerGroup": GROUP_A, "clientId": cid, "jstackEnable": "true"}
    resp = call(stuck_sim.broker_addrs["broker-b"], 307, ext, serialize_type=st)
    assert (resp.code, resp.remark) == (0, "not set any response code")
    body = resp.body.decode()
    assert body.startswith('{"jstack":"')
    dump = body.split('"jstack":"', 1)[1].split('","mqTable"', 1)[0].replace("\\n", "\n")
    sleeping = [blk for blk in dump.split("\n\n") if "java.lang.Thread.sleep" in blk]
    assert len(sleeping) == 2 and all(f"ConsumeMessageThread_{GROUP_A}_" in blk for blk in sleeping)
    first, second = stuck_sim.inspect(lambda m: sorted(m.process_queue(GROUP_A, Q3).msgs))
    key = '{"brokerName":"broker-a","queueId":3,"topic":"OrderTopic"}:{'
    entry = body.split(key, 1)[1].split("}", 1)[0]
    assert f'"cachedMsgCount":2,"cachedMsgMaxOffset":{second},"cachedMsgMinOffset":{first},' in entry
    assert f'"commitOffset":{first},' in entry

    plain = call(stuck_sim.broker_addrs["broker-a"], 307, {**ext, "jstackEnable": "false"})
    assert plain.body.startswith(b'{"mqTable":{{"brokerName":')


def test_route_broker_addrs_key_format_follows_request_version(stuck_sim: SimulatorThread) -> None:
    ns = stuck_sim.namesrv_addr
    for version in (0, 400):
        assert b'"brokerAddrs":{0:"127.0.0.1:' in call(ns, 105, {"topic": "OrderTopic"}, version=version).body
    for version in (401, 407):
        assert (
            b'"brokerAddrs":{"0":"127.0.0.1:' in call(ns, 105, {"topic": "OrderTopic"}, version=version).body
        )
    standard = call(ns, 105, {"topic": "OrderTopic", "acceptStandardJsonOnly": "true"}, version=0)
    assert b'"brokerAddrs":{"0":' in standard.body
    assert b'"brokerAddrs":{0:"127.0.0.1:' in call(ns, 106).body  # cluster info: always raw


@BOTH
def test_offsets_are_in_the_header_only(stuck_sim: SimulatorThread, st: int) -> None:
    addr = stuck_sim.broker_addrs["broker-a"]
    before = stuck_sim.inspect(lambda m: m.max_offset(Q3))
    resp = call(addr, 30, {"topic": "OrderTopic", "queueId": "3"}, serialize_type=st)
    after = stuck_sim.inspect(lambda m: m.max_offset(Q3))
    assert resp.code == 0 and resp.body == b""
    assert before <= int(resp.ext_fields["offset"]) <= after
    low = call(addr, 31, {"topic": "OrderTopic", "queueId": "3"}, serialize_type=st)
    assert low.ext_fields == {"offset": "0"} and low.body == b""


def test_consume_stats_show_the_stuck_queue(stuck_sim: SimulatorThread) -> None:
    first = stuck_sim.inspect(lambda m: min(m.process_queue(GROUP_A, Q3).msgs))
    body = call(stuck_sim.broker_addrs["broker-a"], 208, {"consumerGroup": GROUP_A}).body.decode()
    key = '{"brokerName":"broker-a","queueId":3,"topic":"OrderTopic"}:'
    entry = body.split(key, 1)[1].split("}", 1)[0]
    m = re.fullmatch(r'\{"brokerOffset":(\d+),"consumerOffset":(\d+),"lastTimestamp":(\d+)', entry)
    assert m is not None
    assert int(m.group(2)) == first and int(m.group(1)) - first > 3000
    assert b"%RETRY%" + GROUP_A.encode() in body.encode()


@BOTH
@pytest.mark.parametrize(
    ("target", "code", "ext", "want_code", "want_remark"),
    [
        ("broker-a", 202, {"topic": "NoSuchTopic"}, 17, "topic[NoSuchTopic] not exist"),
        ("broker-a", 303, {"topic": "NoSuchTopic", "group": GROUP_A}, 17, "topic[NoSuchTopic] not exist"),
        (
            "broker-a",
            203,
            {"consumerGroup": "offlineGroup"},
            206,
            "the consumer group[offlineGroup] not online",
        ),
        (
            "namesrv",
            105,
            {"topic": "NoSuchTopic"},
            17,
            "No topic route info in name server for the topic: NoSuchTopic\n"
            "See http://rocketmq.apache.org/docs/faq/ for further details.",
        ),
        ("broker-a", 9999, {}, 3, " request type 9999 not supported"),
        ("namesrv", 28, {}, 3, " request type 28 not supported"),
        (
            "broker-a",
            307,
            {"consumerGroup": GROUP_A, "clientId": "nobody"},
            1,
            f"The Consumer <{GROUP_A}> <nobody> not online",
        ),
    ],
)
def test_error_answers_match_the_capture(
    stuck_sim: SimulatorThread,
    st: int,
    target: str,
    code: int,
    ext: dict[str, str],
    want_code: int,
    want_remark: str,
) -> None:
    addr = stuck_sim.namesrv_addr if target == "namesrv" else stuck_sim.broker_addrs[target]
    resp = call(addr, code, ext, serialize_type=st)
    assert (resp.code, resp.remark, resp.body) == (want_code, want_remark, b"")
    assert resp.serialize_type == st and resp.flag == 1


@pytest.mark.parametrize(
    ("code", "field"), [(202, "topic"), (208, "consumerGroup"), (30, "queueId"), (307, "clientId")]
)
def test_missing_required_field_is_a_system_error(stuck_sim: SimulatorThread, code: int, field: str) -> None:
    full = {"topic": "OrderTopic", "consumerGroup": GROUP_A, "queueId": "0", "clientId": "x"}
    ext = {k: v for k, v in full.items() if k != field}
    resp = call(stuck_sim.broker_addrs["broker-a"], code, ext)
    assert resp.code == 1 and f"the custom field <{field}> is null" in (resp.remark or "")


def test_many_requests_in_flight_on_one_connection(stuck_sim: SimulatorThread) -> None:
    host, port = stuck_sim.broker_addrs["broker-a"].rsplit(":", 1)
    requests = [
        RemotingCommand(
            code=code, opaque=i, version=401, ext_fields=ext, serialize_type=JSON if i % 2 else ROCKETMQ
        )
        for i, (code, ext) in enumerate(
            [
                (28, {}),
                (208, {"consumerGroup": GROUP_A}),
                (30, {"topic": "OrderTopic", "queueId": "1"}),
                (201, {}),
            ]
            * 10
        )
    ]
    oneway = RemotingCommand(code=28, opaque=999, flag=FLAG_ONEWAY, version=401)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode(oneway) + b"".join(encode(r) for r in requests))
        answers = [read_frame(sock) for _ in requests]
    assert sorted(a.opaque for a in answers) == list(range(len(requests)))  # no answer to the oneway
    by_opaque = {a.opaque: a for a in answers}
    for r in requests:
        assert by_opaque[r.opaque].code == 0 and by_opaque[r.opaque].serialize_type == r.serialize_type


def test_a_slow_or_refusing_broker() -> None:
    with SimulatorThread("healthy") as sim:
        addr = sim.broker_addrs["broker-b"]
        sim.set_fault("broker-b", delay_s=60.0)
        host, port = addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(encode(RemotingCommand(code=28, opaque=1, version=401)))
            # The broker has the request and holds its answer: a caller with a timeout sees none.
            wait_until(lambda: sim.sim.inflight.get("broker-b") == 1, "broker-b holding the request")  # type: ignore[union-attr]
            sock.settimeout(0.5)
            with pytest.raises(TimeoutError):
                read_frame(sock)
            assert sim.sim.inflight["broker-b"] == 1  # type: ignore[union-attr]  # held, not dropped
            sim.set_fault("broker-b", delay_s=0.0)
            assert call(addr, 28).code == 0  # later requests are answered at once again
        sim.set_fault("broker-b", refuse=True)
        host, port = addr.rsplit(":", 1)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=2)
        assert call(sim.broker_addrs["broker-a"], 28).code == 0
        sim.set_fault("broker-b", refuse=False)
        assert call(addr, 28).code == 0


def test_a_broker_that_goes_down_drops_its_open_connections() -> None:
    with SimulatorThread("healthy") as sim:
        host, port = sim.broker_addrs["broker-b"].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(encode(RemotingCommand(code=28, opaque=1, version=401)))
            assert read_frame(sock).code == 0
            sim.set_fault("broker-b", refuse=True)
            # A crashed broker's peers see the connection end, not a socket that stays silent.
            with contextlib.suppress(OSError):
                sock.sendall(encode(RemotingCommand(code=28, opaque=2, version=401)))
            sock.settimeout(5)
            received = b"reset"
            with contextlib.suppress(ConnectionResetError):
                received = sock.recv(1)
            assert received in (b"", b"reset")


def test_release_action_over_the_thread_api() -> None:
    with SimulatorThread("stuck-consumer", time_scale=0.1, block_at=5.0) as sim:
        wait_until(lambda: sim.inspect(lambda m: len(m.groups[GROUP_A].clients[0].blocked_threads())) >= 2,
                   "the scenario's second block")
        sim.trigger("release")
        wait_until(lambda: sim.inspect(lambda m: m.broker_lag(GROUP_A, Q3)) <= 20, "the lag draining after release")
