"""The native-metrics source: each 5.1+ broker's own Prometheus page, once per cycle (DESIGN §5).

Targets are `<host of the broker's address>:<port>` for every broker of the cluster's broker table
(this cycle's runtime-info rows) that answers as 5.1 or later, plus the configured explicit URLs
(proxies, other ports). Several brokers behind one address are scraped once. Every scrape gives a
`collector_health` row (call NATIVE_METRICS_SCRAPE), except in `mode: auto` where a broker that
refuses the connection has its exporter off (the broker's default) and is only counted in the
summary. Nothing raises out of collect_native.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from config.native_metrics import NativeMetricsConfig
from config.receivers import secret_value
from daemon.collectors.cluster import COLLECTOR_HEALTH, CollectResult
from daemon.collectors.health import with_target_figures
from daemon.collectors.native_map import NATIVE_ROW_TABLES, NativePageError, native_rows, parse_native_page

log = logging.getLogger(__name__)

SCRAPE_CALL = "NATIVE_METRICS_SCRAPE"
MAX_BYTES = 64 * 1024 * 1024
_VERSION = re.compile(r"V(\d+)_(\d+)_(\d+)")


class NativeScrapeError(Exception):
    """The page could not be read; `refused` when nothing listens at the address."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


@dataclass(frozen=True)
class Target:
    """One page to scrape: its URL, the address its rows are keyed by, the brokers behind it."""

    url: str
    address: str
    brokers: tuple[tuple[str, int], ...]  # (broker name, broker id) known to be behind it
    explicit: bool


def serves_native_metrics(version: str | None) -> bool:
    """True for brokerVersionDesc V5_1_0 and later (native metrics appeared in 5.1)."""
    m = _VERSION.match(version or "")
    return m is not None and (int(m[1]), int(m[2])) >= (5, 1)


def native_targets(config: NativeMetricsConfig, broker_rows: Iterable[dict[str, Any]]) -> list[Target]:
    """The pages to scrape this cycle: one per distinct address, brokers first, then the explicit URLs."""
    by_url: dict[str, list[tuple[str, int]]] = {}
    scheme = "https" if config.https else "http"
    if config.brokers:
        for row in broker_rows:
            host = (row.get("addr") or "").rsplit(":", 1)[0]
            if host and serves_native_metrics(row.get("version")):
                url = f"{scheme}://{host}:{config.port}{config.path}"
                by_url.setdefault(url, []).append((row["broker"], int(row["broker_id"])))
    targets = [Target(url, _address(url), tuple(sorted(b)), False) for url, b in by_url.items()]
    targets += [Target(url, _address(url), (), True) for url in config.urls if url not in by_url]
    return targets


