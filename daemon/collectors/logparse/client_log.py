"""rocketmq_client.log: flow control and rebalance results (ref §4, §5.7, §9).

Flow-control lines are written on the 1st, 1001st, ... occurrence per consumer instance, with the
ProcessQueue's values at log time (the first line of an episode can say maxSpan=0): each line says
"flow control was happening then", its numbers are hints. Events: flow_control_count,
flow_control_size, flow_control_span (value: count, MiB or span as logged; 5.x POP's "waiting to
ack" and the lite pull consumer's "consume request count" lines count as flow_control_count),
rebalance_assigned (one row per queue a client holds after a change; value: how many clients it saw;
detail: the whole new assignment).

Zones: 4.9.x lines are in the JVM's zone (the parser's zone); 5.x lines are always GMT+8 (ref §4).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timezone
from zoneinfo import ZoneInfo

from daemon.collectors.logparse.base import LineParser, TableRow
from daemon.collectors.logparse.lines import GMT8, Record

# 4.9.x: `2026-11-21 23:36:21,388 WARN RocketmqClient - msg` (JVM local zone).
HEAD_4 = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<level>[A-Z]+) +(?P<source>\S+) - (?P<message>.*)$")
# 5.x: `2026-11-22 07:36:21.388 WARN  [4242] [PullMessageService] [c.a.r.c.i.c.DefaultMQPushConsumerImpl#pullMessage:300] - msg` (GMT+8).
HEAD_5 = re.compile(
    r"^(?P<ts>\d{3,4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (?P<level>[A-Z]+) +\[\d+\] \[[^\]]*\] \[(?P<source>[^\]]*)\] - "
    r"(?P<message>.*)$"
)

_PULL_REQUEST = re.compile(
    r"consumerGroup=(?P<group>[^,\]]+), messageQueue=MessageQueue \[topic=(?P<topic>[^,]+), "
    r"brokerName=(?P<broker>[^,]+), queueId=(?P<queue>-?\d+)\]"
)
_COUNT = re.compile(r"[Tt]he cached message count exceeds the threshold (?P<limit>\d+), so do flow control, "
                    r"minOffset=-?\d+, maxOffset=-?\d+, count=(?P<value>\d+), size=(?P<size>[\d.]+) MiB")
_SIZE = re.compile(r"[Tt]he cached message size exceeds the threshold (?P<limit>\d+) MiB, so do flow control, "
                   r"minOffset=-?\d+, maxOffset=-?\d+, count=\d+, size=(?P<value>[\d.]+) MiB")
_SPAN = re.compile(r"[Tt]he queue's messages, span too long, so do flow control, minOffset=(?P<min>-?\d+), "
                   r"maxOffset=(?P<max>-?\d+), maxSpan=(?P<value>\d+)")
_REBALANCE = re.compile(
    r"(?:client |broker )?rebalanced result changed\. allocateMessageQueueStrategyName=[^,]*, group=(?P<group>[^,]+), "
    r"topic=(?P<topic>[^,]+), clientId=(?P<client>[^,]+), mqAllSize=\d+, cidAllSize=(?P<clients>\d+), "
    r"rebalanceResultSize=\d+, (?:rebalanceResultSet|assignmentSet)=\[(?P<queues>.*)\]"
)
_QUEUE = re.compile(r"MessageQueue \[topic=(?P<topic>[^,]+), brokerName=(?P<broker>[^,]+), queueId=(?P<queue>\d+)\]")
# 5.x POP and the lite pull consumer: other limits, same meaning (no more pulls until it drains).
_WAITING_ACK = re.compile(r"messages waiting to ack exceeds the threshold (?P<limit>\d+), so do flow control.*"
                          r"wait count=(?P<value>\d+)")
_REQUESTS = re.compile(r"[Tt]he consume request count exceeds threshold (?P<limit>\d+), so do flow control, "
                       r"consume request count=(?P<value>\d+)")
_TIMES = re.compile(r"flowControlTimes=(\d+)")


@dataclass
class ClientLogParser(LineParser):
    """Client log lines of 4.9.x and 5.x; the layout is detected per line."""

    kind = "client"
    clients: dict[str, str] = field(default_factory=dict)  # group -> client id, learnt from rebalance lines
    jvm_zone: timezone | ZoneInfo | None = None  # the zone of 4.9.x lines; `zone` until set

    def _record(self, text: str, file: str, lineno: int) -> Record | None:
        if self.jvm_zone is None:
            self.jvm_zone = self.zone
        if HEAD_5.match(text):
            self.head, self.zone = HEAD_5, GMT8
        else:
            self.head, self.zone = HEAD_4, self.jvm_zone
        return super()._record(text, file, lineno)

    def handle(self, record: Record) -> list[TableRow] | None:
        """Flow-control and rebalance rows; other records are counted as unknown."""
        message = record.message
        if "so do flow control" in message:
            return self._flow_control(record)
        if "rebalanced result changed" in message:
            return self._rebalance(record)
        return None

    def _flow_control(self, record: Record) -> list[TableRow] | None:
        where = _PULL_REQUEST.search(record.message)
        for event, pattern in (("flow_control_count", _COUNT), ("flow_control_size", _SIZE),
                               ("flow_control_span", _SPAN), ("flow_control_count", _WAITING_ACK),
                               ("flow_control_count", _REQUESTS)):
            match = pattern.search(record.message)
            if match is None:
                continue
            times = _TIMES.search(record.message)
            group = where["group"] if where else None
            return [self.event(
                record, event, group=group, topic=where["topic"] if where else None,
                broker=where["broker"] if where else None, queue_id=_queue_id(where),
                client_id=self.clients.get(group or ""), value=float(match["value"]),
                detail=f"{record.message} (occurrence {times[1] if times else '?'} of this consumer)",
            )]
        return None

    def _rebalance(self, record: Record) -> list[TableRow] | None:
        match = _REBALANCE.search(record.message)
        if match is None:
            return None
        self.clients[match["group"]] = match["client"]
        queues = sorted((q["broker"], int(q["queue"])) for q in _QUEUE.finditer(match["queues"]))
        detail = f"{match['client']} now holds {len(queues)} queue(s) of {match['topic']}: " + ", ".join(
            f"{b}/{q}" for b, q in queues)
        return [
            self.event(record, "rebalance_assigned", group=match["group"], topic=match["topic"], broker=broker,
                       queue_id=queue, client_id=match["client"], value=float(match["clients"]), detail=detail)
            for broker, queue in queues
        ] or [self.event(record, "rebalance_assigned", group=match["group"], topic=match["topic"],
                         client_id=match["client"], value=float(match["clients"]),
                         detail=f"{match['client']} now holds no queue of {match['topic']}")]


def _queue_id(where: re.Match[str] | None) -> int | None:
    """The queue of a pull or pop request; None for a POP request on every queue (queueId=-1)."""
    if where is None or where["queue"].startswith("-"):
        return None
    return int(where["queue"])
