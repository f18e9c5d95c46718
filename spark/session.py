"""One warm SparkSession per process, configured for small, frequent, rule-shaped jobs (DESIGN §10)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from spark import output

# Measured on 2 cores: 200 shuffle partitions made small evaluations ~3.5x slower than 2 (DESIGN §10).
# Adaptive execution on vs off: 0.55-0.71 s vs 0.61-0.71 s per evaluate (6,400-row window), i.e. noise;
# off keeps plans predictable.
DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    # The serial collector leaves both cores to the evaluation instead of running beside it (G1's
    # threads competed for them): at 16k queue series, median of 11 evaluations, 4.5-5.0 s instead of
    # 5.3-5.9 s with G1. Left alone it grows the heap to its 1 GiB and keeps it committed, though the
    # live set at 160k series is ~455 MiB; holding the heap to 20-40% free after each full
    # collection gives most of the rest back. The daemon at 160k series (bench/daemon_memory.py,
    # three runs in one hour on one machine): peak 1,751 MiB (JVM 1,190), evaluation mean 15.4 s; the
    # serial collector alone 1,991 MiB (JVM 1,484), 15.4 s; held to 10-30% free 1,712 MiB (JVM
    # 1,118) but 17.2 s, its collections competing with collection for the cores. C1 alone
    # (-XX:TieredStopAtLevel=1, as diagnose runs) was slower: 6.8 s against 5.5 s at 16k.
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:MinHeapFreeRatio=20 -XX:MaxHeapFreeRatio=40",
    "spark.sql.execution.arrow.pyspark.enabled": "false",
    # Call-site capture costs ~5 JVM round trips per Column function: 36k calls and 4.7 s per plan at 16k series.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # One evaluation generates ~280 classes; the default cache of 100 made every cycle recompile them
    # all (279 compiles vs 48 per cycle, ~2 s at 16k series).
    "spark.sql.codegen.cache.maxEntries": "2000",
    # A union of single-partition branches (spark/sizing.py) would otherwise
    # be one partition, every rule of the cycle run one after another in a single task on one core.
    "spark.sql.unionOutputPartitioning": "false",
    # Windows are read as lists of files (spark/store_reader.py): past 32 paths Spark would list
    # them in a Spark job of its own, before every read of a window longer than 16 minutes.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "10000",
    # The kept frames are held serialized (spark/state.py): Kryo writes and reads an UnsafeRow's
    # bytes without Java serialization's per-object stream records. Steady cycle, median: 160k
    # queue series 3.97 s against 4.24 s; 1.6M series 20.2-21.6 s against 22.1-22.2 s.
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    # A block holds rows, never an object graph with shared or cyclic references: tracking them
    # cleared Kryo's reference maps for every row written and read (4% of a 160k steady cycle's
    # executor samples, JFR). Folds of the 160k frames, same store: 0.74 / 0.42 / 0.54 s against
    # 0.82 / 0.44 / 0.59 s with tracking.
    "spark.kryo.referenceTracking": "false",
}

_lock = threading.Lock()
_session: SparkSession | None = None


def get_session(master: str = "local[2]", conf: Mapping[str, str] | None = None,
                log_file: Path | None = None) -> SparkSession:
    """The process's SparkSession, created on first call with `master` and `conf` (later calls reuse it).

    `master` may be `local[N]`, a cluster URL (`spark://…`, `yarn`, `k8s://…`) or a Spark Connect
    address (`sc://host:15002`). Spark's own output goes to `log_file` (a temporary file when None),
    not to the terminal (spark/output.py); the first JVM of the process keeps its file.
    """
    global _session
    with _lock:
        if _session is not None:
            return _session
        # Workers must run this interpreter (the venv's), not whatever `python3` is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        builder = SparkSession.builder.appName("rocketwatch")
        builder = builder.remote(master) if master.startswith("sc://") else builder.master(master)
        settings = {**DEFAULTS, **(conf or {})}
        if not master.startswith("sc://"):
            _launch_jvm(master, settings, log_file)
        for key, value in settings.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        if not master.startswith("sc://"):
            session.sparkContext.setLogLevel("WARN")
        _session = session
        return session


def _launch_jvm(master: str, settings: dict[str, str], log_file: Path | None) -> None:
    """Start the driver JVM as pyspark would, but with its output on Spark's log file (`settings` gains
    the logging options); nothing when this process already has a JVM (a session stopped and started again)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    out = output.prepare(log_file)
    key = "spark.driver.extraJavaOptions"
    settings[key] = output.java_options(out, settings.get(key, ""))
    conf = SparkConf().setMaster(master).setAppName("rocketwatch").setAll(list(settings.items()))
    # pyspark starts the JVM with this process's stdout and stderr unless told otherwise.
    SparkContext._ensure_initialized(gateway=launch_gateway(conf, popen_kwargs=output.popen_kwargs(out)))


def stop_session() -> None:
    """Stop the process's session (on daemon shutdown); the next get_session starts a new one."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
