"""Benchmark: per-series state kept as a local-checkpointed DataFrame against Structured Streaming's state store.

What it measures, for the consumer_queue table (the largest) and the simplest state the engine keeps,
each series' newest row (key: the table's key, value: max_by(struct(every other stored column), ts)),
over the same generated store (bench/store_gen.py, 15 minutes of 30 s cycles, then one new
collection cycle at a time, as the daemon's):

- kept: what spark/evaluate.py does each cycle: the new cycle's rows (spark/store_reader.py
  read_commits) UNION ALL the kept frame, grouped by the key in one aggregate, local-checkpointed
  (spark/state.py), one action over the whole state (the judge needs every series: a series that
  stopped reporting is no_data), the previous frame unpersisted; spark/codegen.py cycle_settings as
  spark/sizing.py decides them. Its first cycle and its restart are a rebuild: the window's 31 cycles folded.
- complete / update: a streaming query over a directory (the inbox) that each committed cycle's
  consumer_queue file is hard-linked into, groupBy(key).agg(max_by(...)), checkpointed in a temp
  dir, foreachBatch sink; after each cycle's link, processAllAvailable() runs one micro-batch.
  Complete mode judges the whole state inside foreachBatch; update mode emits only the changed
  rows, so the judge reads the whole state from the checkpoint (the `statestore` data source).
- availablenow: the complete-mode query started with trigger(availableNow=True) every cycle and
  left to end (nothing runs between cycles; each cycle restores the state).
- pandas: applyInPandasWithState keeping the newest row (the kind of operator a stall run needs),
  update mode, the judge through the `statestore` reader.

Streaming variants are `<method>/<provider>/<shuffle partitions>` (provider hdfs: the default
HDFS-backed state store, rocksdb: RocksDBStateStoreProvider), e.g. complete/rocksdb/2; a trailing
`/interp` runs the query under the steady cycle's interpreted settings (spark/codegen.py).
Per size and variant: the first batch (31 cycles' files; kept: the rebuild), the median of the
steady cycles after untimed warm-up ones, the streaming progress (`durationMs`, `stateOperators`)
of each steady batch, the restart (stop, start, one batch: in the same JVM, and in a new one),
the JVM's CPU while the query idles between cycles, JVM RSS and the checkpoint's size.

Run: `.venv/bin/python bench/streaming.py`; writes bench/results/streaming.json and streaming.md
(rows of sizes and variants not measured again are kept from the previous streaming.json, and the
report's hand-written part from its "## Findings" heading on). Env: BENCH_SIZES (series, default
16,16000,160000), BENCH_VARIANTS (comma-separated, default per size: VARIANTS), BENCH_WARM untimed
cycles (4), BENCH_RUNS timed cycles (5). Each variant runs in a process of its own (a fresh JVM);
the store is written once per size and shared. All three sizes took ~25 minutes on 2 cores: run
one size at a time to keep each run under 10.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark import StorageLevel  # noqa: E402
from pyspark.sql import Column, DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.streaming import StreamingQuery  # noqa: E402

from bench.scale import CYCLES, DRIVER_CONF, STALE, _jvm_rss_mib  # noqa: E402
from bench.store_gen import STEP, write_cycle, write_store  # noqa: E402
from rules.tables import TABLES  # noqa: E402
from spark.codegen import cycle_settings  # noqa: E402
from spark.schema import stored_schema  # noqa: E402
from spark.session import get_session  # noqa: E402
from spark.sizing import Sizing  # noqa: E402
from spark.state import release  # noqa: E402
from spark.store_layout import Commit, CommitLog, committed_files  # noqa: E402
from spark.store_reader import read_commits  # noqa: E402

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
    interpreted: bool = False  # the query under the steady cycle's settings (spark/codegen.py), not Spark's defaults

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


def _median(values: list[float]) -> float | None:
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


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
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


def _kept_cycle(spark: SparkSession, store: Store, kept: DataFrame | None, commits: list[Commit],
                rebuild: bool) -> tuple[DataFrame, tuple[int, int]]:
    """Fold `commits` into `kept` under the engine's cycle settings, judge, free the frame replaced."""
    sizing = Sizing()
    partitions = sizing.partitions(commits)
    with cycle_settings(spark, partitions, sizing.interpreted(commits, rebuild)):
        folded = _fold(kept, _new_rows(spark, store, commits, partitions), partitions)
        judged = _judge(folded, F.col("n.ts"), store.ts - STALE)
    if kept is not None:
        release(kept)
    return folded, judged


