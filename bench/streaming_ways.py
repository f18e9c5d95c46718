"""The two ways bench/streaming.py compares of keeping consumer_queue's newest row per series, and
what both read: the kept frame (spark/evaluate.py's fold, local-checkpointed) and a Structured
Streaming aggregation over an inbox of the committed cycles' files, each measured cycle by cycle."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from bench.scale import CYCLES, STALE
from bench.store_gen import STEP, write_cycle
from rules.tables import TABLES
from spark.schema import stored_schema
from spark.sizing import Sizing, cycle_settings
from spark.state import release
from spark.store_layout import Commit, CommitLog, committed_files
from spark.store_reader import read_commits

TABLE = TABLES["consumer_queue"]
KEY = list(TABLE.key)
SCHEMA = stored_schema(TABLE)
VALUES = [c for c in SCHEMA.fieldNames() if c not in TABLE.key]
PROVIDERS = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
VARIANTS = {
    16: ["kept", "complete/hdfs/1", "complete/hdfs/2", "complete/hdfs/200", "complete/hdfs/2/interp",
         "update/hdfs/2", "complete/rocksdb/2", "availablenow/hdfs/2", "pandas/hdfs/2"],
    16_000: ["kept", "complete/hdfs/1", "complete/hdfs/2", "complete/hdfs/2/interp", "update/hdfs/2",
             "complete/rocksdb/2", "availablenow/hdfs/2", "pandas/hdfs/2"],
    160_000: ["kept", "complete/hdfs/1", "complete/hdfs/2", "update/hdfs/2", "complete/rocksdb/2"],
}
WARM = int(os.environ.get("BENCH_WARM", "4"))
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
IDLE_S = 5.0  # seconds the JVM's CPU is read over while nothing (kept) or an idle query (streaming) runs
DURATIONS = ("triggerExecution", "latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch",
             "commitOffsets")
FINDINGS = "## Findings"  # streaming.md from this heading on is written by hand and kept when the tables are rewritten
STATE_FIELDS = ("numRowsTotal", "numRowsUpdated", "allUpdatesTimeMs", "commitTimeMs", "memoryUsedBytes")


@dataclass(frozen=True)
class Variant:
    """One way of keeping the state: `kept`, or a streaming method with its state store provider and partitions."""

    method: str
    provider: str = "hdfs"
    partitions: int = 2
    interpreted: bool = False  # the query under the steady cycle's settings (spark/sizing.py), not Spark's defaults

    @classmethod
    def parse(cls, text: str) -> Variant:
        """`kept` or `<method>/<provider>/<partitions>[/interp]`."""
        if text == "kept":
            return cls("kept")
        method, provider, partitions, *rest = text.split("/")
        if method not in ("complete", "update", "availablenow", "pandas") or provider not in PROVIDERS \
                or rest not in ([], ["interp"]):
            raise ValueError(f"unknown variant {text!r}")
        return cls(method, provider, int(partitions), bool(rest))

    @property
    def name(self) -> str:
        """The variant as BENCH_VARIANTS spells it."""
        if self.method == "kept":
            return "kept"
        return f"{self.method}/{self.provider}/{self.partitions}" + ("/interp" if self.interpreted else "")

    @property
    def output_mode(self) -> str:
        """The streaming output mode: complete emits the whole state, update the changed rows."""
        return "complete" if self.method in ("complete", "availablenow") else "update"


@dataclass
class Store:
    """The generated store a variant appends its cycles to: its newest cycle's ts and step."""

    root: Path
    series: int
    ts: datetime
    step: int
    log: CommitLog = field(init=False)

    def __post_init__(self) -> None:
        self.log = CommitLog(self.root)

    def window(self) -> list[Commit]:
        """The committed cycles of the 15-minute window ending at the newest one."""
        return self.log.between(self.ts - STEP * (CYCLES - 1), self.ts)

    def next_cycle(self) -> Commit:
        """Write and commit one more collection cycle (every table, as the daemon's store); its commit."""
        self.step += 1
        self.ts += STEP
        write_cycle(self.root, self.series, self.step, self.ts)
        (commit,) = self.log.between(self.ts, self.ts)
        return commit


