"""rocketmq_client.log: flow control and rebalance results (ref §4, §5.7, §9).

Flow-control lines are written on the 1st, 1001st, ... occurrence per consumer instance, with the
ProcessQueue's values at log time (the first line of an episode can say maxSpan=0): each line says
"flow control was happening then", its numbers are hints. Events: flow_control_count,
flow_control_size, flow_control_span (value: count, MiB or span as logged), rebalance_assigned
(one row per queue a client holds after a change; value: how many clients it saw).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from daemon.logparse.base import LineParser, TableRow
from daemon.logparse.lines import Record

# 4.9.x: `2026-11-21 23:36:21,388 WARN RocketmqClient - msg` (JVM local zone).
HEAD_4 = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<level>[A-Z]+) +(?P<source>\S+) - (?P<message>.*)$")
# 5.x: `2026-11-22 07:36:21.388 WARN  [4242] [PullMessageService] [c.a.r.c.i.c.DefaultMQPushConsumerImpl#pullMessage:300] - msg` (GMT+8).
HEAD_5 = re.compile(
    r"^(?P<ts>\d{3,4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (?P<level>[A-Z]+) +\[\d+\] \[[^\]]*\] \[(?P<source>[^\]]*)\] - "
    r"(?P<message>.*)$"
)

_PULL_REQUEST = re.compile(
    r"consumerGroup=(?P<group>[^,\]]+), messageQueue=MessageQueue \[topic=(?P<topic>[^,]+), "
    r"brokerName=(?P<broker>[^,]+), queueId=(?P<queue>\d+)\]"
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
_TIMES = re.compile(r"flowControlTimes=(\d+)")


@dataclass
class ClientLogParser(LineParser):
    """Client log lines of 4.9.x and 5.x; the layout is detected per line."""

    kind = "client"
    clients: dict[str, str] = field(default_factory=dict)  # group -> client id, learnt from rebalance lines

    def _record(self, text: str, file: str, lineno: int) -> Record | None:
        self.head = HEAD_5 if HEAD_5.match(text) else HEAD_4
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
                               ("flow_control_span", _SPAN)):
            match = pattern.search(record.message)
            if match is None:
                continue
            times = _TIMES.search(record.message)
            group = where["group"] if where else None
            return [self.event(
                record, event, group=group, topic=where["topic"] if where else None,
                broker=where["broker"] if where else None, queue_id=int(where["queue"]) if where else None,
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
