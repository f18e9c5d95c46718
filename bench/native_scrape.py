"""Benchmark: the native-metrics part of a collection cycle, N brokers' /metrics pages at once.

Each of N endpoints on loopback serves the real 5.3.3 page (shared/fixtures/rocketmq-5.3.3/metrics-3.txt,
666 lines, 61 sample names); one cycle of `collect_native` scrapes all of them concurrently, parses each
page off the event loop and maps it to rows. BENCH_BROKERS (default 1,10,50) and BENCH_RUNS (default 5).
Writes bench/results/native_scrape.{json,md}.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.native_metrics import NativeMetricsConfig  # noqa: E402
from daemon.collectors.native_metrics import collect_native  # noqa: E402
from tests.fixtures_path import CAPTURE_5  # noqa: E402

SIZES = [int(n) for n in os.environ.get("BENCH_BROKERS", "1,10,50").split(",")]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


async def serve_pages(count: int, page: str) -> tuple[list[web.AppRunner], list[str]]:
    """`count` loopback endpoints serving `page` at /metrics: their runners (to clean up) and URLs."""
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/plain")

    runners, urls = [], []
    for _ in range(count):
        app = web.Application()
        app.router.add_get("/metrics", metrics)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        urls.append(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/metrics")  # type: ignore[union-attr]
    return runners, urls


async def _measure(count: int, page: str) -> dict:
    runners, urls = await serve_pages(count, page)
    try:
        config = NativeMetricsConfig(urls=urls, brokers=False)
        times, rows = [], 0
        for _ in range(RUNS + 1):  # the first opens the connections: a warm-up, not reported
            t0 = time.perf_counter()
            result = await collect_native("bench", config, [], datetime.now(UTC))
            times.append(time.perf_counter() - t0)
            assert result.failed_calls == 0, result.summary
            rows = sum(len(r) for t, r in result.rows.items() if t != "collector_health")
        times = sorted(times[1:])
        return {"brokers": count, "cycle_median_s": round(times[len(times) // 2], 3),
                "cycle_max_s": round(times[-1], 3), "rows": rows}
    finally:
        for runner in runners:
            await runner.cleanup()


def main() -> None:
    """Measure each size and write the results."""
    page = (CAPTURE_5 / "metrics-3.txt").read_text()
    results = [asyncio.run(_measure(n, page)) for n in SIZES]
    report = {"when": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
              "load_average_1m": round(os.getloadavg()[0], 2), "page": "metrics-3.txt (real 5.3.3, 666 lines)",
              "runs": RUNS, "results": results}
    out = ROOT / "bench" / "results"
    (out / "native_scrape.json").write_text(json.dumps(report, indent=2) + "\n")
    md = (f"# Native metrics scrape ({report['when']})\n\n{report['page']}; {report['machine']}, load "
          f"{report['load_average_1m']}.\n\n| brokers | median s | max s | rows |\n|---|---|---|---|\n"
          + "".join(f"| {r['brokers']} | {r['cycle_median_s']} | {r['cycle_max_s']} | {r['rows']} |\n" for r in results))
    (out / "native_scrape.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
