"""A Daemon with its state open and alerts in it, no scheduler and no Spark, and its HTTP app served on
loopback for one scenario: what the status page, incident page and judged-section tests read."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

from config.loader import load_config
from daemon.app.cycles import CycleRecord
from daemon.app.daemon import Daemon
from daemon.app.http_view import HttpView
from daemon.http.server import start_http
from rules.findings import Finding, RuleTiming

RULE = """\
groups:
  - name: mine
    rules:
      - alert: BigCache
        kind: threshold
        table: process_queue
        value: cached_msg_count
        above: {warning: 500}
        summary: "{group} caches {value}"
        diagnosis: "slow consumer"
        next_steps: "look at consumeRT"
"""

Scenario = Callable[[aiohttp.ClientSession, str, Daemon], Awaitable[None]]


def make_daemon(tmp_path: Path, http_extra: str = "") -> Daemon:
    """A daemon with its state open and one firing alert (in its incident), one pending; no scheduler, no Spark."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULE)
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(
        f'clusters: [{{name: prod, namesrv: ["127.0.0.1:9876"]}}]\nstate_dir: {tmp_path / "state"}\n'
        f"rules: [{rules}]\nhttp: {{listen: '127.0.0.1:0'{http_extra}}}\n"
    )
    daemon = Daemon(load_config(config), config)
    daemon._open_state()
    now = datetime.now(UTC)
    firing = Finding("BigCache", {"cluster": "prod", "group": "orders<script>"}, "critical", 9100.0, 5000.0,
                     {"summary": "orders caches 9100", "diagnosis": "slow consumer", "next_steps": "look at consumeRT"})
    pending = Finding("SlowPull", {"cluster": "prod", "group": "billing"}, "warning", 3.0, 2.0,
                      {"summary": "billing pulls slowly"})
    at = now - timedelta(minutes=5)
    events = daemon.tracker.update({"BigCache": RuleTiming("BigCache"),
                                    "SlowPull": RuleTiming("SlowPull", for_=timedelta(hours=1))}, [firing, pending], at)
    # As each evaluation does: the incident book files the firing alert into its incident (the pending one
    # waits), then the dispatcher reads it.
    asyncio.run(daemon.incidents.advance(events, daemon.tracker.active_alerts(), at))
    asyncio.run(daemon.dispatcher.dispatch(events, daemon.tracker.active_alerts(), at))
    daemon.cycles.appendleft(CycleRecord("collect", "prod", now, 0.42, 1234, 2))
    daemon.cycles.appendleft(CycleRecord("evaluate", "rules", now, 1.5, 2, 0))
    daemon.collector_health["prod"] = [
        {"target": "127.0.0.1:10911", "call": "GET_BROKER_RUNTIME_INFO", "ok": True, "error": None, "latency_ms": 3.0},
        {"target": "127.0.0.1:10921", "call": "GET_CONSUME_STATS", "ok": False,
         "error": "connection refused", "latency_ms": 1.0},
    ]
    return daemon


def serve(daemon: Daemon, scenario: Scenario) -> None:
    """Run `scenario` against the daemon's app on 127.0.0.1, then close everything."""

    async def run() -> None:
        runner = await start_http(HttpView(daemon), "127.0.0.1:0")
        host, port = runner.addresses[0][:2]
        try:
            async with aiohttp.ClientSession() as http:
                await scenario(http, f"http://{host}:{port}", daemon)
        finally:
            await runner.cleanup()

    try:
        asyncio.run(run())
    finally:
        daemon.db.close()


def text(markup: str) -> str:
    """The words of some markup as a reader sees them: tags dropped, entities decoded, spaces collapsed."""
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())
    return re.sub(r" ([:,])", r"\1", words)  # "<b>X</b>: y" reads "X: y"


def incident_block(raw: str, incident_id: str) -> str:
    """The markup of one incident's block on the page."""
    return raw.split(f'data-incident="{html.escape(incident_id)}">')[1].split("</table></div>")[0]
