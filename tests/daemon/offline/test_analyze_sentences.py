"""Every sentence `rocketwatch analyze` prints is true for the files in front of it (issue 34):
the replay stops at the last sample, dead letters are described by the evidence, the broker is
named as its files name it, and rebalances are findings only when they are trouble."""

from __future__ import annotations

import re
import shutil
import tarfile
from pathlib import Path

import pytest

from daemon.cli import main
from daemon.offline.analyze import render
from daemon.offline.analyze.report import analyze
from tests.fixtures_path import CAPTURE

pytestmark = pytest.mark.spark

CLIENT = "192.0.2.9@{pid}#1"
_BROKER_LINE = "2026-11-22 {t} INFO HeartbeatThread_1 - {msg}\n"  # broker side: GMT+8
_CLIENT_LINE = "2026-11-22 {t},000 {level} RocketmqClient - {msg}\n"  # 4.9.x client: UTC here


def _store(root: Path, with_retry_topic: bool = True) -> Path:
    """broker-a's store as captured: config, checkpoint and the AuditTopic/retry/DLQ consume queues."""
    store = root / "store"
    shutil.copytree(CAPTURE / "store" / "config", store / "config")
    shutil.copy(CAPTURE / "store" / "checkpoint", store / "checkpoint")
    with tarfile.open(CAPTURE / "store" / "consumequeue_AuditTopic_RETRY_DLQ_failGroup.tar.gz") as tar:
        tar.extractall(store, filter="data")
    if not with_retry_topic:
        shutil.rmtree(store / "consumequeue" / "%RETRY%failGroup")
    return store


@pytest.fixture(scope="module")
def captured_report(tmp_path_factory, spark) -> str:
    """The printed report of the capture's logs, store and dumps, with no --broker and no --cluster."""
    root = tmp_path_factory.mktemp("captured")
    shutil.copytree(CAPTURE / "logs", root / "logs")
    _store(root)
    shutil.copytree(CAPTURE / "jstack", root / "jstack-5764")
    return render.text(analyze([root], spark=spark))


def _finding(text: str, start: str) -> str:
    """The finding that starts with `start`, its evidence lines included."""
    found = text.split("WHAT WAS FOUND\n", 1)[1].split("\n\n", 1)[0]
    blocks = re.split(r"\n(?=  \S)", found)
    (block,) = [b for b in blocks if b.strip().startswith(start)]
    return block


# Defect 1 --------------------------------------------------------------------------------------

def test_the_replay_ends_at_the_last_sample_so_a_broker_is_not_called_silent_after_the_data(tmp_path, spark):
    """store.log's last minute is 00:03, broker.log's last line 00:04: past that there is no data."""
    logs = tmp_path / "broker-b_0"
    logs.mkdir()
    minute = ("2026-11-22 08:0{m}:00 INFO StoreStatsService - [PAGECACHERT] TotalPut 10, PutMessageDistributeTime "
              "[<=0ms]:10 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 "
              "[2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 \n")
    (logs / "store.log").write_text("".join(minute.format(m=m) for m in range(4)))
    (logs / "broker.log").write_text(_BROKER_LINE.format(t="08:04:00", msg=(
        f"new consumer connected, group: g CONSUME_PASSIVELY CLUSTERING channel: ClientChannelInfo "
        f"[channel=[id: 0x1], clientId={CLIENT.format(pid=1)}, language=JAVA, version=407]")))
    text = render.text(analyze([tmp_path], spark=spark))
    assert "covering 2026-11-22 00:00:00 UTC to 2026-11-22 00:04:00 UTC" in text
    assert "BrokerStoppedReporting" not in text
    assert "no rule fired on these samples" in text


# Defect 2 --------------------------------------------------------------------------------------

def test_dead_letters_are_described_by_the_retry_topic_not_by_the_default(captured_report):
    dlq = _finding(captured_report, "failGroup: 1842 message(s) in %DLQ%failGroup")
    assert "16 times" not in dlq and "4 h 46 m" not in dlq
    assert "%RETRY%failGroup received 3684 message(s) in all and %DLQ%failGroup 1842: at most 2.0 retries" in dlq
    assert "maxReconsumeTimes, which these inputs do not hold" in dlq


def test_dead_letters_are_described_by_the_clients_running_info_when_given(tmp_path, spark):
    _store(tmp_path)
    shutil.copy(CAPTURE / "mqadmin" / "t2_mqadmin_consumerStatus_failGroup_5776.txt", tmp_path)
    text = render.text(analyze([tmp_path], spark=spark))
    dlq = _finding(text, "failGroup: 1842 message(s) in %DLQ%failGroup")
    assert ("each was delivered 3 time(s) and failed every time: maxReconsumeTimes 2 in the client's running info"
            in dlq) and "about 40 s of retries" in dlq
    assert "16 times" not in dlq and "4 h 46 m" not in dlq


