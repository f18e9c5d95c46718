"""Synthetic sample stores for benchmarks: N queue series at 30 s resolution, the real table schemas.

Layout follows the simulator's data model: 16 queues per topic (4 brokers x 4 queue ids), one
consumer group per topic, one client per group holding all its queues. Every cycle writes one
Parquet file per table into the store's date=/hour= partitions and then its commit marker, as the
collectors' store writer does. Columns are
vectorised (pyarrow.compute), so 1.6M series x 30 cycles is written in minutes, not hours.
A few groups misbehave so the pack has findings: group0 is stuck (commit frozen with lag),
group1's cache is full.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from daemon.store.writer import arrow_schema
from rules.tables import get_table
from spark.store_layout import DATA_SUFFIX, cycle_name, partition_dir, write_commit

QUEUES_PER_TOPIC = 16
BROKERS = 4
STEP = timedelta(seconds=30)


def _full(n: int, value: object, type_: pa.DataType) -> pa.Array:
    return pa.repeat(pa.scalar(value, type_), n)


def _names(prefix: str, ids: pa.Array) -> pa.Array:
    """Strings like prefix0, prefix1 for an integer id array (ids are 0..k-1)."""
    k = pc.max(ids).as_py() + 1
    return pa.DictionaryArray.from_arrays(ids.cast(pa.int32()), pa.array([f"{prefix}{j}" for j in range(k)])
                                          ).cast(pa.string())


def _fill(table_name: str, columns: dict[str, object], n: int) -> pa.Table:
    """An Arrow table of `table_name`'s stored schema; columns not given get a plausible constant or null."""
    schema = arrow_schema(get_table(table_name))
    arrays = []
    for field in schema:
        value = columns.get(field.name)
        if value is None:
            if pa.types.is_string(field.type):
                value = _full(n, "x", field.type)
            elif pa.types.is_boolean(field.type):
                value = _full(n, False, field.type)
            elif pa.types.is_timestamp(field.type) or field.nullable:
                value = pa.nulls(n, field.type)
            else:
                value = _full(n, 0, field.type)
        elif not isinstance(value, pa.Array):
            value = _full(n, value, field.type)
        arrays.append(value.cast(field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


@lru_cache(maxsize=2)
def _layout(series: int) -> dict[str, pa.Array]:
    """The per-series columns that do not change between cycles."""
    i = pa.array(range(series), pa.int64())
    topic_id = pc.divide(i, QUEUES_PER_TOPIC)
    broker_id = pc.bit_wise_and(i, BROKERS - 1)
    topics = pc.max(topic_id).as_py() + 1
    g = pa.array(range(topics), pa.int64())
    return {
        "i": i, "topic_id": topic_id, "group": _names("group", topic_id), "topic": _names("topic", topic_id),
        "broker": _names("broker-", broker_id), "client": _names("10.0.0.1@", topic_id),
        "queue_id": pc.divide(pc.bit_wise_and(i, QUEUES_PER_TOPIC - 1), BROKERS).cast(pa.int32()),
        "g_group": _names("group", g), "g_topic": _names("topic", g), "g_client": _names("10.0.0.1@", g),
        "g_subs": pc.binary_join_element_wise(_names("topic", g), "*", "="),
    }


def cycle_tables(series: int, step: int, ts: datetime) -> dict[str, pa.Table]:
    """Every table's rows of one collection cycle at `ts` (`step` counts cycles from the first)."""
    lay = _layout(series)
    n = series
    topics = len(lay["g_group"])
    stamp = _full(n, ts, pa.timestamp("us", tz="UTC"))
    produced = pc.add(pc.bit_wise_and(lay["i"], 7), 10_000 + 100 * step)
    stuck = pc.equal(lay["topic_id"], 0)
    committed = pc.if_else(stuck, 5_000, pc.subtract(produced, 5))
    common = {"ts": stamp, "cluster": _full(n, "bench", pa.string()), "group": lay["group"], "topic": lay["topic"],
              "broker": lay["broker"], "queue_id": lay["queue_id"]}
    tables = {
        "consumer_queue": _fill("consumer_queue", {
            **common, "broker_offset": produced, "consumer_offset": committed, "pull_offset": produced,
            "consume_delay_ms": pc.if_else(stuck, 600_000, 50), "topic_kind": "normal",
        }, n),
        "process_queue": _fill("process_queue", {
            **common, "client_id": lay["client"],
            "cached_msg_count": pc.if_else(pc.equal(lay["topic_id"], 1), 1200, 10),
            "cached_min_offset": committed, "cached_max_offset": pc.add(committed, 10), "commit_offset": committed,
            "last_pull_ts": stamp, "last_consume_ts": stamp, "pull_threshold_for_queue": 1000,
            "pull_threshold_size_mib": 100, "max_span": 2000, "consume_timeout_min": 15, "max_reconsume_times": 16,
        }, n),
        "topic_queue": _fill("topic_queue", {
            **{k: v for k, v in common.items() if k != "group"}, "topic_kind": "normal",
            "min_offset": 0, "max_offset": produced, "last_update_ts": stamp,
        }, n),
    }
    b = pa.array(range(BROKERS), pa.int64())
    tables["broker"] = _fill("broker", {
        "ts": _full(BROKERS, ts, pa.timestamp("us", tz="UTC")), "cluster": "bench", "broker": _names("broker-", b),
        "broker_id": 0, "addr": pa.array([f"10.0.1.{x}:10911" for x in range(BROKERS)]), "put_tps": 1000.0,
        "commitlog_disk_ratio": 0.4, "broker_active": True, "msg_put_today": 1000 * step, "put_failed_total": 0,
        "boot_ts": _full(BROKERS, ts - timedelta(days=1), pa.timestamp("us", tz="UTC")),
    }, BROKERS)
    g_stamp = _full(topics, ts, pa.timestamp("us", tz="UTC"))
    tables["consumer_client"] = _fill("consumer_client", {
        "ts": g_stamp, "cluster": "bench", "group": lay["g_group"], "client_id": lay["g_client"],
        "client_addr": "10.0.0.1:5000", "message_model": "CLUSTERING", "subscriptions": lay["g_subs"],
    }, topics)
    tables["consumer_status"] = _fill("consumer_status", {
        "ts": g_stamp, "cluster": "bench", "group": lay["g_group"], "client_id": lay["g_client"],
        "topic": lay["g_topic"], "consume_ok_tps": 50.0,
    }, topics)
    return tables


def write_store(root: str | os.PathLike[str], series: int, cycles: int, now: datetime) -> int:
    """Write `cycles` cycles ending at `now` into the store at `root`; returns the rows written."""
    return sum(write_cycle(root, series, step, (now - STEP * (cycles - 1 - step)).astimezone(UTC))
               for step in range(cycles))


def write_cycle(root: str | os.PathLike[str], series: int, step: int, ts: datetime) -> int:
    """Write one collection cycle (the `step`-th) at `ts` into the store at `root`, then commit it; returns
    the rows written."""
    files: dict[str, list[Path]] = {}
    rows: dict[str, int] = {}
    for name, table in cycle_tables(series, step, ts).items():
        directory = partition_dir(Path(root), name, ts)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / cycle_name(ts, DATA_SUFFIX)
        pq.write_table(table, path)
        files[name], rows[name] = [path], table.num_rows
    write_commit(root, ts, files, rows, ["bench"])
    return sum(rows.values())
