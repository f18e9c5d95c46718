"""The status page says what each group is judged on, from a real collection of a 5.3.3 simulator (no Spark)."""

from __future__ import annotations

import asyncio
import html
from pathlib import Path

import aiohttp
import pytest

from config.loader import load_config
from daemon.app.daemon import Daemon
from daemon.app.http_view import HttpView
from daemon.http.server import start_http
from daemon.simulator import SimulatorThread
from tests.helpers.status_page_daemon import text

pytestmark = pytest.mark.timeout(120)


def _page(daemon: Daemon) -> str:
    async def run() -> str:
        runner = await start_http(HttpView(daemon), "127.0.0.1:0")
        host, port = runner.addresses[0][:2]
        try:
            async with aiohttp.ClientSession() as http, http.get(f"http://{host}:{port}/") as r:
                assert r.status == 200
                return await r.text()
        finally:
            await runner.cleanup()

    return asyncio.run(run())


def _section(raw: str) -> dict[str, str]:
    """The judged section's rows as a reader sees them, by group."""
    section = raw.split('id="judged"', 1)[1]
    return {text(row).split()[1]: text(row) for row in section.split("<tr>")[2:]}


def test_the_page_says_which_group_is_judged_on_its_pop_table_and_which_on_process_queues(tmp_path: Path) -> None:
    with SimulatorThread("pop-stuck") as sim:
        config = tmp_path / "rocketwatch.yaml"
        config.write_text(f'clusters: [{{name: DefaultCluster, namesrv: ["{sim.namesrv_addr}"], '
                          f"native_metrics: {{port: {sim.metrics_port}}}}}]\nstate_dir: {tmp_path / 'state'}\n"
                          "http: {listen: '127.0.0.1:0'}\n")
        daemon = Daemon(load_config(config), config)
        before = _page(daemon)
        asyncio.run(daemon.collect_once(daemon.config.clusters[0]))
        raw = _page(daemon)
    assert "No consumer group collected yet" in text(before)
    assert "<script" not in raw.split('id="judged"', 1)[1]
    rows = _section(raw)
    pop, mail = rows["popGroup"], rows["mailGroup"]
    # The connection list says CONSUME_PASSIVELY for both; only the running info tells pop mode apart.
    assert pop.startswith("DefaultCluster popGroup pop") and "mqPopTable" in pop and "PopConsumerStuck" in pop
    assert mail.startswith("DefaultCluster mailGroup ProcessQueue") and "PopConsumerStuck" not in mail
    assert "StuckMessage" in mail and "ProcessQueueSpanTooLong" in mail
    assert html.escape("popThresholdForQueue") in raw
