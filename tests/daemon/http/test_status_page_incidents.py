"""Incidents on the status page, in /api/alerts and in /metrics: each led by its cause with what it explains
nested under it, the recently resolved after, served by the real aiohttp app on a loopback port."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from config.loader import load_config
from daemon.app.daemon import Daemon
from rules.findings import Finding, RuleTiming
from tests.helpers.status_page_daemon import RULE, incident_block, serve, text

pytestmark = pytest.mark.timeout(60)


LINKED_RULES = RULE + """\
      - alert: BlockedThread
        kind: threshold
        table: process_queue
        value: cached_msg_count
        above: {critical: 0}
        summary: "a consume thread of {group} is blocked"
        diagnosis: "one message holds the thread"
        next_steps: "jstack the client"
        explains:
          - alert: BigCache
            on: [cluster, group]
            why: "A blocked consume thread stops draining its process queues, so cached messages pile up."
"""
TIMINGS = {rule: RuleTiming(rule) for rule in ("BigCache", "BlockedThread", "SlowPull")}


def _big(group: str) -> Finding:
    return Finding("BigCache", {"cluster": "prod", "group": group}, "warning", 9100.0, 5000.0,
                   {"summary": f"{group} caches 9100"})


def make_linked_daemon(tmp_path: Path) -> Daemon:
    """Three incidents of one cluster, as the daemon's cycles make them:

    - prod/orders, open: BigCache fired 10 minutes ago, its cause BlockedThread 6 minutes ago (it leads
      the incident, which keeps its id), and SlowPull fired beside them (the same place, no link);
    - prod/billing, resolved 6 minutes ago (its only alert fired 10 minutes ago);
    - prod/audit, resolved three hours ago: kept by the book for a day, gone from the page.
    """
    rules = tmp_path / "rules.yaml"
    rules.write_text(LINKED_RULES)
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(f'clusters: [{{name: prod, namesrv: ["127.0.0.1:9876"]}}]\nstate_dir: {tmp_path / "state"}\n'
                      f"rules: [{rules}]\nhttp: {{listen: '127.0.0.1:0'}}\n")
    daemon = Daemon(load_config(config), config)
    daemon._open_state()
    now = datetime.now(UTC)
    blocked = Finding("BlockedThread", {"cluster": "prod", "group": "orders"}, "critical", 1.0, 0.0,
                      {"summary": "a consume thread of orders is blocked"})
    slow = Finding("SlowPull", {"cluster": "prod", "group": "orders"}, "warning", 3.0, 2.0, {"summary": "orders pulls slowly"})
    for minutes_ago, findings in ((180, [_big("audit")]), (179, []), (10, [_big("orders"), _big("billing")]),
                                  (6, [_big("orders"), blocked, slow])):
        at = now - timedelta(minutes=minutes_ago)
        events = daemon.tracker.update(TIMINGS, findings, at)
        asyncio.run(daemon.incidents.advance(events, daemon.tracker.active_alerts(), at))
        asyncio.run(daemon.dispatcher.dispatch(events, daemon.tracker.active_alerts(), at))
    return daemon


def _fingerprints(daemon: Daemon) -> dict[str, str]:
    return {f"{a.rule}/{a.labels['group']}": a.fingerprint for a in daemon.tracker.active_alerts()}


def test_an_incident_is_led_by_its_cause_with_what_it_explains_nested(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        fps = _fingerprints(daemon)
        orders = daemon.incidents.incident_of(fps["BlockedThread/orders"])
        assert daemon.incidents.incident_of(fps["BigCache/orders"]) is orders
        async with http.get(f"{base}/") as r:
            raw = await r.text()
        page = text(raw)
        assert "Alerts (3 firing, 0 pending), 1 open incident" in page
        markup = incident_block(raw, orders.id)
        block = text(markup)
        # The id it opened with when BigCache fired first; the cause that came later leads it.
        assert orders.id.startswith("prod/orders@")
        assert block.startswith(f"incident {orders.id} · open since 10m ago · 3 of 3 alerts firing")
        assert ('cause BlockedThread cluster="prod" group="orders" · since 6m ago · 1 vs 0 messages · '
                "a consume thread of orders is blocked") in block
        # Rows: the cause, then what it explains with the link's why, then the alert that is only there.
        rows = [markup.index(f'data-fingerprint="{fps[name]}"')
                for name in ("BlockedThread/orders", "BigCache/orders", "SlowPull/orders")]
        assert rows == sorted(rows) and markup.index('<p class="lead">') < rows[0]
        assert '<tr class="firing consequence" data-fingerprint="{}"'.format(fps["BigCache/orders"]) in markup
        assert ("BigCache cluster=\"prod\" group=\"orders\" ↳ explained by BlockedThread: A blocked consume thread "
                "stops draining its process queues, so cached messages pile up.") in block
        assert 'SlowPull cluster="prod" group="orders" ↳ same place, no causal link known' in block
        # Recently resolved incidents follow, marked resolved; one resolved hours ago is gone from the page.
        (billing,) = [i for i in daemon.incidents.all() if i.id.startswith("prod/billing@")]
        assert page.index(f"incident {orders.id}") < page.index("Resolved within the last hour") < page.index(
            f"incident {billing.id}")
        resolved = text(incident_block(raw, billing.id))
        assert resolved.startswith(f"incident {billing.id} · resolved 6m ago, after 4m (ended by BigCache) · "
                                   "0 of 1 alert firing")
        assert 'first alert BigCache cluster="prod" group="billing" · since 10m ago, resolved 6m ago' in resolved
        assert f'<div class="group incident closed" data-incident="{billing.id}">' in raw
        assert "prod/audit" not in page and any(i.id.startswith("prod/audit@") for i in daemon.incidents.all())

    serve(make_linked_daemon(tmp_path), scenario)


def test_api_alerts_nests_an_incidents_alerts_under_it(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        fps = _fingerprints(daemon)
        orders = daemon.incidents.incident_of(fps["BlockedThread/orders"])
        async with http.get(f"{base}/api/alerts") as r:
            assert r.status == 200
            body = await r.json()
        # Today's list keeps its shape; each alert says which incident it is in.
        assert sorted((a["rule"], a["state"], a["labels"]["group"]) for a in body["alerts"]) == [
            ("BigCache", "firing", "orders"), ("BlockedThread", "firing", "orders"), ("SlowPull", "firing", "orders")]
        assert {a["incident"] for a in body["alerts"]} == {orders.id}
        assert {a["fingerprint"] for a in body["alerts"]} == set(fps.values())
        first, second = body["incidents"]
        assert {k: first[k] for k in ("id", "state", "resolved_at", "root", "cause_known", "ended_by", "locus")} == {
            "id": orders.id, "state": "open", "resolved_at": None, "root": fps["BlockedThread/orders"],
            "cause_known": True, "ended_by": None, "locus": {"cluster": "prod", "group": "orders"}}
        assert datetime.fromisoformat(first["opened_at"]) == orders.opened_at
        assert [(a["rule"], a["role"], a["cause"]) for a in first["alerts"]] == [
            ("BlockedThread", "root", None),
            ("BigCache", "explained", fps["BlockedThread/orders"]),
            ("SlowPull", "other", None),
        ]
        cause, effect, beside = first["alerts"]
        assert effect["why"].startswith("A blocked consume thread stops draining") and cause["why"] == ""
        assert effect | {"why": ""} == {
            "fingerprint": fps["BigCache/orders"], "rule": "BigCache", "labels": {"cluster": "prod", "group": "orders"},
            "state": "firing", "role": "explained", "cause": fps["BlockedThread/orders"], "why": "",
            "joined_at": effect["joined_at"], "resolved_at": None, "severity": "warning", "value": 9100.0,
            "threshold": 5000.0, "no_data": False, "active_at": effect["active_at"], "fired_at": effect["fired_at"],
            "annotations": {"summary": "orders caches 9100"}}
        assert beside["severity"] == "warning" and beside["annotations"] == {"summary": "orders pulls slowly"}
        # The incident resolved within the hour follows, its alert resolved; the one resolved hours ago is not listed.
        assert second["id"].startswith("prod/billing@") and second["state"] == "resolved"
        (gone,) = second["alerts"]
        assert (gone["rule"], gone["state"], gone["role"], second["ended_by"]) == (
            "BigCache", "resolved", "root", gone["fingerprint"])
        assert gone["resolved_at"] == second["resolved_at"] and "severity" not in gone

    serve(make_linked_daemon(tmp_path), scenario)


def test_the_incidents_gauge_counts_open_and_resolved_incidents(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        async with http.get(f"{base}/metrics") as r:
            exposition = await r.text()
        lines = [line for line in exposition.splitlines() if line.startswith("rocketwatch_incidents{")]
        # Open: prod/orders. Resolved within the day the book keeps them: prod/billing and prod/audit.
        assert sorted(lines) == ['rocketwatch_incidents{cluster="prod",state="open"} 1.0',
                                 'rocketwatch_incidents{cluster="prod",state="resolved"} 2.0']
        # When the last alert resolves, the incident leaves the open count at the next scrape.
        at = datetime.now(UTC)
        events = daemon.tracker.update(TIMINGS, [], at)
        await daemon.incidents.advance(events, daemon.tracker.active_alerts(), at)
        await daemon.dispatcher.dispatch(events, daemon.tracker.active_alerts(), at)
        async with http.get(f"{base}/metrics") as r:
            exposition = await r.text()
        assert 'rocketwatch_incidents{cluster="prod",state="open"} 0.0' in exposition
        assert 'rocketwatch_incidents{cluster="prod",state="resolved"} 3.0' in exposition

    serve(make_linked_daemon(tmp_path), scenario)
