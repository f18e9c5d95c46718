"""Views (DESIGN §4): derived tables computed from the windows of the sample tables.

Each view is declared in rules.tables.VIEWS (columns, key, descriptions) and built here from
the DataFrames of its source tables over the evaluation window, one row per key per sample ts.
Rows of different tables are joined on `ts`: one collection cycle stamps everything it writes
with the same ts, so a group whose client list came back empty in that cycle has 0 clients.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rules.tables import LAGGING_MESSAGES, VIEWS, Table
from spark.column_cache import cached
from spark.schema import SPARK_TYPES


@dataclass(frozen=True)
class ViewDef:
    """How to compute one view: the tables it reads (the first is required) and the builder.

    `rows` gives, from the same windows, the rows that make the view's rows: a view row exists at
    (ts, key) exactly when `rows` has one there (the other sources are joined on). The evaluator
    uses it to find each view series' newest sample time without building the view.
    """

    sources: tuple[str, ...]
    build: Callable[[Mapping[str, DataFrame]], DataFrame]
    rows: Callable[[Mapping[str, DataFrame]], DataFrame]


def _typed(df: DataFrame, view: Table) -> DataFrame:
    """Exactly the view's declared columns, in order, with their declared types."""
    return df.select(*cached(("view-columns", view.name), lambda: [
        F.col(c.name).cast(SPARK_TYPES[c.type]).alias(c.name) for c in view.columns]))


def _sum0(column: str | Column) -> Column:
    return F.coalesce(F.sum(column), F.lit(0))


def _normal_queues(w: Mapping[str, DataFrame]) -> DataFrame:
    return w["consumer_queue"].where(cached(("view", "normal"), lambda: F.col("topic_kind") != "retry"))


def _consumer_group_columns() -> dict[str, Any]:
    """The Columns of the consumer_group view (static: built once, spark/column_cache.py)."""
    lagging = (F.col("lag") > LAGGING_MESSAGES).cast("long")
    topic_cycle = Window.partitionBy("ts", "cluster", "topic")
    return {
        "per_topic": [F.count("*").alias("queues"), _sum0("lag").alias("lag"), _sum0("available").alias("available"),
                      F.max("consume_delay_ms").alias("max_consume_delay_ms")],
        "retry": F.col("topic_kind") == "retry",
        "retry_lag": [_sum0("lag").alias("retry_lag")],
        "online": [F.count_distinct("client_id").alias("online_clients"),
                   F.max(F.col("message_model") == "BROADCASTING").alias("is_broadcast")],
        "entry": F.explode(F.split(F.coalesce(F.col("subscriptions"), F.lit("")), ";")).alias("_sub"),
        "subscription": [F.substring_index("_sub", "=", 1).alias("topic"),
                         F.trim(F.regexp_extract("_sub", r"^[^=]*=(.*)$", 1)).alias("_expr")],
        "filtered": [F.max(~F.col("_expr").isin("*", "")).alias("tag_filtered")],
        "status": [_sum0("consume_ok_tps").alias("consume_ok_tps"),
                   _sum0("consume_failed_tps").alias("consume_failed_tps")],
        "grouped": F.col("group").isNotNull(),
        "written": [_sum0(F.when(F.col("topic_kind") == "dlq", F.col("max_offset"))).alias("dlq_total"),
                    _sum0(F.when(F.col("topic_kind") == "retry", F.col("max_offset"))).alias("retry_total")],
        "derived": {
            "retry_lag": F.coalesce("retry_lag", F.lit(0)),
            "online_clients": F.coalesce("online_clients", F.lit(0)),
            "is_broadcast": F.coalesce("is_broadcast", F.lit(False)),
            "tag_filtered": F.coalesce("tag_filtered", F.lit(False)),
            "consume_ok_tps": F.coalesce("consume_ok_tps", F.lit(0.0)),
            "consume_failed_tps": F.coalesce("consume_failed_tps", F.lit(0.0)),
            "dlq_total": F.coalesce("dlq_total", F.lit(0)),
            "retry_total": F.coalesce("retry_total", F.lit(0)),
            "peer_groups": F.count("*").over(topic_cycle) - 1,
            "peer_groups_lagging": F.sum(lagging).over(topic_cycle) - lagging,
        },
    }


