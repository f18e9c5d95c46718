"""Benchmark: per-series state kept as a local-checkpointed DataFrame against Structured Streaming's state store.

What it measures, for the consumer_queue table (the largest) and the simplest state the engine keeps,
each series' newest row (key: the table's key, value: max_by(struct(every other stored column), ts)),
over the same generated store (bench/store_gen.py, 15 minutes of 30 s cycles, then one new
collection cycle at a time, as the daemon's):

- kept: what spark/evaluate.py does each cycle: the new cycle's rows (spark/store_reader.py
  read_commits) UNION ALL the kept frame, grouped by the key in one aggregate, local-checkpointed
  (spark/state.py), one action over the whole state (the judge needs every series: a series that
  stopped reporting is no_data), the previous frame unpersisted; spark/sizing.py cycle_settings as
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
`/interp` runs the query under the steady cycle's interpreted settings (spark/sizing.py).
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
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scale import CYCLES, DRIVER_CONF, _jvm_rss_mib  # noqa: E402
from bench.store_gen import write_store  # noqa: E402
from bench.streaming_ways import (  # noqa: E402
    DURATIONS,
    FINDINGS,
    RUNS,
    STATE_FIELDS,
    VARIANTS,
    WARM,
    Store,
    Variant,
    measure_kept,
    measure_stream,
    median,
    resume_stream,
    timed,
)
from spark.session import get_session  # noqa: E402
from spark.sizing import cycle_settings  # noqa: E402

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
        "steady_median_s": median(result["steady_s"]),
        "judge_from_state_median_s": median(result.get("judge_from_state_s", [])),
        "durationMs_median": {k: median([b["durationMs"][k] for b in batches if b["durationMs"][k] is not None])
                              for k in DURATIONS} if batches else {},
        "state_median": {k: median([b["state"][k] for b in batches if b["state"].get(k) is not None])
                         for k in (*STATE_FIELDS, "stateOnCurrentVersionSizeBytes")} if batches else {},
    }


def measure_size(series: int, variants: list[Variant]) -> list[dict[str, Any]]:
    """Write a store of `series` queue series, run every variant (each in a process of its own) on it."""
    now = datetime.now(UTC).replace(microsecond=0)
    results = []
    with tempfile.TemporaryDirectory(prefix="rw-bench-stream-") as tmp:
        store = Store(Path(tmp) / "store", series, now, CYCLES - 1)
        write_s = timed(lambda: write_store(store.root, series, CYCLES, now))[0]
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
