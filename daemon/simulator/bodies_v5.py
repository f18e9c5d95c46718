"""What a 5.x broker and a pop-mode client add to the bodies: mqPopTable, pop settings, timer figures."""

from __future__ import annotations

from typing import Any

from daemon.simulator.consumer import ConsumerClient
from daemon.simulator.fastjson_writer import Bean, JavaMap


def pop_table(client: ConsumerClient, mq_bean: Any) -> JavaMap | None:
    """The running info's `mqPopTable` of a pop-mode client; None for any other client."""
    if client.pop is None:
        return None
    return JavaMap(
        (mq_bean(pq.mq), Bean(droped=False, lastPopTimestamp=pq.last_pop_ms, waitAckCount=len(pq.wait_ack)))
        for pq in client.pop.queues
    )


def pop_properties(client: ConsumerClient) -> dict[str, str]:
    """The properties a pop-mode client reports besides a push consumer's."""
    if client.pop is None:
        return {}
    s = client.pop.settings
    return {"clientRebalance": "false", "popThresholdForQueue": str(s.threshold_for_queue),
            "popInvisibleTime": str(int(s.invisible_time_s * 1000)), "popBatchNums": str(s.batch_nums)}


def timer_runtime(model: Any, broker: str) -> dict[str, str]:
    """The timer keys of runtime info (28) from the broker's wheel."""
    wheel = model.backlogs.timers.get(broker)
    if wheel is None:
        return {}
    now = model.now
    assert wheel.enqueue_rate is not None and wheel.dequeue_rate is not None
    return {"timerReadBehind": str(wheel.read_behind_s(now)), "timerOffsetBehind": "0",
            "timerCongestNum": str(wheel.congest), "timerEnqueueTps": repr(float(wheel.enqueue_rate.tps(now, 10))),
            "timerDequeueTps": repr(float(wheel.dequeue_rate.tps(now, 10)))}
