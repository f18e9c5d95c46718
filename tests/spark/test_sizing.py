"""How a cycle's one job shares its rules' branches among the cores (spark/sizing.py)."""

from __future__ import annotations

from typing import Any

from spark.sizing import cycle_settings, dealt_evenly, one_task_per_core
from spark.sql import run

# Branches by the rows of the table they read, in rule order: the big tables' come first.
WEIGHTS = {"ConsumeDelayHigh": 160_000, "ProcessQueueSpanTooLong": 160_000, "QueueHeldByTwoClients": 160_000,
           "ConsumerOffsetStalled": 160_000, "StuckMessage": 160_000, "BrokerPutLatencyHigh": 8,
           "TopicWritesStopped": 40, "RebalanceChurn": 160_000, "DeadLetterQueueGrowing": 16}


def test_the_big_tables_branches_are_shared_among_the_cores(spark: Any) -> None:
    order = dealt_evenly(WEIGHTS, 2)
    assert sorted(order) == sorted(WEIGHTS)
    text = " UNION ALL ".join(f"(SELECT /*+ COALESCE(1) */ {i} AS branch FROM range(1))" for i in range(len(order)))
    with cycle_settings(spark):
        placed = one_task_per_core(spark, run(spark, text)).selectExpr("branch", "spark_partition_id() AS task")
        task_of = {order[row.branch]: row.task for row in placed.collect()}
    heavy = [sum(1 for b, t in task_of.items() if t == task and WEIGHTS[b] == 160_000) for task in (0, 1)]
    assert heavy == [3, 3], task_of  # in rule order, four on the first core and two on the other