def measure_kept(spark: SparkSession, store: Store, warm: int, runs: int) -> dict[str, Any]:
    """The kept frame: rebuild (cold JVM: a restarted daemon's first cycle), steady cycles, rebuild again (warm,
    as after a rules reload), idle JVM CPU."""
    t0 = time.monotonic()
    kept, judged = _kept_cycle(spark, store, None, store.window(), True)
    first_s = time.monotonic() - t0
    steady: list[float] = []
    for i in range(warm + runs):
        commit = store.next_cycle()
        t0 = time.monotonic()
        kept, judged = _kept_cycle(spark, store, kept, [commit], False)
        if i >= warm:
            steady.append(time.monotonic() - t0)
    assert judged == (store.series, 0), judged
    rebuild_s, (rebuilt, judged) = _timed(lambda: _kept_cycle(spark, store, None, store.window(), True))
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
            return _timed(self.query.processAllAvailable)[0]
        seconds, query = _timed(lambda: self.start(available_now=True))
        seconds += _timed(query.awaitTermination)[0]
        return seconds

    def start_and_run(self, available_now: bool) -> float:
        """Seconds to start the query on its checkpoint and process what the inbox holds."""
        if available_now:
            return self.run_batch(True)
        return _timed(self.start)[0] + self.run_batch(False)

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
        return _timed(read)


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
    stop_s = _timed(stream.query.stop)[0] if not available_now else 0.0
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


# ---- processes and results ----

def _child(argv: list[str]) -> None:
    """One variant in this process: `--size N --variant V --root DIR --ts ISO --step S --work DIR --out FILE [--resume 1]`."""
    options = dict(zip(argv[::2], argv[1::2], strict=True))
    series, variant = int(options["--size"]), Variant.parse(options["--variant"])
    store = Store(Path(options["--root"]), series, datetime.fromisoformat(options["--ts"]), int(options["--step"]))
    work = Path(options["--work"])
    work.mkdir(parents=True, exist_ok=True)
    spark = get_session("local[2]", DRIVER_CONF.get(series), log_file=work / "spark.log")
    if variant.method == "kept":
        result = measure_kept(spark, store, WARM, RUNS)
    else:
        # The query's session is a clone taken at its start: the settings hold for its whole life.
        with cycle_settings(spark, 1, True) if variant.interpreted else contextlib.nullcontext():
            result = resume_stream(spark, store, variant, work) if options.get("--resume") \
                else measure_stream(spark, store, variant, work, WARM, RUNS)
    result.update({"jvm_rss_mib": _jvm_rss_mib(), "ts": store.ts.isoformat(), "step": store.step,
                   "load_1m": round(os.getloadavg()[0], 2)})
    Path(options["--out"]).write_text(json.dumps(result))


def _run_child(store: Store, variant: Variant, work: Path, resume: bool = False) -> dict[str, Any]:
    """Run one variant in a fresh process; the store's newest cycle follows what it wrote."""
    out = work / ("resume.json" if resume else "result.json")
    command = [sys.executable, __file__, "--size", str(store.series), "--variant", variant.name,
               "--root", str(store.root), "--ts", store.ts.isoformat(), "--step", str(store.step),
               "--work", str(work), "--out", str(out)] + (["--resume", "1"] if resume else [])
    subprocess.run(command, check=True)
    result = json.loads(out.read_text())
    store.ts, store.step = datetime.fromisoformat(result["ts"]), result["step"]
    return result


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    """Medians of the steady cycles and of each durationMs and state figure of their batches."""
    batches = result.get("batches", [])
    return {
        "steady_median_s": _median(result["steady_s"]),
        "judge_from_state_median_s": _median(result.get("judge_from_state_s", [])),
        "durationMs_median": {k: _median([b["durationMs"][k] for b in batches if b["durationMs"][k] is not None])
                              for k in DURATIONS} if batches else {},
        "state_median": {k: _median([b["state"][k] for b in batches if b["state"].get(k) is not None])
                         for k in (*STATE_FIELDS, "stateOnCurrentVersionSizeBytes")} if batches else {},
    }


