"""One cluster's collection cycle over every source its config names: remoting, exporter, native metrics, logs."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from config.models import ClusterConfig, CollectConfig
from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.exporter import collect_exporter
from daemon.collectors.logs import LogsCollector
from daemon.collectors.native_metrics import collect_native
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.topic_list import TOPIC_LISTS


async def collect_sources(
    admin: AdminClient, cluster: ClusterConfig, collect: CollectConfig, now: datetime,
    logs: LogsCollector | None = None,
) -> CollectResult:
    """Rows of every configured source of `cluster`, merged per table; one summary line per source."""
    results: list[CollectResult] = []
    if cluster.namesrv:
        results.append(
            await collect_cluster(
                admin, cluster.name, cluster.namesrv, now,
                call_timeout=collect.timeout.total_seconds(), concurrency=collect.concurrency,
                per_broker=collect.per_broker,
                selection=cluster.selection(), topic_lists=TOPIC_LISTS,
            )
        )
    if cluster.exporter is not None:
        results.append(
            await collect_exporter(
                cluster.exporter.url, cluster.name, now, timeout=cluster.exporter.timeout.total_seconds()
            )
        )
    if cluster.native_metrics.mode != "off":
        # The broker table of this cycle names the brokers and their versions (5.1+ serve the page).
        brokers = [row for r in results for row in r.rows.get("broker", ())]
        results.append(await collect_native(cluster.name, cluster.native_metrics, brokers, now))
    if logs is not None:
        results.append(await asyncio.to_thread(logs.collect, now))  # file reads off the event loop
    rows: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        for table, table_rows in result.rows.items():
            rows.setdefault(table, []).extend(table_rows)
    return CollectResult(
        rows=rows,
        summary="; ".join(r.summary for r in results),
        calls=sum(r.calls for r in results),
        failed_calls=sum(r.failed_calls for r in results),
    )
