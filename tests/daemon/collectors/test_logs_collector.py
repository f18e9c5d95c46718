"""The live logs collector: new lines of followed files become rows once each, across rotation;
files that appear later are read whole; unreadable ones become health rows."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from config.models import ClusterConfig, LogSource
from daemon.collectors.logs import LogsCollector

NOW = datetime(2026, 11, 22, tzinfo=UTC)
SPAN = ("{ts} WARN RocketmqClient - the queue's messages, span too long, so do flow control, minOffset=0, "
        "maxOffset=3626, maxSpan=3626, pullRequest=PullRequest [consumerGroup=orders, messageQueue=MessageQueue "
        "[topic=OrderTopic, brokerName=broker-a, queueId={q}], nextOffset=3627], flowControlTimes=1\n")
PAGECACHERT = ("{ts} INFO StoreStatsService - [PAGECACHERT] TotalPut 10, PutMessageDistributeTime [<=0ms]:1 "
               "[0~10ms]:1 [10~50ms]:1 [50~100ms]:1 [100~200ms]:1 [200~500ms]:1 [500ms~1s]:1 [1~2s]:1 [2~3s]:1 "
               "[3~4s]:1 [4~5s]:0 [5~10s]:0 [10s~]:0 \n")


def queues(result) -> list[int]:
    return [r["queue_id"] for r in result.rows.get("log_event", []) if r["event"] == "flow_control_span"]


def test_follows_client_and_store_logs_across_rotation(tmp_path):
    client = tmp_path / "app-1" / "rocketmq_client.log"
    client.parent.mkdir()
    client.write_text(SPAN.format(ts="2026-11-22 00:00:00,000", q=0))  # history: not re-read live
    store = tmp_path / "broker-a_0" / "store.log"
    store.parent.mkdir()
    store.write_text("")
    logs = LogsCollector("prod", [LogSource(path=str(tmp_path / "*" / "rocketmq_client.log")),
                                  LogSource(path=str(store), kind="store")])
    assert queues(logs.collect(NOW)) == []

    with client.open("a") as f:
        f.write(SPAN.format(ts="2026-11-22 00:01:00,000", q=1))
    with store.open("a") as f:
        f.write(PAGECACHERT.format(ts="2026-11-22 08:01:00"))
    result = logs.collect(NOW)
    assert queues(result) == [1]
    (minute,) = result.rows["broker"]
    assert minute["broker"] == "broker-a" and minute["put_latency_500ms_1s"] == 1 and minute["put_slow_100ms"] == 6

    with client.open("a") as f:
        f.write(SPAN.format(ts="2026-11-22 00:02:00,000", q=2))
    os.rename(client, client.with_name("rocketmq_client.1.log"))  # rolled; the glob no longer matches it
    client.write_text(SPAN.format(ts="2026-11-22 00:03:00,000", q=3))
    assert queues(logs.collect(NOW)) == [2, 3]
    assert queues(logs.collect(NOW)) == []

    late = tmp_path / "app-2" / "rocketmq_client.log"  # a new client's log appears: read from its first line
    late.parent.mkdir()
    late.write_text(SPAN.format(ts="2026-11-22 00:04:00,000", q=4))
    assert queues(logs.collect(NOW)) == [4]
    logs.close()


def test_a_cluster_may_watch_only_logs():
    cluster = ClusterConfig(name="prod", logs=[{"path": "/var/log/rocketmq/*/store.log"}])
    assert cluster.logs[0].kind is None and not cluster.namesrv