def measure_size(series: int, variants: list[Variant]) -> list[dict[str, Any]]:
    """Write a store of `series` queue series, run every variant (each in a process of its own) on it."""
    now = datetime.now(UTC).replace(microsecond=0)
    results = []
    with tempfile.TemporaryDirectory(prefix="rw-bench-stream-") as tmp:
        store = Store(Path(tmp) / "store", series, now, CYCLES - 1)
        write_s = _timed(lambda: write_store(store.root, series, CYCLES, now))[0]
        for variant in variants:
            work = Path(tmp) / variant.name.replace("/", "-")
            print(f"{series:,} series: {variant.name}", flush=True)
            result = {"series": series, "variant": variant.name, "store_write_s": round(write_s, 1),
                      **_run_child(store, variant, work)}
            if variant.method in ("complete", "update", "pandas"):
                result.update(_run_child(store, variant, work, resume=True))
            result.update(_summary(result))
            results.append(result)
            shutil.rmtree(work, ignore_errors=True)
    return results


def _ms(value: float | None) -> str:
    """A millisecond figure for the tables."""
    return "" if value is None else f"{value:,.0f}"


def _markdown(result: dict[str, Any]) -> str:
    """The results as a short report: per size and variant, then the streaming batches' breakdown."""
    sizes = result["sizes"]
    whens = sorted(r["when"] for r in sizes)
    lines = [f"# Kept frame against Structured Streaming state ({whens[0]} to {whens[-1]})", "",
             f"Machine: {result['machine']}, local[2], 1 GiB driver heap. Shared machine: another engineer's Spark "
             "benchmarks ran on it during these runs, so figures may be inflated and are noisy (the load column: "
             "1-minute load average at the end of each variant, this benchmark's own JVM included). consumer_queue, each series' newest row. Steady cycle: the median of "
             f"{sizes[0]['runs']} timed cycles after {sizes[0]['warm']} untimed ones. Each variant in a fresh JVM; "
             "streaming variants are method/state store/shuffle partitions (see bench/streaming.py).", "",
             "Columns: first batch / rebuild: the kept frame's fold of the window's 31 cycles in a fresh JVM, or "
             "the query's start and first batch (the same 31 cycles' files); steady cycle: one new cycle folded "
             "and the whole state judged (update mode: the batch, then the state read from the checkpoint and "
             "judged); restart, same JVM: the kept frame rebuilt warm, or the query stopped, started again and "
             "one new cycle processed; restart, new JVM: what a restarted daemon pays before its first judged "
             "cycle; idle JVM CPU: cores the JVM uses while it waits for the next cycle.", "",
             "| series | variant | first batch / rebuild s | steady cycle s (median) | of which state read + judge s "
             "| restart, same JVM s | restart, new JVM s | idle JVM CPU (cores) | JVM RSS MiB | checkpoint MiB | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sizes:
        lines.append(f"| {r['series']:,} | {r['variant']} | {r['first_s']} | {r['steady_median_s']} | "
                     f"{r['judge_from_state_median_s'] or ''} | {r['restart_s']} | {_new_jvm(r)} | "
                     f"{r['idle_cpu'] if r['idle_cpu'] is not None else ''} | {r['jvm_rss_mib']} | "
                     f"{r.get('checkpoint_mib', '')} | {r['load_1m']} |")
    lines += ["", "Where a streaming batch's time goes: `lastProgress` (ms). steady: medians over the timed "
              "batches; first: the window's 31 files; restart: stop + start in the same JVM, one new cycle; "
              "new JVM: a new process starting the query on the checkpoint, one new cycle. state: "
              "`stateOperators[0]`.", "",
              "| series | variant | batch | " + " | ".join(DURATIONS) + " | state commitTimeMs "
              "| state allUpdatesTimeMs | state rows | state memoryUsed KiB |",
              "|---|---|---|" + "---|" * (len(DURATIONS) + 4)]
    for r in result["sizes"]:
        for label, durations, state in _breakdowns(r):
            memory = None if state.get("memoryUsedBytes") is None else state["memoryUsedBytes"] / 1024
            lines.append(f"| {r['series']:,} | {r['variant']} | {label} | "
                         + " | ".join(_ms(durations.get(k)) for k in DURATIONS)
                         + f" | {_ms(state.get('commitTimeMs'))} | {_ms(state.get('allUpdatesTimeMs'))} | "
                         f"{_ms(state.get('numRowsTotal'))} | {_ms(memory)} |")
    return "\n".join(lines) + "\n"


def _new_jvm(result: dict[str, Any]) -> str:
    """Seconds a restarted daemon takes to its first judged cycle: the kept frame's cold rebuild, or the query
    resumed from its checkpoint in a new JVM (none for availableNow, which restarts every cycle)."""
    if result["variant"] == "kept":
        return f"{result['first_s']} (rebuild)"
    return str(result.get("resume_new_jvm_s", ""))


def _breakdowns(result: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """A variant's batch figures for the breakdown table: steady medians, first, restart, new JVM."""
    if result.get("durationMs_median"):
        yield "steady", result["durationMs_median"], result["state_median"]
    for label, key in (("first", "first_batch"), ("restart", "restart_batch"), ("new JVM", "resume_batch")):
        batches = result.get(key) or []
        if batches:
            yield label, batches[-1]["durationMs"], batches[-1]["state"]


def _notes(path: Path) -> str:
    """The hand-written part of a previous report (from its FINDINGS heading on), kept across runs."""
    text = path.read_text() if path.exists() else ""
    return text[text.index(FINDINGS):] if FINDINGS in text else ""


def _merged(path: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows`, and the rows of the previous results at `path` for the (series, variant) pairs not measured again."""
    measured = {(r["series"], r["variant"]) for r in rows}
    previous = json.loads(path.read_text())["sizes"] if path.exists() else []
    kept = [r for r in previous if (r["series"], r["variant"]) not in measured]
    order = {(n, v): i for n, names in VARIANTS.items() for i, v in enumerate(names)}
    return sorted(kept + rows, key=lambda r: (r["series"], order.get((r["series"], r["variant"]), 99), r["variant"]))


def main() -> None:
    """Measure every configured size and variant; write bench/results/streaming.{json,md} (other rows kept)."""
    sizes = [int(s) for s in os.environ.get("BENCH_SIZES", "16,16000,160000").split(",") if s]
    chosen = os.environ.get("BENCH_VARIANTS")
    rows = []
    for series in sizes:
        names = chosen.split(",") if chosen else VARIANTS.get(series, VARIANTS[160_000])
        rows += [{**r, "when": datetime.now(UTC).isoformat(timespec="seconds"), "warm": WARM, "runs": RUNS}
                 for r in measure_size(series, [Variant.parse(n) for n in names])]
    out = Path(__file__).resolve().parent / "results"
    result = {"machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
              "cycles": CYCLES, "sizes": _merged(out / "streaming.json", rows)}
    (out / "streaming.json").write_text(json.dumps(result, indent=2) + "\n")
    report = _markdown(result)
    (out / "streaming.md").write_text(report + ("\n" + notes if (notes := _notes(out / "streaming.md")) else ""))
    print(report)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        _child(sys.argv[1:])
    else:
        main()