def median(values: list[float]) -> float | None:
    """The median (the upper one of an even count), None for no values."""
    return sorted(values)[len(values) // 2] if values else None


def _jvm_pid() -> int | None:
    """The driver JVM's pid (local mode: the whole of Spark)."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)  # noqa: SLF001
    return proc.pid if proc is not None else None


def _jvm_cpu_s() -> float:
    """User + system CPU seconds the driver JVM has used, from /proc."""
    fields = Path(f"/proc/{_jvm_pid()}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _idle_cpu() -> float:
    """CPU seconds per second the JVM burns over IDLE_S seconds with no new data."""
    before = _jvm_cpu_s()
    time.sleep(IDLE_S)
    return round((_jvm_cpu_s() - before) / IDLE_S, 3)


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds `action` took, and what it returned."""
    t0 = time.monotonic()
    result = action()
    return time.monotonic() - t0, result


def _judge(frame: DataFrame, ts: Column, cut: datetime) -> tuple[int, int]:
    """What judging needs of every series, as one action: the series, and those whose newest row is stale."""
    row = frame.agg(F.count(F.lit(1)), F.count_if(ts < F.lit(cut))).collect()[0]
    return int(row[0]), int(row[1])


def _dir_mib(path: Path) -> float:
    """Size of the files under `path`, MiB."""
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 2)


# ---- the kept frame (spark/evaluate.py's way) ----

def _new_rows(spark: SparkSession, store: Store, commits: list[Commit], partitions: int) -> DataFrame:
    """The rows `commits` wrote, as (key, n: struct of the other columns), read as the engine reads them."""
    rows = read_commits(spark, store.root, TABLE, commits, one_partition=partitions == 1)
    return rows.select(*KEY, F.struct(*VALUES).alias("n"))


def _fold(kept: DataFrame | None, new: DataFrame, partitions: int) -> DataFrame:
    """The kept rows and the new ones grouped by the key in one aggregate, each series' newest row kept."""
    both = new if kept is None else kept.unionByName(new)
    folded = both.coalesce(partitions).groupBy(*KEY).agg(F.max_by("n", F.col("n.ts")).alias("n"))
    return folded.localCheckpoint(eager=False, storageLevel=StorageLevel.MEMORY_AND_DISK)


def _kept_cycle(spark: SparkSession, store: Store, kept: DataFrame | None,
                commits: list[Commit]) -> tuple[DataFrame, tuple[int, int]]:
    """Fold `commits` into `kept` under the engine's cycle settings, judge, free the frame replaced."""
    sizing = Sizing()
    partitions = sizing.partitions(commits)
    with cycle_settings(spark, partitions, sizing.interpreted(commits)):
        folded = _fold(kept, _new_rows(spark, store, commits, partitions), partitions)
        judged = _judge(folded, F.col("n.ts"), store.ts - STALE)
    if kept is not None:
        release(kept)
    return folded, judged


def measure_kept(spark: SparkSession, store: Store, warm: int, runs: int) -> dict[str, Any]:
    """The kept frame: rebuild (cold JVM: a restarted daemon's first cycle), steady cycles, rebuild again (warm,
    as after a rules reload), idle JVM CPU."""
    t0 = time.monotonic()
    kept, judged = _kept_cycle(spark, store, None, store.window())
    first_s = time.monotonic() - t0
    steady: list[float] = []
    for i in range(warm + runs):
        commit = store.next_cycle()
        t0 = time.monotonic()
        kept, judged = _kept_cycle(spark, store, kept, [commit])
        if i >= warm:
            steady.append(time.monotonic() - t0)
    assert judged == (store.series, 0), judged
    rebuild_s, (rebuilt, judged) = timed(lambda: _kept_cycle(spark, store, None, store.window()))
    assert judged == (store.series, 0), judged
    release(kept)
    release(rebuilt)
    return {"first_s": round(first_s, 3), "steady_s": [round(s, 3) for s in steady],
            "restart_s": round(rebuild_s, 3), "idle_cpu": _idle_cpu()}


# ---- Structured Streaming ----