def _consumer_group(w: Mapping[str, DataFrame]) -> DataFrame:
    c = cached(("view", "consumer_group"), _consumer_group_columns)
    queues = w["consumer_queue"]
    cycle = ["ts", "cluster", "group"]
    per_topic = _normal_queues(w).groupBy(*cycle, "topic").agg(*c["per_topic"])
    retry_lag = queues.where(c["retry"]).groupBy(*cycle).agg(*c["retry_lag"])
    clients = w["consumer_client"]
    online = clients.groupBy(*cycle).agg(*c["online"])
    subs = clients.select(*cycle, c["entry"]).select(*cycle, *c["subscription"])
    filtered = subs.groupBy(*cycle, "topic").agg(*c["filtered"])
    status = w["consumer_status"].groupBy(*cycle, "topic").agg(*c["status"])
    written = w["topic_queue"].where(c["grouped"]).groupBy(*cycle).agg(*c["written"])
    rows = (per_topic.join(retry_lag, cycle, "left").join(online, cycle, "left")
            .join(filtered, [*cycle, "topic"], "left").join(status, [*cycle, "topic"], "left")
            .join(written, cycle, "left"))
    return rows.withColumns(c["derived"])


def _held_queues(w: Mapping[str, DataFrame]) -> DataFrame:
    return w["process_queue"].where(cached(("view", "held"), lambda: ~F.col("dropped")))


def _queue_owner(w: Mapping[str, DataFrame]) -> DataFrame:
    clients, owners = cached(("view", "queue_owner"), lambda: (
        F.array_sort(F.collect_set("client_id")).alias("_clients"),
        [F.size("_clients").cast("long").alias("owners"), F.array_join("_clients", ",").alias("clients")]))
    held = _held_queues(w).groupBy("ts", "cluster", "group", "topic", "broker", "queue_id").agg(clients)
    return held.select("ts", "cluster", "group", "topic", "broker", "queue_id", *owners)


def _topic_activity_columns() -> tuple[list[Column], Column, list[Column], Column]:
    per_broker = [F.first("topic_kind").alias("topic_kind"), _sum0("max_offset").alias("max_offset_total"),
                  F.max("last_update_ts").alias("last_update_ts")]
    age = (F.unix_micros(F.col("ts")) - F.unix_micros(F.col("last_update_ts"))).cast("double") / 1_000_000
    return per_broker, F.col("broker_id") == 0, [F.max("put_tps").alias("broker_put_tps")], age


def _topic_activity(w: Mapping[str, DataFrame]) -> DataFrame:
    per_broker_aggs, master, master_aggs, age = cached(("view", "topic_activity"), _topic_activity_columns)
    per_broker = w["topic_queue"].groupBy("ts", "cluster", "topic", "broker").agg(*per_broker_aggs)
    masters = w["broker"].where(master).groupBy("ts", "cluster", "broker").agg(*master_aggs)
    return per_broker.join(masters, ["ts", "cluster", "broker"], "left").withColumn("update_age_s", age)


def _dead_letters(w: Mapping[str, DataFrame]) -> DataFrame:
    return w["topic_queue"].where(cached(("view", "dlq"), lambda: F.col("topic_kind") == "dlq"))


def _retry_limit_columns() -> list[Column]:
    return [F.count_distinct("client_id").alias("reporting_clients"),
            F.min("max_reconsume_times").alias("max_reconsume_times"),
            F.max("max_reconsume_times").alias("max_reconsume_times_highest"),
            F.max(F.col("orderly")).alias("orderly")]


def _dlq_queue(w: Mapping[str, DataFrame]) -> DataFrame:
    # The settings are the client's, the same on every queue it holds: one figure per group and cycle.
    cycle = ["ts", "cluster", "group"]
    limits = w["process_queue"].groupBy(*cycle).agg(*cached(("view", "dlq_limits"), _retry_limit_columns))
    filled = cached(("view", "dlq_filled"), lambda: {
        "reporting_clients": F.coalesce("reporting_clients", F.lit(0)),
        "orderly": F.coalesce("orderly", F.lit(False)),
    })
    return _dead_letters(w).join(limits, cycle, "left").withColumns(filled)


VIEW_DEFS: dict[str, ViewDef] = {
    "dlq_queue": ViewDef(("topic_queue", "process_queue"), _dlq_queue, _dead_letters),
    "consumer_group": ViewDef(("consumer_queue", "consumer_client", "consumer_status", "topic_queue"),
                              _consumer_group, _normal_queues),
    "queue_owner": ViewDef(("process_queue",), _queue_owner, _held_queues),
    "topic_activity": ViewDef(("topic_queue", "broker"), _topic_activity, lambda w: w["topic_queue"]),
}


def compute_view(name: str, windows: Mapping[str, DataFrame]) -> DataFrame:
    """The view `name` from its source tables' windows (each a DataFrame with derived columns)."""
    return _typed(VIEW_DEFS[name].build(windows), VIEWS[name])
