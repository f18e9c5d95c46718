"""Consume failures as a 4.9.x broker handles them: send-back, delayed redelivery, dead letters.

A message the handler fails (RECONSUME_LATER, an exception, a timeout) is sent back to the broker
it came from (CONSUMER_SEND_MSG_BACK). The broker holds it on delay level 3 + reconsumeTimes
(10 s, 30 s, 1 m … 2 h: 16 attempts span about 4 h 46 m), then writes it to `%RETRY%<group>`,
which the group's clients also consume. Once reconsumeTimes reaches the client's
maxReconsumeTimes (16 when -1) the broker writes it to `%DLQ%<group>` instead, a topic it creates
on the first dead letter (so 202 answers TOPIC_NOT_EXIST until then) and nobody consumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# messageDelayLevel "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
DELAY_LEVELS_S = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
DEFAULT_MAX_RECONSUME_TIMES = 16
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def retry_delay_s(reconsume_times: int) -> int:
    """Seconds a message failed `reconsume_times` times before waits for its next attempt."""
    return DELAY_LEVELS_S[min(3 + reconsume_times, len(DELAY_LEVELS_S)) - 1]


def effective_max(max_reconsume_times: int) -> int:
    """The client's maxReconsumeTimes as the broker applies it (-1 means 16)."""
    return DEFAULT_MAX_RECONSUME_TIMES if max_reconsume_times < 0 else max_reconsume_times


@dataclass(order=True)
class Delayed:
    """A sent-back message waiting in SCHEDULE_TOPIC_XXXX for its redelivery time."""

    due: float
    group: str = field(compare=False)
    size: int = field(compare=False)
    reconsume_times: int = field(compare=False)  # attempts failed so far, this one included


@dataclass
class FailurePlan:
    """Which messages a group's handler fails: every `every`-th offset of its topics (bad data),
    and every redelivered copy of those (they fail again: the data is still bad)."""

    every: int

    def fails(self, topic: str, offset: int) -> bool:
        """True when the handler fails this message."""
        return topic.startswith(RETRY_PREFIX) or (self.every > 0 and offset % self.every == 0)
