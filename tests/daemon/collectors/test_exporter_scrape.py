"""collect_exporter against a real HTTP server on 127.0.0.1 that plays the rocketmq-exporter.

The server answers like the exporter's controller (Content-Type `text/plain; version=0.0.4;
charset=utf-8`), or with the failures an operator meets: nothing listening, a web page instead
of metrics, a wrong path, a hung exporter, an oversized answer.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pyarrow.parquet as pq
import pytest
from aiohttp import web

from daemon.collectors.cluster import CollectResult
from daemon.collectors.exporter import SCRAPE_CALL, collect_exporter
from daemon.store.writer import ParquetStore

pytestmark = pytest.mark.timeout(30)

PAGE = (Path(__file__).parent / "data" / "exporter_metrics.txt").read_text()
NOW = datetime(2026, 11, 22, 0, 0, 15, tzinfo=UTC)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def exporter(handler: Handler) -> AsyncIterator[str]:
    """An HTTP server on a free loopback port answering /metrics with `handler`; yields the URL."""
    app = web.Application()
    app.router.add_get("/metrics", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/metrics"
    finally:
        await runner.cleanup()


async def serve_page(request: web.Request) -> web.Response:
    return web.Response(body=PAGE.encode(), headers={"Content-Type": CONTENT_TYPE})


def _health(result: CollectResult) -> dict:
    [row] = result.rows["collector_health"]
    return row


def test_a_scrape_writes_every_table_and_reads_back(tmp_path):
    async def run() -> CollectResult:
        async with exporter(serve_page) as url:
            return await collect_exporter(url, "prod", NOW, timeout=5.0)

    result = asyncio.run(run())
    health = _health(result)
    assert health["ok"] and health["error"] is None
    assert health["call"] == SCRAPE_CALL and health["target"].endswith("/metrics")
    assert health["latency_ms"] > 0
    assert (result.masters, result.groups, result.online_groups, result.clients) == (2, 3, 3, 4)
    assert (result.calls, result.failed_calls) == (1, 0)
    assert "2 master(s)" in result.summary and "8 consumer_queue" in result.summary

    store = ParquetStore(tmp_path / "store")
    written = store.append_all(result.rows, NOW)
    assert written == {
        "consumer_queue": 8,
        "topic_queue": 16,
        "broker": 2,
        "consumer_status": 7,
        "consumer_client": 4,
        "collector_health": 1,
    }
    cq = pq.read_table(tmp_path / "store" / "consumer_queue").to_pylist()
    lag = {(r["group"], r["topic"], r["broker"]): r["broker_offset"] - r["consumer_offset"] for r in cq}
    assert lag[("order-consumer", "OrderTopic", "broker-a")] == 45678
    assert {r["queue_id"] for r in cq} == {-1}
    brokers = {r["broker"]: r for r in pq.read_table(tmp_path / "store" / "broker").to_pylist()}
    assert brokers["broker-b"]["page_cache_lock_ms"] == 650
    assert brokers["broker-a"]["remain_transient_buffers"] is None
    dlq = [
        r for r in pq.read_table(tmp_path / "store" / "topic_queue").to_pylist() if r["topic_kind"] == "dlq"
    ]
    assert [(r["topic"], r["max_offset"], r["min_offset"]) for r in dlq] == [
        ("%DLQ%order-consumer", 37, None)
    ]
    health_back = pq.read_table(tmp_path / "store" / "collector_health").to_pylist()
    assert [(r["cluster"], r["call"], r["ok"]) for r in health_back] == [("prod", SCRAPE_CALL, True)]


def test_a_session_of_the_callers_is_used_and_left_open():
    async def run() -> tuple[CollectResult, bool]:
        async with exporter(serve_page) as url, aiohttp.ClientSession() as session:
            result = await collect_exporter(url, "prod", NOW, timeout=5.0, session=session)
            return result, session.closed

    result, closed = asyncio.run(run())
    assert _health(result)["ok"] and len(result.rows["consumer_queue"]) == 8
    assert not closed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_gives_a_failed_health_row_and_no_rows():
    url = f"http://127.0.0.1:{_free_port()}/metrics"
    result = asyncio.run(collect_exporter(url, "prod", NOW, timeout=2.0))
    health = _health(result)
    assert not health["ok"]
    assert health["error"] == f"cannot connect to rocketmq-exporter at {url}: Connection refused"
    assert all(not rows for table, rows in result.rows.items() if table != "collector_health")
    assert result.failed_calls == 1
    assert result.summary.startswith("prod: exporter scrape failed, nothing collected: cannot connect")


def _failed(handler: Handler, **kwargs: object) -> dict:
    async def run() -> CollectResult:
        async with exporter(handler) as url:
            return await collect_exporter(url, "prod", NOW, **{"timeout": 2.0, **kwargs})

    result = asyncio.run(run())
    assert all(not rows for table, rows in result.rows.items() if table != "collector_health")
    health = _health(result)
    assert not health["ok"]
    return health


def test_a_web_page_instead_of_metrics_is_named_as_such():
    async def html(request: web.Request) -> web.Response:
        return web.Response(
            text="<html><body>Whitelabel Error Page</body></html>\n", content_type="text/html"
        )

    error = _failed(html)["error"]
    assert "/metrics: not Prometheus text format: line 1: '<html><body>Whitelabel Error Page" in error


def test_a_wrong_path_reports_the_http_status():
    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPNotFound()

    error = _failed(moved)["error"]
    assert "answered HTTP 404 Not Found" in error and "/metrics on port 5557" in error


def test_an_exporter_that_hangs_costs_the_timeout():
    release = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text=PAGE)

    async def run() -> CollectResult:
        async with exporter(hang) as url:
            try:
                return await collect_exporter(url, "prod", NOW, timeout=0.2)
            finally:
                release.set()

    result = asyncio.run(run())
    health = _health(result)
    assert not health["ok"]
    assert health["error"].endswith("did not answer within 0.2 s")
    assert health["latency_ms"] >= 200


def test_an_answer_larger_than_allowed_is_refused():
    async def chunked(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": CONTENT_TYPE})
        await resp.prepare(request)  # no Content-Length: the limit must hold while reading
        for _ in range(10):
            await resp.write(PAGE.encode())
        return resp

    error = _failed(chunked, max_bytes=len(PAGE) * 2)["error"]
    assert f"sent more than the {len(PAGE) * 2} bytes allowed" in error
