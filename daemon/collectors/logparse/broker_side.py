"""store.log and broker.log (GMT+8, no milliseconds; ref §5.4, §5.7, §9).

store.log: every minute `[STORETPS]` and `[PAGECACHERT]`; each PAGECACHERT line becomes a `broker`
row with the 13 put-latency buckets (and the put TPS of the STORETPS line logged with it), so the
built-in broker rules run on it, plus log_event rows `store_tps` and `put_latency` (value: puts of
500 ms or more). broker.log: consumer membership — `consumer_registered`, `consumer_unregistered`
(a clean shutdown), `consumer_channel_removed` (a dropped or expired connection) — value: the
clients this broker has seen in the group since the file began; `dlq_topic_created` when a group's
first message goes to its dead-letter queue (the only DLQ line 4.9.x writes); `dlq_moved` for each
message 5.x's `RocketmqDLQ` logger reports sent to `%DLQ%<group>` (topic: the original topic, value 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from daemon.collectors.broker_runtime import PUT_BUCKETS, SLOW_FROM, parse_put_distribution
from daemon.collectors.logparse.base import LineParser, TableRow
from daemon.collectors.logparse.lines import Record

HEAD = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<level>[A-Z]+) +(?P<source>\S+) - (?P<message>.*)$")

_STORETPS = re.compile(r"\[STORETPS\] put_tps (?P<put>\S*) +get_found_tps (?P<found>\S*) +get_miss_tps (?P<miss>\S*) "
                       r"+get_transfer+ed_tps ?(?P<transferred>\S*)")
_PAGECACHERT = re.compile(r"\[PAGECACHERT\] TotalPut (?P<total>\d+), PutMessageDistributeTime (?P<buckets>.*)")
_CLIENT_ID = re.compile(r"clientId=([^,\]]+)")
_CONNECTED = re.compile(r"new consumer connected, group: (?P<group>\S+) (?P<type>\S+) (?P<model>\S+) channel: (?P<info>.*)")
_UNREGISTER = re.compile(r"unregister a consumer\[(?P<group>[^\]]+)\] from consumerGroupInfo (?P<info>.*)")
_REMOVED = re.compile(r"NETTY EVENT: remove not active channel\[(?P<info>.*)\] from ConsumerGroupInfo groupChannelTable, "
                      r"consumer group: (?P<group>\S+)")
_DLQ = re.compile(r"create new topic TopicConfig \[topicName=%DLQ%(?P<group>[^,\]]+)")
# 5.x AbstractSendMessageProcessor, logger RocketmqDLQ (ref §5.1); consumerId is the group.
_DLQ_SENT = re.compile(r"send msg to DLQ (?P<dlq>\S+), owner=[^,]*, originalTopic=(?P<topic>[^,]*), "
                       r"consumerId=(?P<group>[^,]+), msgUniqKey=(?P<key>[^,]*)")
_SLOW_BUCKETS = 6  # buckets from index 6 on are 500 ms and more


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # an empty TPS item: fewer samples than the window yet


@dataclass
class StoreLogParser(LineParser):
    """store.log of one broker."""

    kind = "store"
    broker: str = "broker"
    broker_id: int = 0
    last_tps: tuple[datetime, float | None] | None = None

    def handle(self, record: Record) -> list[TableRow] | None:
        """broker and log_event rows for STORETPS and PAGECACHERT; None for anything else."""
        if (match := _STORETPS.search(record.message)) is not None:
            put = _number(match["put"])
            self.last_tps = (record.ts, put)
            return [self.event(record, "store_tps", broker=self.broker, value=put)]
        if (match := _PAGECACHERT.search(record.message)) is not None:
            buckets = parse_put_distribution(match["buckets"])
            if buckets is None:
                return None
            counts = [buckets[column] for _, column in PUT_BUCKETS]
            row: dict[str, Any] = {
                "ts": record.ts, "cluster": self.cluster, "broker": self.broker, "broker_id": self.broker_id,
                "addr": self.host, **buckets, "put_slow_100ms": sum(counts[SLOW_FROM:]),
            }
            if self.last_tps is not None and abs((record.ts - self.last_tps[0]).total_seconds()) <= 5:
                row["put_tps"] = self.last_tps[1]
            slow = float(sum(counts[_SLOW_BUCKETS:]))
            return [("broker", row), self.event(record, "put_latency", broker=self.broker, value=slow,
                                                detail=f"{match['total']} puts, {slow:.0f} of 500 ms or more: "
                                                       f"{match['buckets'].strip()}")]
        return None


@dataclass
class BrokerLogParser(LineParser):
    """broker.log of one broker: who joined and left which group, how, and new dead-letter queues."""

    kind = "broker"
    broker: str = "broker"
    members: dict[str, set[str]] = field(default_factory=dict)  # group -> client ids connected

    def handle(self, record: Record) -> list[TableRow] | None:
        """Membership and DLQ rows; None for anything else."""
        message = record.message
        for event, pattern in (("consumer_registered", _CONNECTED), ("consumer_unregistered", _UNREGISTER),
                               ("consumer_channel_removed", _REMOVED)):
            if (match := pattern.search(message)) is None:
                continue
            client = _CLIENT_ID.search(match["info"])
            client_id = client[1] if client else None
            members = self.members.setdefault(match["group"], set())
            if event == "consumer_registered":
                members.add(client_id or "?")
            else:
                members.discard(client_id or "?")
            return [self.event(record, event, group=match["group"], broker=self.broker, client_id=client_id,
                               value=float(len(members)))]
        if (match := _DLQ.search(message)) is not None:
            return [self.event(record, "dlq_topic_created", group=match["group"], broker=self.broker,
                               topic=f"%DLQ%{match['group']}")]
        if (match := _DLQ_SENT.search(message)) is not None:
            return [self.event(record, "dlq_moved", group=match["group"], broker=self.broker,
                               topic=match["topic"] or None, value=1.0,
                               detail=f"message {match['key']} of {match['topic']} moved to {match['dlq']} "
                                      f"after its last reconsume")]
        return None
