"""Golden tests on logs written in the test from the documented formats (ref §4, §5.4, §5.7):
5.x client layout in GMT+8, a deploy with three rebalances, a broker with slow puts, membership
with clean and dropped leaves, rolled gzip files, glued records and broken lines."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

from daemon.collectors.logparse import make_line_parser, parse_log

PR = "PullRequest [consumerGroup=orders, messageQueue=MessageQueue [topic=OrderTopic, brokerName=broker-b, queueId={q}], nextOffset=9001]"
REB = ("{prefix}rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=orders, topic=OrderTopic, "
       "clientId={cid}, mqAllSize=4, cidAllSize={n}, rebalanceResultSize={size}, rebalanceResultSet=[{queues}]")


def mq(q: int) -> str:
    return f"MessageQueue [topic=OrderTopic, brokerName=broker-b, queueId={q}]"


def client5(ts: str, level: str, message: str) -> str:
    return f"{ts} {level} [4242] [PullMessageService] [o.a.r.c.i.c.DefaultMQPushConsumerImpl#pullMessage:315] - {message}"


def test_a_5x_client_log_in_gmt8_with_a_three_step_deploy_and_flow_control(tmp_path):
    cid_a, cid_b = "10.0.0.7@app-a", "10.0.0.8@app-b"
    lines = [
        client5("2026-11-22 10:00:00.000", "INFO", REB.format(prefix="client ", cid=cid_a, n=1, size=4,
                                                               queues=", ".join(mq(q) for q in range(4)))),
        client5("2026-11-22 10:05:00.000", "INFO", REB.format(prefix="client ", cid=cid_a, n=2, size=2,
                                                               queues=f"{mq(0)}, {mq(1)}")),
        client5("2026-11-22 10:06:00.000", "INFO", REB.format(prefix="client ", cid=cid_a, n=1, size=4,
                                                               queues=", ".join(mq(q) for q in range(4)))),
        client5("2026-11-22 10:07:30.500", "WARN",
                f"the cached message count exceeds the threshold 1000, so do flow control, minOffset=100, "
                f"maxOffset=1150, count=1051, size=3 MiB, pullRequest={PR.format(q=2)}, flowControlTimes=1"),
        client5("2026-11-22 10:08:00.250", "WARN",
                f"the cached message size exceeds the threshold 100 MiB, so do flow control, minOffset=100, "
                f"maxOffset=600, count=500, size=101 MiB, pullRequest={PR.format(q=3)}, flowControlTimes=1001"),
    ]
    path = tmp_path / "rocketmq_client.log"
    path.write_text("\n".join(lines) + "\n")
    result = parse_log(path, "prod", tz="GMT+8")
    assert result.kind == "client" and result.problems == []
    rows = result.rows["log_event"]
    deploy = [r for r in rows if r["event"] == "rebalance_assigned"]
    by_time: dict[datetime, list[int]] = {}
    for r in deploy:
        by_time.setdefault(r["ts"], []).append(r["queue_id"])
    assert by_time == {datetime(2026, 11, 22, 2, 0, tzinfo=UTC): [0, 1, 2, 3],   # 10:00 GMT+8 = 02:00Z
                       datetime(2026, 11, 22, 2, 5, tzinfo=UTC): [0, 1],         # a second client joined
                       datetime(2026, 11, 22, 2, 6, tzinfo=UTC): [0, 1, 2, 3]}   # and left again
    assert [r["value"] for r in deploy if r["queue_id"] == 0] == [1.0, 2.0, 1.0]  # clients seen
    count, size = [r for r in rows if r["event"].startswith("flow_control")]
    assert (count["event"], count["value"], count["queue_id"], count["client_id"]) == (
        "flow_control_count", 1051.0, 2, cid_a)
    assert (size["event"], size["value"], size["queue_id"]) == ("flow_control_size", 101.0, 3)
    assert size["ts"] == datetime(2026, 11, 22, 2, 8, 0, 250000, tzinfo=UTC)
    assert cid_b not in str(rows)


def test_a_broker_with_slow_puts_and_its_membership_timeline(tmp_path):
    buckets = "[<=0ms]:100 [0~10ms]:800 [10~50ms]:40 [50~100ms]:20 [100~200ms]:15 [200~500ms]:10 [500ms~1s]:8 " \
              "[1~2s]:5 [2~3s]:1 [3~4s]:0 [4~5s]:0 [5~10s]:1 [10s~]:0 "
    store = tmp_path / "broker-b_0" / "store.log"
    store.parent.mkdir()
    store.write_text(
        "2026-11-22 08:00:00 INFO StoreStatsService - [STORETPS] put_tps 1000.5 get_found_tps 900.1 "
        "get_miss_tps 3.0 get_transferred_tps 950.2\n"
        f"2026-11-22 08:00:00 INFO StoreStatsService - [PAGECACHERT] TotalPut 1000, PutMessageDistributeTime {buckets}\n"
    )
    result = parse_log(store, "prod")
    (minute,) = result.rows["broker"]
    assert (minute["broker"], minute["broker_id"], minute["put_tps"]) == ("broker-b", 0, 1000.5)  # isolateLogEnable dir
    assert minute["put_latency_500ms_1s"] == 8 and minute["put_slow_100ms"] == 40
    latency = [r for r in result.rows["log_event"] if r["event"] == "put_latency"]
    assert latency[0]["value"] == 15.0 and latency[0]["ts"] == datetime(2026, 11, 22, 0, 0, tzinfo=UTC)

    info = "ClientChannelInfo [channel=[id: 0x3f01faba, L:/10.0.0.2:10911 - R:/10.0.0.7:51234], clientId={cid}, " \
           "language=JAVA, version=453, lastUpdateTimestamp=1795304169285]"
    broker = tmp_path / "broker.log"
    broker.write_text("\n".join([
        f"2026-11-22 08:00:00 INFO HeartbeatThread_1 - new consumer connected, group: orders CONSUME_PASSIVELY "
        f"CLUSTERING channel: {info.format(cid='10.0.0.7@a')}",
        f"2026-11-22 08:00:01 INFO HeartbeatThread_2 - new consumer connected, group: orders CONSUME_PASSIVELY "
        f"CLUSTERING channel: {info.format(cid='10.0.0.8@b')}",
        f"2026-11-22 08:10:00 INFO ClientManageThread_3 - unregister a consumer[orders] from consumerGroupInfo "
        f"{info.format(cid='10.0.0.7@a')}",
        f"2026-11-22 08:12:00 WARN NettyEventExecutor - NETTY EVENT: remove not active channel["
        f"{info.format(cid='10.0.0.8@b')}] from ConsumerGroupInfo groupChannelTable, consumer group: orders",
    ]) + "\n")
    rows = parse_log(broker, "prod", broker="broker-b").rows["log_event"]
    assert [(r["event"], r["client_id"], r["value"]) for r in rows] == [
        ("consumer_registered", "10.0.0.7@a", 1.0), ("consumer_registered", "10.0.0.8@b", 2.0),
        ("consumer_unregistered", "10.0.0.7@a", 1.0),     # a clean shutdown
        ("consumer_channel_removed", "10.0.0.8@b", 0.0)]  # a dropped connection: the group is empty


def test_rolled_gzip_glued_records_and_broken_lines(tmp_path):
    good = "2026-11-21 23:36:21,388 WARN RocketmqClient - the queue's messages, span too long, so do flow control, " \
           f"minOffset=0, maxOffset=3626, maxSpan=3626, pullRequest={PR.format(q=3)}, flowControlTimes=1"
    rolled = tmp_path / "rocketmq_client.1.log.gz"
    with gzip.open(rolled, "wt") as f:
        f.write(good + "\r\n")
        # Two records glued on one physical line, as copied logs sometimes are.
        f.write("2026-11-21 23:37:00,000 INFO RocketmqClient - persist offset done "
                + good.replace("23:36:21,388", "23:37:00,500") + "\n")
        f.write("2026-11-21 23:3\n")                                 # cut mid-timestamp
        f.write("\tat org.apache.rocketmq.client.Foo.bar(Foo.java:1)\n")  # a stack frame: not a problem
        f.write(good.replace("23:36:21", "23:38:00"))                # no newline at the end
    result = parse_log(rolled, "prod")
    assert result.kind == "client"
    spans = [r for r in result.rows["log_event"] if r["event"] == "flow_control_span"]
    assert [r["ts"].strftime("%H:%M:%S.%f") for r in spans] == ["23:36:21.388000", "23:37:00.500000",
                                                                  "23:38:00.388000"]
    (problem,) = result.problems
    assert problem.line == 3 and str(problem).startswith(f"{rolled}:3: unreadable client log record")

    truncated = tmp_path / "cut.log.gz"
    truncated.write_bytes(gzip.compress(((good + "\n") * 50).encode())[:-30])
    cut = parse_log(truncated, "prod", kind="client")
    assert cut.rows["log_event"] and "file ends early" in str(cut.problems[-1])


def test_line_parser_feeds_one_line_at_a_time_and_keeps_the_client_id():
    parser = make_line_parser("client", "prod", "app-1")
    assert parser.feed(REB.format(prefix="", cid="10.0.0.9@x", n=1, size=1, queues=mq(2)).join(
        ["2026-11-21 10:00:00,000 INFO RocketmqClient - ", ""]), "f", 1)[0][1]["queue_id"] == 2
    (row,) = parser.feed("2026-11-21 10:00:05,000 WARN RocketmqClient - the queue's messages, span too long, so do "
                         f"flow control, minOffset=1, maxOffset=2501, maxSpan=2500, pullRequest={PR.format(q=2)}, "
                         "flowControlTimes=1", "f", 2)
    assert row[1]["client_id"] == "10.0.0.9@x" and row[1]["value"] == 2500.0
    assert parser.feed("garbage that is no log line", "f", 3) == [] and parser.unknown_lines == 1