def _address(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def _auth_headers(config: NativeMetricsConfig) -> dict[str, str]:
    if config.username is None or config.password_env is None:
        return {}
    password = secret_value(config.password_env)
    if password is None:
        raise NativeScrapeError(f"native metrics basic auth: environment variable or credential "
                                f"{config.password_env} is not set")
    token = base64.b64encode(f"{config.username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


async def fetch_page(url: str, session: aiohttp.ClientSession, config: NativeMetricsConfig,
                     ssl_context: ssl.SSLContext | None) -> str:
    """The text of one page; NativeScrapeError with the reason when there is none."""
    try:
        async with session.get(
            url, timeout=aiohttp.ClientTimeout(total=config.timeout.total_seconds()),
            headers={"Accept": "text/plain", **_auth_headers(config)}, allow_redirects=False,
            ssl=ssl_context if ssl_context is not None else True,
        ) as resp:
            if resp.status != 200:
                raise NativeScrapeError(f"{url} answered HTTP {resp.status} {resp.reason or ''}".rstrip()
                                        + " (expected 200 and the broker's metrics page)")
            body = bytearray()
            async for chunk in resp.content.iter_chunked(1 << 16):
                body += chunk
                if len(body) > MAX_BYTES:
                    raise NativeScrapeError(f"{url} sent more than the {MAX_BYTES} bytes allowed")
            return body.decode(resp.charset or "utf-8", errors="replace")
    except TimeoutError:
        raise NativeScrapeError(f"{url} did not answer within {config.timeout.total_seconds():g} s") from None
    except aiohttp.ClientConnectorError as exc:
        refused = isinstance(exc.os_error, ConnectionRefusedError)
        raise NativeScrapeError(f"cannot connect to {url}: {exc.os_error.strerror or exc}", refused=refused) from None
    except aiohttp.ClientError as exc:
        raise NativeScrapeError(f"reading {url} failed: {type(exc).__name__}: {exc}") from None


async def _scrape_one(target: Target, cluster: str, now: datetime, session: aiohttp.ClientSession,
                      config: NativeMetricsConfig, ssl_context: ssl.SSLContext | None
                      ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any] | None]:
    """Rows of one page and its health row; no health row for a broker without an exporter in auto mode."""
    start = time.perf_counter()
    error: str | None = None
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        text = await fetch_page(target.url, session, config, ssl_context)
        page = await asyncio.to_thread(parse_native_page, text)
        rows = native_rows(page, cluster, target.address, now)
    except NativeScrapeError as exc:
        if exc.refused and config.mode == "auto" and not target.explicit:
            log.debug("cluster %s: no native metrics at %s (broker exporter off)", cluster, target.url)
            return {}, None
        error = str(exc)
    except NativePageError as exc:
        error = f"{target.url}: {exc}"
    except Exception as exc:  # a bug must cost this scrape, not the cycle
        log.exception("cluster %s: scraping native metrics %s failed unexpectedly", cluster, target.url)
        error = f"internal error reading {target.url}: {exc!r}"
    if error is not None:
        brokers = ", ".join(f"{name}/{bid}" for name, bid in target.brokers) or "explicit url"
        log.warning("cluster %s: native metrics of %s: %s", cluster, brokers, error)
    health = {"ts": now, "cluster": cluster, "target": target.address, "call": SCRAPE_CALL, "ok": error is None,
              "error": error, "latency_ms": (time.perf_counter() - start) * 1000.0}
    return rows, health


async def collect_native(cluster: str, config: NativeMetricsConfig, broker_rows: Iterable[dict[str, Any]],
                         now: datetime, *, session: aiohttp.ClientSession | None = None) -> CollectResult:
    """Scrape every native page of `cluster` once: rows per native table plus collector_health rows."""
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    targets = native_targets(config, broker_rows) if config.mode != "off" else []
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in NATIVE_ROW_TABLES}
    if not targets:
        return CollectResult(rows={**rows, COLLECTOR_HEALTH: []}, summary=f"{cluster}: native metrics: no 5.1+ "
                             "broker and no url to scrape" if config.mode != "off" else f"{cluster}: native metrics off")
    ssl_context = ssl.create_default_context(cafile=config.tls_ca_file) if config.tls_ca_file else None
    own = session is None
    session = session or aiohttp.ClientSession()
    try:
        results = await asyncio.gather(*(_scrape_one(t, cluster, now, session, config, ssl_context) for t in targets))
    finally:
        if own:
            await session.close()
    health = []
    for table_rows, health_row in results:
        for table, found in table_rows.items():
            rows[table].extend(found)
        if health_row is not None:
            health.append(health_row)
    brokers = {t.address: t.brokers[0] for t in targets if len(t.brokers) == 1}
    failed = sum(1 for h in health if not h["ok"])
    off = len(targets) - len(health)
    summary = (f"{cluster}: native metrics: {len(health) - failed} page(s) read, {failed} failed"
               + (f", {off} broker(s) without an endpoint (metricsExporterType=PROM turns it on)" if off else "")
               + "; " + ", ".join(f"{len(rows[t])} {t}" for t in NATIVE_ROW_TABLES) + " row(s)")
    return CollectResult(rows={**rows, COLLECTOR_HEALTH: with_target_figures(health, brokers)}, summary=summary,
                         calls=len(health), failed_calls=failed)