def _plain(value: Any) -> Any:
    """A pandas cell as the state accepts it: None for a missing value, datetime for a Timestamp, int for numpy."""
    import pandas as pd

    if value is None or pd.isna(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.tz_localize(None).to_pydatetime() if value.tzinfo else value.to_pydatetime()
    return value.item() if hasattr(value, "item") else value


def _newest_in_pandas(key: tuple, frames: Iterator[Any], state: Any) -> Iterator[Any]:
    """applyInPandasWithState's function: the group's newest row, kept in the state when newer than it."""
    import pandas as pd

    newest = None
    for frame in frames:
        row = frame.loc[frame["ts"].idxmax()]
        if newest is None or row["ts"] > newest["ts"]:
            newest = row
    values = [_plain(newest[c]) for c in VALUES]
    if state.exists and _plain(pd.Timestamp(state.get[0])) >= values[0]:
        values = list(state.get)
    state.update(tuple(values))
    yield pd.DataFrame([[*key, *values]], columns=[*KEY, *VALUES])


def _aggregate(spark: SparkSession, inbox: Path, variant: Variant) -> DataFrame:
    """The streaming plan: the inbox's Parquet files, each series' newest row kept in the state store."""
    stream = spark.readStream.schema(SCHEMA).option("cleanSource", "delete").parquet(str(inbox))
    if variant.method == "pandas":
        from pyspark.sql.streaming.state import GroupStateTimeout

        state_schema = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in SCHEMA if f.name in VALUES)
        return stream.groupBy(*KEY).applyInPandasWithState(
            _newest_in_pandas, SCHEMA, state_schema, "Update", GroupStateTimeout.NoTimeout)
    return stream.groupBy(*KEY).agg(F.max_by(F.struct(*VALUES), "ts").alias("n"))


@dataclass
class Stream:
    """One streaming variant's query, its inbox and checkpoint, and what its batches judged."""

    spark: SparkSession
    variant: Variant
    inbox: Path
    checkpoint: Path
    cut: datetime = datetime.min.replace(tzinfo=UTC)
    judged: tuple[int, int] | None = None
    query: StreamingQuery | None = None

    def _sink(self, batch: DataFrame, batch_id: int) -> None:
        """foreachBatch: complete mode judges the whole state; update mode only counts the changed rows."""
        if self.variant.output_mode == "complete":
            self.judged = _judge(batch, F.col("n.ts"), self.cut)
        else:
            batch.count()

    def start(self, available_now: bool = False) -> StreamingQuery:
        """Start the query on the checkpoint (restoring its state and source position, if any)."""
        self.spark.conf.set("spark.sql.shuffle.partitions", str(self.variant.partitions))
        self.spark.conf.set("spark.sql.streaming.stateStore.providerClass", PROVIDERS[self.variant.provider])
        writer = (_aggregate(self.spark, self.inbox, self.variant).writeStream
                  .outputMode(self.variant.output_mode).foreachBatch(self._sink)
                  .option("checkpointLocation", str(self.checkpoint)))
        if available_now:
            writer = writer.trigger(availableNow=True)
        self.query = writer.start()
        return self.query

    def deliver(self, commits: list[Commit], root: Path, ts: datetime) -> None:
        """Hard-link the commits' consumer_queue files into the inbox (the daemon would, after each commit)."""
        self.cut = ts - STALE
        for commit in commits:
            for path in committed_files(root, commit, TABLE.name):
                os.link(path, self.inbox / path.name)

    def run_batch(self, available_now: bool) -> float:
        """Seconds until the delivered files are processed: processAllAvailable, or an availableNow run."""
        if not available_now:
            return timed(self.query.processAllAvailable)[0]
        seconds, query = timed(lambda: self.start(available_now=True))
        seconds += timed(query.awaitTermination)[0]
        return seconds

    def start_and_run(self, available_now: bool) -> float:
        """Seconds to start the query on its checkpoint and process what the inbox holds."""
        if available_now:
            return self.run_batch(True)
        return timed(self.start)[0] + self.run_batch(False)

    def progress_since(self, batch_id: int) -> list[dict[str, Any]]:
        """The progress of every batch after `batch_id` that read rows."""
        progresses = [json.loads(p.json) for p in self.query.recentProgress]
        return [p for p in progresses if p["batchId"] > batch_id and p["numInputRows"] > 0]

    def judge_from_state(self) -> tuple[float, tuple[int, int]]:
        """Seconds to read the whole committed state from the checkpoint (statestore source) and judge it."""
        def read() -> tuple[int, int]:
            state = self.spark.read.format("statestore").load(str(self.checkpoint))
            ts = F.col("value.valueWithExtremumOrdering.ts") if self.variant.method != "pandas" \
                else F.col("value.groupState.ts")
            return _judge(state, ts, self.cut)
        return timed(read)


