"""collect_sources: a cluster configured with an exporter, a name server, or both, collects from each."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from config.models import ClusterConfig, CollectConfig
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.sources import collect_sources
from daemon.simulator import start_simulator
from tests.daemon.collectors.test_exporter_scrape import exporter, serve_page

pytestmark = pytest.mark.timeout(60)
NOW = datetime(2026, 11, 22, 0, 0, 15, tzinfo=UTC)


def test_exporter_only_and_both_sources_merge_their_rows():
    async def scenario() -> None:
        client = RemotingClient()
        admin = AdminClient(client)
        sim = await start_simulator("healthy", host="127.0.0.1", namesrv_port=0)
        try:
            async with exporter(serve_page) as url:
                only = ClusterConfig(name="DefaultCluster", exporter={"url": url})
                result = await collect_sources(admin, only, CollectConfig(), NOW)
                assert "process_queue" not in result.rows  # the exporter knows no ProcessQueue
                assert result.rows["consumer_queue"] and all(r["queue_id"] == -1 for r in result.rows["consumer_queue"])
                assert [h["call"] for h in result.rows["collector_health"]] == ["EXPORTER_SCRAPE"]

                both = ClusterConfig(name="DefaultCluster", namesrv=[sim.namesrv_addr], exporter={"url": url})
                merged = await collect_sources(admin, both, CollectConfig(), NOW)
                calls = {h["call"] for h in merged.rows["collector_health"]}
                assert "EXPORTER_SCRAPE" in calls and "GET_CONSUME_STATS" in calls
                assert merged.rows["process_queue"], "the name server side still fills ProcessQueues"
        finally:
            await client.close()
            await sim.stop()

    asyncio.run(scenario())