def test_with_nothing_to_tell_the_retries_the_report_says_sixteen_is_only_the_default(tmp_path, spark):
    _store(tmp_path, with_retry_topic=False)
    dlq = _finding(render.text(analyze([tmp_path], spark=spark)), "failGroup: 1842 message(s)")
    assert "how many times each was retried is not in these inputs: RocketMQ's default is 16 retries" in dlq
    assert "failed 16 times" not in dlq


# Defect 4 --------------------------------------------------------------------------------------

def test_the_broker_and_cluster_are_named_as_the_files_name_them(captured_report):
    header = captured_report.splitlines()[0]
    assert header.startswith("rocketwatch analyze — broker broker-a of cluster DefaultCluster (its store directory")
    assert "cluster offline" not in captured_report
    assert "%DLQ%failGroup/broker-a" in captured_report  # broker.log's rows carry the name too
    assert "/broker " not in captured_report and " broker  " not in captured_report


def test_a_store_directory_alone_is_named_from_its_topics_and_broker_overrides_it(tmp_path, spark, capsys):
    store = _store(tmp_path)
    text = render.text(analyze([store], spark=spark))
    assert text.startswith("rocketwatch analyze — broker broker-a of cluster DefaultCluster (its store directory)\n")
    assert main(["analyze", str(store), "--broker", "broker-x", "--cluster", "prod"]) == 0
    assert capsys.readouterr().out.startswith("rocketwatch analyze — broker broker-x of cluster prod (its store "
                                              "directory)\n")


# Defect 8 --------------------------------------------------------------------------------------

def _rebalance(t: str, group: str, pid: int, queues: list[int], clients: int = 1) -> str:
    mqs = ", ".join(f"MessageQueue [topic=T, brokerName=broker-a, queueId={q}]" for q in queues)
    return _CLIENT_LINE.format(t=t, level="INFO", msg=(
        f"rebalanced result changed. allocateMessageQueueStrategyName=AVG, group={group}, topic=T, "
        f"clientId={CLIENT.format(pid=pid)}, mqAllSize=2, cidAllSize={clients}, rebalanceResultSize={len(queues)}, "
        f"rebalanceResultSet=[{mqs}]"))


def _membership(t: str, group: str, pid: int, joined: bool) -> str:
    info = f"ClientChannelInfo [channel=[id: 0x{pid}], clientId={CLIENT.format(pid=pid)}, language=JAVA, version=407]"
    msg = (f"new consumer connected, group: {group} CONSUME_PASSIVELY CLUSTERING channel: {info}" if joined
           else f"unregister a consumer[{group}] from consumerGroupInfo {info}")
    return _BROKER_LINE.format(t=t, msg=msg)


@pytest.fixture(scope="module")
def groups_report(tmp_path_factory, spark) -> str:
    """Three groups over three minutes: one starts and stops cleanly, one churns, one loses a queue
    it had messages of cached; and a broker's stats.log and watermark.log beside broker.log."""
    root = tmp_path_factory.mktemp("groups")
    (root / "broker.log").write_text("".join([
        _BROKER_LINE.format(t="08:00:00", msg="brokerName=broker-a"),
        _membership("08:00:00", "calmGroup", 1, True),
        *(_membership(f"08:0{m}:{s:02d}", "churnGroup", 10 + m, join) for m in range(2)
          for s, join in ((10, True), (40, False))),
        _membership("08:01:50", "churnGroup", 20, True),
        _membership("08:03:00", "calmGroup", 1, False),
    ]))
    (root / "rocketmq_client_calm.log").write_text(_rebalance("00:00:01", "calmGroup", 1, [0, 1]))
    (root / "rocketmq_client_moved.log").write_text("".join([
        _rebalance("00:00:01", "movedGroup", 2, [0, 1]),
        _CLIENT_LINE.format(t="00:01:00", level="WARN", msg=(
            "the queue's messages, span too long, so do flow control, minOffset=0, maxOffset=2500, maxSpan=2500, "
            "pullRequest=PullRequest [consumerGroup=movedGroup, messageQueue=MessageQueue [topic=T, "
            "brokerName=broker-a, queueId=1], nextOffset=2501], flowControlTimes=1")),
        _rebalance("00:02:00", "movedGroup", 2, [0], clients=2),
    ]))
    (root / "stats.log").write_text(
        "2026-11-22 08:01:00 INFO - [TOPIC_PUT_NUMS] [T] Stats In One Minute, SUM: 600 TPS: 10.00 AVGPT: 1.00\n"
        "2026-11-22 08:01:00 INFO - [GROUP_GET_NUMS] [T@calmGroup] Stats In One Minute, SUM: 540 TPS: 9.00 AVGPT: 1.00\n"
        "2026-11-22 08:01:00 INFO - [TOPIC_PUT_SIZE] [T] Stats In One Minute, SUM: 60000 TPS: 1000.00 AVGPT: 100.00\n")
    (root / "watermark.log").write_text("".join(
        f"2026-11-22 08:00:0{s} - [WATERMARK] {q} Queue Size: 0 SlowTimeMills: 0\n"
        for s in range(3) for q in ("Send", "Pull", "Query", "Transaction")))
    return render.text(analyze([root], spark=spark))