def _batch_figures(progress: dict[str, Any]) -> dict[str, Any]:
    """The durationMs and state operator figures of one batch's progress."""
    state = progress["stateOperators"][0] if progress["stateOperators"] else {}
    custom = state.get("customMetrics", {})
    return {"batchId": progress["batchId"], "numInputRows": progress["numInputRows"],
            "durationMs": {k: progress["durationMs"].get(k) for k in DURATIONS},
            "state": {**{k: state.get(k) for k in STATE_FIELDS},
                      "stateOnCurrentVersionSizeBytes": custom.get("stateOnCurrentVersionSizeBytes"),
                      "numShufflePartitions": state.get("numShufflePartitions")}}


def _one_cycle(stream: Stream, store: Store, available_now: bool) -> tuple[float, float | None, list[dict]]:
    """Deliver one new cycle and process it: wall seconds, state-read judge seconds (update), batch figures."""
    last = max((p["batchId"] for p in stream.progress_since(-1)), default=-1) if stream.query else -1
    stream.deliver([store.next_cycle()], store.root, store.ts)
    seconds = stream.run_batch(available_now)
    judge_s = None
    if stream.variant.output_mode == "update":
        judge_s, stream.judged = stream.judge_from_state()
    assert stream.judged == (store.series, 0), stream.judged
    return seconds, judge_s, [_batch_figures(p) for p in stream.progress_since(last)]


def measure_stream(spark: SparkSession, store: Store, variant: Variant, work: Path, warm: int,
                   runs: int) -> dict[str, Any]:
    """A streaming variant: first batch (the window's files), steady cycles, idle CPU, restart in this JVM."""
    stream = Stream(spark, variant, work / "inbox", work / "checkpoint")
    stream.inbox.mkdir(parents=True)
    available_now = variant.method == "availablenow"
    stream.deliver(store.window(), store.root, store.ts)
    first_s = stream.start_and_run(available_now)
    first = [_batch_figures(p) for p in stream.progress_since(-1)]
    steady: list[float] = []
    judges: list[float] = []
    batches: list[dict] = []
    for i in range(warm + runs):
        seconds, judge_s, figures = _one_cycle(stream, store, available_now)
        if i >= warm:
            steady.append(seconds + (judge_s or 0.0))
            judges.extend([judge_s] if judge_s is not None else [])
            batches.extend(figures)
    idle = None if available_now else _idle_cpu()
    stop_s = timed(stream.query.stop)[0] if not available_now else 0.0
    restart_s, restart_judge, restart = _restart(stream, store, available_now)
    stream.query.stop()
    return {"first_s": round(first_s, 3), "first_batch": first, "steady_s": [round(s, 3) for s in steady],
            "judge_from_state_s": [round(s, 3) for s in judges], "batches": batches, "idle_cpu": idle,
            "stop_s": round(stop_s, 3), "restart_s": round(restart_s + (restart_judge or 0.0), 3),
            "restart_batch": restart, "checkpoint_mib": _dir_mib(stream.checkpoint)}


def _restart(stream: Stream, store: Store, available_now: bool) -> tuple[float, float | None, list[dict]]:
    """Start the stopped query again on its checkpoint and process one new cycle: seconds, judge, figures."""
    stream.deliver([store.next_cycle()], store.root, store.ts)
    seconds = stream.start_and_run(available_now)
    judge_s = None
    if stream.variant.output_mode == "update":
        judge_s, stream.judged = stream.judge_from_state()
    return seconds, judge_s, [_batch_figures(p) for p in stream.progress_since(-1)]


def resume_stream(spark: SparkSession, store: Store, variant: Variant, work: Path) -> dict[str, Any]:
    """A daemon restarted: a new JVM starts the query on the checkpoint a previous process left, one cycle."""
    stream = Stream(spark, variant, work / "inbox", work / "checkpoint")
    seconds, judge_s, figures = _restart(stream, store, variant.method == "availablenow")
    assert stream.judged == (store.series, 0), stream.judged
    stream.query.stop()
    return {"resume_new_jvm_s": round(seconds + (judge_s or 0.0), 3), "resume_batch": figures}
