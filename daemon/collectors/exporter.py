"""The exporter source: scrape a rocketmq-exporter `/metrics` into the sample tables (DESIGN §5, ref §6).

For sites that already run apache/rocketmq-exporter: one HTTP GET per cycle, parsed with
prometheus-client and mapped by exporter_map. It fills consumer_queue and topic_queue per broker
(queue_id -1), broker (masters), consumer_status and consumer_client; never process_queue. One
`collector_health` row says whether the scrape worked; nothing raises out of collect_exporter.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import time
from datetime import UTC, datetime
from typing import Any

import aiohttp

from daemon.collectors.cluster import COLLECTOR_HEALTH, CollectResult
from daemon.collectors.exporter_map import (
    BROKER,
    CONSUMER_CLIENT,
    CONSUMER_QUEUE,
    CONSUMER_STATUS,
    TOPIC_QUEUE,
    exporter_rows,
)
from daemon.collectors.exporter_parse import ExpositionError
from daemon.collectors.health import with_target_figures

__all__ = ["SCRAPE_CALL", "ScrapeError", "collect_exporter", "exporter_rows", "scrape"]

log = logging.getLogger(__name__)

SCRAPE_CALL = "EXPORTER_SCRAPE"
DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # thousands of topics x groups stay far below this
_ROW_TABLES = (CONSUMER_QUEUE, TOPIC_QUEUE, BROKER, CONSUMER_STATUS, CONSUMER_CLIENT)


class ScrapeError(Exception):
    """The exporter could not be read; the message is meant for an operator."""


async def scrape(url: str, *, timeout: float, session: aiohttp.ClientSession, max_bytes: int) -> str:
    """The text of `url`; ScrapeError with the reason when there is none."""
    try:
        async with session.get(
            url,
            timeout=aiohttp.ClientTimeout(total=timeout),
            headers={"Accept": "text/plain"},
            allow_redirects=False,
        ) as resp:
            if resp.status != 200:
                raise ScrapeError(
                    f"rocketmq-exporter at {url} answered HTTP {resp.status} {resp.reason or ''}".rstrip()
                    + " (expected 200 and its metrics page; is the path right? the default is /metrics on port 5557)"
                )
            if resp.content_length is not None and resp.content_length > max_bytes:
                raise ScrapeError(
                    f"{url} announces {resp.content_length} bytes, more than the {max_bytes} allowed"
                )
            body = bytearray()
            async for chunk in resp.content.iter_chunked(1 << 16):
                body += chunk
                if len(body) > max_bytes:
                    raise ScrapeError(f"{url} sent more than the {max_bytes} bytes allowed")
            return body.decode(resp.charset or "utf-8", errors="replace")
    except TimeoutError:
        raise ScrapeError(f"rocketmq-exporter at {url} did not answer within {timeout:g} s") from None
    except aiohttp.InvalidURL:
        raise ScrapeError(f"{url!r} is not a URL rocketwatch can fetch") from None
    except aiohttp.ClientConnectorError as exc:
        raise ScrapeError(f"cannot connect to rocketmq-exporter at {url}: {_connect_reason(exc)}") from None
    except aiohttp.ClientError as exc:
        raise ScrapeError(f"reading {url} failed: {type(exc).__name__}: {exc}") from None


def _connect_reason(exc: aiohttp.ClientConnectorError) -> str:
    """The OS's words ("Connection refused"), not asyncio's "Connect call failed ('10.0.0.5', 5557)"."""
    os_error = exc.os_error
    if isinstance(os_error, socket.gaierror):
        return os_error.strerror or str(os_error)
    if isinstance(os_error, ssl.SSLError):  # its errno is OpenSSL's, not the OS's
        return str(os_error)
    if os_error.errno and os_error.errno > 0:
        return os.strerror(os_error.errno)
    return str(exc)


async def collect_exporter(
    url: str,
    cluster: str,
    now: datetime,
    *,
    timeout: float,
    session: aiohttp.ClientSession | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> CollectResult:
    """Scrape `url` once into rows per table plus one collector_health row; never raises for exporter trouble."""
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in _ROW_TABLES}
    error: str | None = None
    start = time.perf_counter()
    latency_ms = 0.0
    try:
        if session is None:
            async with aiohttp.ClientSession() as own:
                text = await scrape(url, timeout=timeout, session=own, max_bytes=max_bytes)
        else:
            text = await scrape(url, timeout=timeout, session=session, max_bytes=max_bytes)
        latency_ms = (time.perf_counter() - start) * 1000.0
        # A big page takes a while to parse: off the event loop, so other clusters' calls go on.
        rows = await asyncio.to_thread(exporter_rows, text, cluster, now)
    except ScrapeError as exc:
        error = str(exc)
    except ExpositionError as exc:
        error = f"{url}: {exc}"
    except Exception as exc:  # a bug must cost this scrape, not the daemon
        log.exception("cluster %s: scraping rocketmq-exporter %s failed unexpectedly", cluster, url)
        error = f"internal error reading {url}: {exc!r}"
    if not latency_ms:
        latency_ms = (time.perf_counter() - start) * 1000.0
    if error is not None:
        log.warning("cluster %s: %s", cluster, error)
    health = {
        "ts": now,
        "cluster": cluster,
        "target": url,
        "call": SCRAPE_CALL,
        "ok": error is None,
        "error": error,
        "latency_ms": latency_ms,
    }
    return _result(url, cluster, {**rows, COLLECTOR_HEALTH: with_target_figures([health])}, error)


def _result(
    url: str, cluster: str, rows: dict[str, list[dict[str, Any]]], error: str | None
) -> CollectResult:
    groups = {r["group"] for r in rows[CONSUMER_QUEUE]}
    online = {r["group"] for r in rows[CONSUMER_CLIENT]}
    if error is not None:
        summary = f"{cluster}: exporter scrape failed, nothing collected: {error}"
    else:
        counts = ", ".join(f"{len(rows[t])} {t}" for t in _ROW_TABLES)
        summary = (
            f"{cluster}: exporter {url}: {len(rows[BROKER])} master(s), {len(groups)} group(s) "
            f"({len(online)} with clients online), {len(rows[CONSUMER_CLIENT])} client(s); {counts} row(s)"
        )
    return CollectResult(
        rows=rows,
        summary=summary,
        masters=len(rows[BROKER]),
        groups=len(groups),
        online_groups=len(online),
        clients=len(rows[CONSUMER_CLIENT]),
        calls=1,
        failed_calls=0 if error is None else 1,
    )
