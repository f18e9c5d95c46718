"""The daemon's HTTP endpoints, served by the real aiohttp app on a loopback port."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from config.loader import load_config
from daemon.app import Daemon
from daemon.http.server import readiness, start_http

pytestmark = pytest.mark.timeout(60)

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


def test_readiness_needs_a_recent_completed_cycle():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    interval = timedelta(seconds=30)
    assert readiness(None, interval, now) == (False, "no evaluation cycle has completed yet")
    ok, reason = readiness(now - timedelta(seconds=20), interval, now)
    assert ok and "20s ago" in reason
    ok, reason = readiness(now - timedelta(seconds=200), interval, now)
    assert not ok and "200s ago (limit 90s)" in reason


def test_endpoints_answer_as_documented(tmp_path: Path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULE)
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(
        f'clusters: [{{name: c, namesrv: ["127.0.0.1:9876"]}}]\nstate_dir: {tmp_path / "state"}\n'
        f"rules: [{rules}]\n"
    )
    daemon = Daemon(load_config(config), config)
    daemon._open_state()

    async def scenario() -> None:
        runner = await start_http(daemon, "127.0.0.1:0")
        host, port = runner.addresses[0][:2]
        base = f"http://{host}:{port}"
        try:
            async with aiohttp.ClientSession() as http:
                async with http.get(f"{base}/healthz") as r:
                    assert r.status == 200
                async with http.get(f"{base}/readyz") as r:
                    assert r.status == 503
                    assert (await r.json())["reason"] == "no evaluation cycle has completed yet"
                daemon.last_cycle_at = datetime.now(UTC)
                async with http.get(f"{base}/readyz") as r:
                    assert r.status == 200 and (await r.json())["ready"] is True
                async with http.get(f"{base}/metrics") as r:
                    text = await r.text()
                    assert r.headers["Content-Type"].startswith("text/plain")
                    assert "rocketwatch_rules 1.0" in text and "rocketwatch_outbox_depth 0.0" in text
                async with http.get(f"{base}/api/alerts") as r:
                    assert await r.json() == {"alerts": []}
                now = datetime.now(UTC)
                daemon.silences.add(['group="orders"'], now, now + timedelta(hours=1), "ana", "deploy", now)
                async with http.get(f"{base}/api/silences") as r:
                    [silence] = (await r.json())["silences"]
                    assert silence["matchers"] == ['group="orders"'] and silence["state"] == "active"
                # A broken rule file: the reload is refused with the position, the old rules stay.
                before = daemon.rulebook
                rules.write_text(RULE.replace("cached_msg_count", "cached_msg_cnt"))
                async with http.post(f"{base}/-/reload") as r:
                    body = await r.json()
                    assert r.status == 400 and body["reloaded"] is False
                    assert f"{rules}:7:16:" in body["message"] and "cached_msg_cnt" in body["message"]
                assert daemon.rulebook is before
                rules.write_text(RULE.replace("500", "900"))
                async with http.post(f"{base}/-/reload") as r:
                    assert r.status == 200 and (await r.json())["reloaded"] is True
                assert daemon.rulebook is not before
        finally:
            await runner.cleanup()

    try:
        asyncio.run(scenario())
    finally:
        daemon.db.close()
