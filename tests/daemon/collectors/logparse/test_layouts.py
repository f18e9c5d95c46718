"""Golden tests across versions, written from the documented formats (ref §4, §5.1, §5.7): a 4.9.x
rolling deploy seen from both clients' logs in a configured JVM zone, 5.x lines always in GMT+8,
POP flow control, 5.x dead letters, and kinds told from content alone."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

from daemon.collectors.logparse import detect_log_kind, parse_log

REB = ("rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=orders, topic=OrderTopic, "
       "clientId={cid}, mqAllSize=4, cidAllSize={n}, rebalanceResultSize={size}, rebalanceResultSet=[{queues}]")
OLD, NEW, PEER = "10.0.0.7@app-old", "10.0.0.7@app-new", "10.0.0.8@app-peer"


def rebalance(ts: str, cid: str, clients: int, queues: list[int]) -> str:
    held = ", ".join(f"MessageQueue [topic=OrderTopic, brokerName=broker-a, queueId={q}]" for q in queues)
    return f"{ts} INFO RocketmqClient - " + REB.format(cid=cid, n=clients, size=len(queues), queues=held)


def write_crlf(path, lines: list[str]) -> None:
    path.write_bytes("".join(line + "\r\n" for line in lines).encode())  # 4.9.x ClientLogger ends lines \r\n


def test_a_rolling_deploy_in_three_rebalances_gives_each_queues_owner_over_time(tmp_path):
    # Shanghai wall clock in the JVMs: 10:00 there is 02:00Z.
    peer = tmp_path / "peer" / "rocketmq_client.log"
    old = tmp_path / "old" / "rocketmq_client.log"
    for path in (peer, old):
        path.parent.mkdir()
    write_crlf(old, [
        "2026-11-22 09:59:58,001 INFO RocketmqClient - the consumer [orders] start OK.",
        rebalance("2026-11-22 10:00:00,100", OLD, 2, [0, 1]),
        "2026-11-22 10:05:00,000 INFO RocketmqClient - unregister client[Producer: [] Consumer: [orders]] Success",
    ])
    write_crlf(peer, [
        rebalance("2026-11-22 10:00:00,120", PEER, 2, [2, 3]),
        rebalance("2026-11-22 10:05:00,300", PEER, 1, [0, 1, 2, 3]),   # 1: the old instance left
        "2026-11-22 10:05:30,000 INFO RocketmqClient - the consumer [orders] start OK.",
        rebalance("2026-11-22 10:06:10,500", PEER, 2, [2, 3]),         # 2: the new one joined
    ])
    new = tmp_path / "new.log.1.gz"                                     # the new instance's log, already rolled
    with gzip.open(new, "wb") as f:
        f.write((rebalance("2026-11-22 10:06:10,480", NEW, 2, [0, 1]) + "\r\n").encode())  # 3

    owners: dict[int, list[tuple[datetime, str]]] = {}
    for path in (old, peer, new):
        result = parse_log(path, "prod", tz="Asia/Shanghai")
        assert result.kind == "client" and result.problems == []
        assert result.unknown_lines == {old: 2, peer: 1, new: 0}[path]
        for row in result.rows["log_event"]:
            assert row["event"] == "rebalance_assigned" and row["group"] == "orders"
            owners.setdefault(row["queue_id"], []).append((row["ts"], row["client_id"]))
    at = lambda m, s, us=0: datetime(2026, 11, 22, 2, m, s, us, tzinfo=UTC)  # noqa: E731
    assert sorted(owners[0]) == [(at(0, 0, 100000), OLD), (at(5, 0, 300000), PEER), (at(6, 10, 480000), NEW)]
    assert sorted(owners[3]) == [(at(0, 0, 120000), PEER), (at(5, 0, 300000), PEER), (at(6, 10, 500000), PEER)]


def test_5x_lines_are_gmt8_whatever_zone_4x_lines_get_and_pop_flow_control_counts(tmp_path):
    head = "[7781] [PullMessageService] [o.a.r.c.i.c.DefaultMQPushConsumerImpl#pullMessage:352] - "
    log = tmp_path / "rocketmq_client-0.log"
    log.write_text(
        f"2026-11-22 10:00:00.250 WARN  {head}the messages waiting to ack exceeds the threshold 2000, so do flow "
        "control, popRequest=PopRequest [topic=PopTopic, consumerGroup=popGroup, messageQueue=MessageQueue "
        "[topic=PopTopic, brokerName=broker-b, queueId=-1]], flowControlTimes=1, wait count=2013\n"
    )
    assert detect_log_kind(log) == "client"  # a 5.x line alone says client, no rebalance needed
    for tz in (None, "UTC", "America/New_York"):
        (row,) = parse_log(log, "prod", tz=tz).rows["log_event"]
        assert row["ts"] == datetime(2026, 11, 22, 2, 0, 0, 250000, tzinfo=UTC)
    assert (row["event"], row["value"], row["group"], row["topic"], row["queue_id"]) == (
        "flow_control_count", 2013.0, "popGroup", "PopTopic", None)  # a POP request on every queue


def test_5x_dead_letters_one_row_per_message_with_the_original_topic(tmp_path):
    log = tmp_path / "broker_default" / "broker.log"
    log.parent.mkdir()
    line = ("2026-11-22 08:00:0{s} INFO SendMessageThread_3 - send msg to DLQ %DLQ%orders, owner=, "
            "originalTopic=OrderTopic, consumerId=orders, msgUniqKey=7F00000100002A9F0000000000000{s}, "
            "storeTimestamp=1795305600000")
    log.write_text("\n".join(line.format(s=s) for s in range(3)) + "\n")
    assert detect_log_kind(log) == "broker"
    rows = parse_log(log, "prod", broker="broker-a").rows["log_event"]
    assert [(r["event"], r["group"], r["topic"], r["broker"], r["value"]) for r in rows] == [
        ("dlq_moved", "orders", "OrderTopic", "broker-a", 1.0)] * 3
    assert rows[0]["ts"] == datetime(2026, 11, 22, 0, 0, 0, tzinfo=UTC)
    assert "7F00000100002A9F00000000000000" in rows[0]["detail"]


def test_a_truncated_rolled_file_is_still_told_by_its_first_lines(tmp_path):
    lines = "".join(rebalance(f"2026-11-22 10:00:{s:02d},000", PEER, 1, [0, 1, 2, 3]) + "\r\n" for s in range(60))
    cut = tmp_path / "rocketmq_client.log.3.gz"
    cut.write_bytes(gzip.compress(lines.encode())[:-40])
    assert detect_log_kind(cut) == "client"
    result = parse_log(cut, "prod")
    assert result.rows["log_event"] and f"{cut}:" in str(result.problems[-1])
