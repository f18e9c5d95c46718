"""Scraping the brokers' native pages over HTTP: targets from the broker table, basic auth, what a
broker with its exporter off costs (nothing in auto mode, a failed health row when asked for)."""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
from aiohttp import web

from config.native_metrics import NativeMetricsConfig
from daemon.collectors.native_metrics import collect_native, native_targets, serves_native_metrics
from tests.daemon.collectors.test_native_decode import FIXTURES

pytestmark = pytest.mark.timeout(60)
PAGE = (FIXTURES / "metrics-3.txt").read_text()


@asynccontextmanager
async def _endpoint(auth: str | None = None) -> AsyncIterator[int]:
    async def metrics(request: web.Request) -> web.Response:
        if auth is not None and request.headers.get("Authorization") != "Basic " + base64.b64encode(auth.encode()).decode():
            return web.Response(status=401, reason="Unauthorized")
        return web.Response(text=PAGE, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _brokers(version: str = "V5_3_3") -> list[dict]:
    return [{"broker": "broker-a", "broker_id": 0, "addr": "127.0.0.1:10911", "version": version}]


def test_only_51_and_later_brokers_serve_native_metrics() -> None:
    assert [serves_native_metrics(v) for v in ("V5_3_3", "V5_1_0", "V5_0_0", "V4_9_7", None)] == [
        True, True, False, False, False]
    assert native_targets(NativeMetricsConfig(), _brokers("V4_9_7")) == []
    (target,) = native_targets(NativeMetricsConfig(), _brokers())
    assert (target.url, target.address, target.brokers) == ("http://127.0.0.1:5557/metrics", "127.0.0.1:5557",
                                                             (("broker-a", 0),))


def test_a_brokers_page_fills_the_native_tables_with_a_health_row_per_scrape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_METRICS_PASSWORD", "s3cret")

    async def run() -> tuple:
        async with _endpoint(auth="monitor:s3cret") as port:
            config = NativeMetricsConfig(port=port, username="monitor", password_env="ROCKETMQ_METRICS_PASSWORD")
            return port, await collect_native("DefaultCluster", config, _brokers(), datetime.now(UTC))

    port, result = asyncio.run(run())
    (health,) = result.rows["collector_health"]
    assert health["ok"] and health["call"] == "NATIVE_METRICS_SCRAPE" and health["target"] == f"127.0.0.1:{port}"
    assert (health["broker"], health["broker_id"]) == ("broker-a", 0)
    pop = next(r for r in result.rows["native_consumer"] if r["group"] == "popGroup" and r["topic"] == "PopTopic")
    assert (pop["ready"], pop["inflight"], pop["target"]) == (100, 0, f"127.0.0.1:{port}")
    assert {r["topic"]: r["half_messages"] for r in result.rows["native_topic"]}["TxTopic"] == 30
    assert "1 page(s) read, 0 failed" in result.summary


def test_wrong_credentials_are_a_failed_scrape_naming_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_METRICS_PASSWORD", "wrong")

    async def run() -> tuple:
        async with _endpoint(auth="monitor:s3cret") as port:
            config = NativeMetricsConfig(port=port, username="monitor", password_env="ROCKETMQ_METRICS_PASSWORD")
            return await collect_native("DefaultCluster", config, _brokers(), datetime.now(UTC))

    result = asyncio.run(run())
    (health,) = result.rows["collector_health"]
    assert not health["ok"] and "HTTP 401" in health["error"]
    assert result.rows["native_consumer"] == [] and result.failed_calls == 1


def test_a_broker_with_its_exporter_off_costs_nothing_in_auto_mode_and_fails_when_asked_for() -> None:
    port = _free_port()
    auto = asyncio.run(collect_native("DefaultCluster", NativeMetricsConfig(port=port), _brokers(), datetime.now(UTC)))
    assert auto.rows["collector_health"] == [] and "1 broker(s) without an endpoint" in auto.summary
    on = asyncio.run(collect_native("DefaultCluster", NativeMetricsConfig(port=port, mode="on"), _brokers(),
                                    datetime.now(UTC)))
    (health,) = on.rows["collector_health"]
    assert not health["ok"] and "cannot connect" in health["error"] and f"127.0.0.1:{port}" in health["error"]


def test_an_explicit_url_is_scraped_when_no_broker_of_the_table_serves_the_page() -> None:
    async def run() -> tuple:
        async with _endpoint() as port:
            config = NativeMetricsConfig(urls=[f"http://127.0.0.1:{port}"], brokers=False)
            return port, await collect_native("DefaultCluster", config, _brokers("V4_9_7"), datetime.now(UTC))

    port, result = asyncio.run(run())
    (health,) = result.rows["collector_health"]
    assert health["ok"] and health["target"] == f"127.0.0.1:{port}" and health["broker"] is None
    assert {r["broker"] for r in result.rows["native_broker"]} == {"broker-a"}