def test_a_group_that_starts_and_stops_cleanly_is_not_a_finding(groups_report):
    found = groups_report.split("WHAT WAS FOUND\n", 1)[1].split("\n\n", 1)[0]
    assert "calmGroup" not in found
    assert "rebalance_assigned" in groups_report  # still told, as an event


def test_rebalance_churn_and_a_queue_taken_with_messages_cached_are_findings(groups_report):
    churn = _finding(groups_report, "churnGroup: rebalance churn: 5 membership changes within 10 minutes")
    assert "3 join(s), 2 clean leave(s), 0 dropped connection(s) in broker.log" in churn
    moved = _finding(groups_report, "movedGroup: the rebalance at 00:02:00 UTC took T/broker-a/1 from "
                                    "192.0.2.9@2#1 while it had messages of that queue cached")
    assert "flow control on that queue up to 00:01:00 UTC (1 log line(s))" in moved


def test_stats_log_is_read_and_watermark_log_is_set_aside_as_not_used(groups_report):
    assert "not a RocketMQ log" not in groups_report
    stats = groups_report.split("BROKER STATS (stats.log, messages per second as RocketMQ prints them)\n", 1)[1]
    assert "  T                            pulled by calmGroup: up to 9.00/s, last minute 9.00/s" in stats
    assert "  T                            stored: up to 10.00/s" in stats
    assert "1000.00" not in stats  # sizes are not message counts
    unused = groups_report.split("\nNOT USED\n", 1)[1]
    assert "watermark.log: RocketMQ broker watermark.log (thread-pool queue sizes each second): not used" in unused


# Issue 34, the capture read sentence by sentence -----------------------------------------------

def test_flow_control_is_explained_by_its_own_kind_only(captured_report):
    """stuckGroup's flow control is the span kind: the count/size cause does not apply."""
    flow = _finding(captured_report, "stuckGroup: flow control (span) on OrderTopic/broker-a/3")
    assert "the oldest message the client holds has not finished while those after it were consumed" in flow
    assert "count/size" not in flow and "slower than the pulls" not in flow


def test_a_pinned_offset_claims_no_lag_the_inputs_do_not_hold(captured_report):
    """The store has no consume queue of OrderTopic: queue 3's lag (3700 and more) is not its siblings' 849."""
    pinned = _finding(captured_report, "stuckGroup: OrderTopic queue 3: committed offset 0 while its other queues "
                                       "are near 849")
    assert "behind its siblings" not in pinned
    assert ("its lag is not in these inputs (no consume queue of OrderTopic in the store): "
            "`mqadmin consumerProgress -g stuckGroup` shows it") in pinned
    assert "unless this queue receives few messages, the message at offset 0 has not finished" in pinned


def test_a_low_offset_on_a_queue_that_received_little_is_not_pinned(tmp_path, spark):
    """AuditTopic queue 3 holding 5 messages, all 5 consumed by slowGroup: a low offset, nothing pinned."""
    store = _store(tmp_path)
    queue = store / "consumequeue" / "AuditTopic" / "3" / "00000000000000000000"
    data = bytearray(queue.read_bytes())
    data[5 * 20:] = bytes(len(data) - 5 * 20)  # 20 bytes a slot: only the first 5 messages remain
    queue.write_bytes(bytes(data))
    offsets = store / "config" / "consumerOffset.json"
    offsets.write_text(offsets.read_text().replace('"AuditTopic@slowGroup":{0:386,1:386,2:386,3:386',
                                                   '"AuditTopic@slowGroup":{0:386,1:386,2:386,3:5'))
    text = render.text(analyze([store], spark=spark))
    assert "AuditTopic queue 3: committed offset 5" not in text
