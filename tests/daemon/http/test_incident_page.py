"""Every page links its incident on the status page (issue 44): the link a notification carries opens
that incident, in the app and in headless Chromium; a resolved incident stays there for a day; one the
incident book let go says so."""

from __future__ import annotations

import asyncio
import html
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest

from daemon.app.daemon import Daemon
from daemon.notify import render
from daemon.notify.model import AlertSnapshot, IncidentSnapshot, Notification
from rules.findings import RuleTiming
from tests.helpers.chromium import Chromium, chromium_path
from tests.helpers.status_page_daemon import make_daemon, serve

pytestmark = pytest.mark.timeout(60)


def first_page(daemon: Daemon) -> Notification:
    """The first page of the daemon's one incident, as the dispatcher builds it for a receiver."""
    (incident,) = daemon.incidents.all()
    alerts = [AlertSnapshot.of(a) for a in daemon.tracker.active_alerts() if a.state == "firing"]
    return Notification(group_key=f'{{incident="{incident.id}"}}', group_labels={"incident": incident.id},
                        status="firing", alerts=alerts, changes=[], is_update=False, created_at=incident.opened_at,
                        incident=IncidentSnapshot.of(incident))


def slack_link(n: Notification, base: str) -> str:
    """The incident link in the Slack message's lead, as a reader taps it."""
    lead = render.slack_message(n, external_url=base)["blocks"][1]["text"]["text"]
    (url,) = re.findall(r"<(http[^|>]+)\|Incident page>", lead)
    return url


def test_the_pages_link_opens_the_incident_and_a_gone_one_says_so(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        n = first_page(daemon)
        url = slack_link(n, base)
        assert url == f"{base}/incidents/{quote(n.incident.id, safe='')}"
        async with http.get(url) as response:
            page = html.unescape(await response.text())
        assert response.status == 200
        assert f"incident {n.incident.id}" in page and "BigCache" in page and "orders caches 9100" in page
        assert "silence the incident" in page  # the prefilled silence form, one click away
        async with http.get(f"{base}/incidents/prod%2Fnobody%402026-01-01T00%3A00%3A00Z") as response:
            gone = html.unescape(await response.text())
        assert response.status == 404
        assert "prod/nobody@2026-01-01T00:00:00Z" in gone and "keeps an incident 1 day after it resolves" in gone

    serve(make_daemon(tmp_path), scenario)


def test_a_resolved_incident_keeps_its_page_past_the_status_pages_hour(tmp_path: Path) -> None:
    daemon = make_daemon(tmp_path)
    n = first_page(daemon)
    # It resolves (an hour and more ago: the status page's list is the last hour); its own page still shows it.
    events = daemon.tracker.update({"BigCache": RuleTiming("BigCache"), "SlowPull": RuleTiming("SlowPull")}, [],
                                   n.created_at + timedelta(minutes=1))
    later = n.created_at + timedelta(minutes=1)
    asyncio.run(daemon.incidents.advance(events, daemon.tracker.active_alerts(), later))
    asyncio.run(daemon.dispatcher.dispatch(events, daemon.tracker.active_alerts(), later))
    assert daemon.incidents.get(n.incident.id).resolved_at is not None

    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        async with http.get(slack_link(n, base)) as response:
            page = await response.text()
        assert response.status == 200 and "resolved" in page and "BigCache" in page

    serve(daemon, scenario)


@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed; make test installs it (apt-get install -y chromium)")
def test_in_chromium_the_link_of_a_page_opens_its_incident(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        n = first_page(daemon)
        async with Chromium(tmp_path) as browser:
            await browser.navigate(slack_link(n, base))
            text = await browser.evaluate("document.body.innerText")
            assert f"incident {n.incident.id}" in text and "BigCache" in text
            assert await browser.evaluate("document.title") == f"incident {n.incident.id}"
            assert browser.console_errors() == []

    serve(make_daemon(tmp_path), scenario)
