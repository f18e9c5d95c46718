"""The daemon's HTTP endpoints, served by the real aiohttp app on a loopback port."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from config.loader import load_config
from daemon.app.daemon import Daemon
from daemon.app.http_view import HttpView
from daemon.http.server import readiness, start_http
from tests.helpers.figure_rules import FIGURE_RULES
from tests.helpers.status_page_daemon import RULE  # one threshold rule on process_queue

pytestmark = pytest.mark.timeout(60)

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
        runner = await start_http(HttpView(daemon), "127.0.0.1:0")
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
                    # No incident yet: the cluster's incident counts are there, at zero.
                    assert 'rocketwatch_incidents{cluster="c",state="open"} 0.0' in text
                async with http.get(f"{base}/api/alerts") as r:
                    assert await r.json() == {"alerts": [], "incidents": []}
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


def _bytes_on_disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _store_bytes(exposition: str) -> float:
    (line,) = [x for x in exposition.splitlines() if x.startswith("rocketwatch_store_bytes ")]
    return float(line.split()[1])


def test_store_bytes_is_the_stores_size_from_the_first_scrape(tmp_path: Path):
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(f'clusters: [{{name: c, namesrv: ["127.0.0.1:9876"]}}]\nstate_dir: {tmp_path / "state"}\n')
    daemon = Daemon(load_config(config), config)
    daemon._open_state()
    now = datetime.now(UTC)

    def cycle(at: datetime) -> None:
        rows = [{"ts": at, "cluster": "c", "target": f"10.0.0.{i}:10911", "call": "GET_CONSUME_STATS",
                 "ok": True, "error": None, "latency_ms": 2.5} for i in range(50)]
        daemon.store.append_all({"collector_health": rows}, at)

    cycle(now - timedelta(minutes=5))  # a store left by the daemon's previous run

    async def scenario() -> None:
        runner = await start_http(HttpView(daemon), "127.0.0.1:0")
        host, port = runner.addresses[0][:2]
        try:
            async with aiohttp.ClientSession() as http:
                # No maintenance has run: the first scrape already tells the store's size.
                async with http.get(f"http://{host}:{port}/metrics") as r:
                    first = _store_bytes(await r.text())
                assert first == _bytes_on_disk(daemon.config.store) > 0
                cycle(now)  # the store grows between hourly maintenance runs, and the metric with it
                async with http.get(f"http://{host}:{port}/metrics") as r:
                    second = _store_bytes(await r.text())
                assert second == _bytes_on_disk(daemon.config.store) > first
        finally:
            await runner.cleanup()

    try:
        asyncio.run(scenario())
    finally:
        daemon.db.close()




def test_status_page_states_figures_as_the_rule_defines_them(tmp_path: Path):
    import html

    from rules.findings import Finding, RuleTiming

    rules = tmp_path / "rules.yaml"
    rules.write_text(FIGURE_RULES)
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(
        f'clusters: [{{name: prod, namesrv: ["127.0.0.1:9876"]}}]\nstate_dir: {tmp_path / "state"}\n'
        f"rules: [{rules}]\n"
        # Grouped as before incidents: the page keeps showing groups by these labels.
        "notify: {group_by: [alertname, cluster, group]}\n"
    )
    daemon = Daemon(load_config(config), config)
    daemon._open_state()
    failing = Finding("TargetFailing", {"cluster": "prod", "target": "127.0.0.1:10911", "call": "QUERY_CONSUME_TIME_SPAN"},
                      "critical", 1.38, -1.0, {"summary": "QUERY_CONSUME_TIME_SPAN to 127.0.0.1:10911 fails"})
    slow = Finding("SlowPuts", {"cluster": "prod", "broker": "broker-a"}, "warning", 250.0, 100.0,
                   {"summary": "broker-a puts slowly"})
    degraded = Finding("TargetDegraded", {"cluster": "prod", "target": "127.0.0.1:10921", "call": "GET_CONSUME_STATS"},
                       "warning", 2.5, 0.0, {"summary": "GET_CONSUME_STATS to 127.0.0.1:10921 fails"})
    daemon.tracker.update({r: RuleTiming(r) for r in ("TargetFailing", "TargetDegraded", "SlowPuts")},
                          [failing, degraded, slow], datetime.now(UTC))

    async def scenario() -> None:
        runner = await start_http(HttpView(daemon), "127.0.0.1:0")
        host, port = runner.addresses[0][:2]
        try:
            async with aiohttp.ClientSession() as http, http.get(f"http://{host}:{port}/") as r:
                page = html.unescape(await r.text())
        finally:
            await runner.cleanup()
        # Neither alert has a consumer group: the label is absent, never shown empty.
        assert 'group=""' not in page
        assert '{alertname="TargetFailing",cluster="prod"}' in page
        assert "incident" not in page.split('id="alerts"')[1].split('id="silences"')[0]
        # The failing call's value is how long it took to fail; -1 is no threshold to read it against.
        assert "1.38 ms" in page and "fires while not ok" in page
        assert "vs -1" not in page and "1.38 ms vs" not in page
        # A level its `where` already demands the value be past is no threshold either.
        assert "2.5 ms" in page and "fires while not ok and latency_ms > 0" in page and "2.5 vs" not in page
        assert "250 vs 100 ms" in page

    try:
        asyncio.run(scenario())
    finally:
        daemon.db.close()
