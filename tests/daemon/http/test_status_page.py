"""The status page and its silence writes, served by the real aiohttp app on a loopback port (incidents
on the page: test_status_page_incidents.py)."""

from __future__ import annotations

import html
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from daemon.app.daemon import Daemon
from tests.helpers.chromium import Chromium, chromium_path
from tests.helpers.status_page_daemon import incident_block, make_daemon, serve, text

pytestmark = pytest.mark.timeout(60)


def silence_form(**overrides: str) -> dict[str, str]:
    """A valid form post of the page's silence form."""
    return {"matchers": 'group="billing"\ncluster="prod"', "duration": "1h", "author": "ana",
            "comment": "billing deploy", "token": ""} | overrides


def test_page_shows_alerts_grouped_silences_cycles_and_health(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        now = datetime.now(UTC)
        daemon.silences.add(['group="orders<script>"'], now, now + timedelta(hours=2), "bo", "known issue", now)
        async with http.get(f"{base}/") as r:
            assert r.status == 200 and r.content_type == "text/html"
            assert r.headers["X-Frame-Options"] == "DENY"
            raw = await r.text()
        assert "<script>" not in raw  # labels are escaped, never markup
        page = html.unescape(raw)
        assert "Alerts (1 firing, 1 pending), 1 open incident" in page
        # Grouped as notifications are routed (by incident): the firing alert's incident first, led by it;
        # the pending alert is in none yet and shows where it happens.
        (big,) = [a for a in daemon.tracker.active_alerts() if a.rule == "BigCache"]
        incident = daemon.incidents.incident_of(big.fingerprint)
        assert incident.id.startswith("prod/orders<script>@")
        block = text(incident_block(raw, incident.id))
        assert block.startswith(f"incident {incident.id} · open since 5m ago · 1 of 1 alert firing")
        assert ('first alert BigCache cluster="prod" group="orders<script>" · since 5m ago · '
                "9,100 vs 5,000 messages · orders caches 9100") in block
        assert f'data-fingerprint="{big.fingerprint}"' in incident_block(raw, incident.id) and "SlowPull" not in block
        assert page.index(f"incident {incident.id}") < page.index(
            '{cluster="prod",group="billing"}</b> <span class="muted">· not in an incident yet')
        assert "#c62828" in page and "critical" in page  # severity colour
        assert "9,100 vs 5,000" in page and "5m ago" in page
        assert "slow consumer" in page and "look at consumeRT" in page and "billing pulls slowly" in page
        assert "firing <span class='muted'>(muted)</span>" in page  # the silence mutes BigCache
        assert "known issue" in page and "expire</button>" in page
        assert "0.42s" in page and "1234" in page and "GET_CONSUME_STATS: connection refused" in page
        assert "127.0.0.1:10911" in page and "1 failed" in page
        # The silence link pre-fills the form with the alert's matchers.
        async with http.get(f"{base}/", params=[("m", 'alertname="SlowPull"'), ("m", 'group="billing"')]) as r:
            assert 'alertname="SlowPull"\ngroup="billing"</textarea>' in html.unescape(await r.text())

    serve(make_daemon(tmp_path), scenario)


def test_form_and_api_create_and_expire_silences(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        async with http.post(f"{base}/silences", data=silence_form(), headers={"Origin": base},
                             allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/#silences"
        [silence] = daemon.silences.all()
        assert [str(m) for m in silence.matchers] == ['group="billing"', 'cluster="prod"']
        assert silence.created_by == "ana" and timedelta(minutes=59) < silence.ends_at - silence.starts_at
        async with http.get(f"{base}/") as r:
            assert "billing deploy" in await r.text()
        async with http.post(f"{base}/silences/{silence.id}/expire", data={"token": ""},
                             headers={"Referer": f"{base}/"}, allow_redirects=False) as r:
            assert r.status == 303
        assert daemon.silences.all()[0].state(datetime.now(UTC)) == "expired"

        async with http.post(f"{base}/api/silences", json={"matchers": ['cluster="prod"'], "duration": "30m",
                                                           "created_by": "cli", "comment": "maintenance"}) as r:
            assert r.status == 201
            created = await r.json()
        assert created["state"] == "active" and created["matchers"] == ['cluster="prod"']
        async with http.delete(f"{base}/api/silences/{created['id']}") as r:
            assert r.status == 200 and (await r.json())["state"] == "expired"
        async with http.delete(f"{base}/api/silences/nope") as r:
            assert r.status == 404 and "nope" in (await r.json())["error"]

    serve(make_daemon(tmp_path), scenario)


BAD_FORMS = [
    ({"matchers": "group~orders"}, 400, "cannot read matcher"),
    ({"matchers": ""}, 400, "at least one matcher"),
    ({"duration": "-1h"}, 400, "negative"),
    ({"duration": "0s"}, 400, "zero"),
    ({"duration": "soon"}, 400, "expected a duration"),
    ({"author": "  "}, 400, "author and comment"),
    ({"comment": ""}, 400, "author and comment"),
]


@pytest.mark.parametrize(("override", "status", "message"), BAD_FORMS)
def test_bad_form_input_is_a_4xx_that_changes_nothing(tmp_path: Path, override: dict, status: int,
                                                       message: str) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        async with http.post(f"{base}/silences", data=silence_form(**override), headers={"Origin": base}) as r:
            assert r.status == status and message in await r.text()
        assert daemon.silences.all() == []

    serve(make_daemon(tmp_path), scenario)


def test_bad_api_input_is_a_4xx_that_changes_nothing(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        good = {"matchers": ['group="orders"'], "duration": "1h", "created_by": "ana", "comment": "deploy"}
        cases = [
            (good | {"matchers": ["group~orders"]}, 400, "cannot read matcher"),
            (good | {"matchers": ['group=~"(unclosed"']}, 400, "invalid regex"),
            (good | {"matchers": 'group="orders"'}, 400, "list of strings"),
            (good | {"duration": "-5m"}, 400, "negative"),
            (good | {"duration": "0s"}, 400, "zero"),
            (good | {"duration": 3600}, 400, "must be a string"),
            (good | {"created_by": ""}, 400, "author and comment"),
            ([1, 2], 400, "JSON object"),
        ]
        for body, status, message in cases:
            async with http.post(f"{base}/api/silences", json=body) as r:
                assert (r.status, message in (await r.json())["error"]) == (status, True), body
        async with http.post(f"{base}/api/silences", data="{not json", headers={"Content-Type": "application/json"}) as r:
            assert r.status == 400 and "not JSON" in (await r.json())["error"]
        # A browser form cannot post JSON cross-site; a text/plain "JSON" is refused.
        async with http.post(f"{base}/api/silences", data='{"matchers": []}', headers={"Content-Type": "text/plain"}) as r:
            assert r.status == 415
        assert daemon.silences.all() == []

    serve(make_daemon(tmp_path), scenario)


def test_cross_site_and_unproven_writes_are_refused(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        now = datetime.now(UTC)
        kept = daemon.silences.add(['group="orders"'], now, now + timedelta(hours=1), "bo", "keep", now)
        forged = [
            ("POST", "/silences", {"Origin": "http://evil.example"}, silence_form(), 403, "cross-site"),
            ("POST", "/silences", {"Referer": "http://evil.example/x"}, silence_form(), 403, "cross-site"),
            ("POST", "/silences", {"Origin": "null"}, silence_form(), 403, "cross-site"),
            ("POST", "/silences", {}, silence_form(), 403, "without Origin or Referer"),
            ("POST", f"/silences/{kept.id}/expire", {"Origin": "http://evil.example"}, {"token": ""}, 403, "cross-site"),
            ("POST", f"/silences/{kept.id}/expire", {}, {"token": ""}, 403, "without Origin or Referer"),
            # DNS rebinding: the attacker's name resolves to us, its page is then "same-origin".
            ("POST", "/silences", {"Host": "evil.example:80", "Origin": "http://evil.example:80"}, silence_form(),
             403, "use the daemon's own address"),
        ]
        for method, path, headers, data, status, message in forged:
            async with http.request(method, f"{base}{path}", data=data, headers=headers) as r:
                assert r.status == status, (path, headers)
                assert message in html.unescape(await r.text()), (path, headers)
        async with http.delete(f"{base}/api/silences/{kept.id}", headers={"Origin": "http://evil.example"}) as r:
            assert r.status == 403
        assert [s.id for s in daemon.silences.all()] == [kept.id]
        assert daemon.silences.all()[0].state(datetime.now(UTC)) == "active"

    serve(make_daemon(tmp_path), scenario)


def test_with_a_token_every_write_needs_it_and_the_page_never_shows_it(tmp_path: Path) -> None:
    secret = "s3cr3t-t0ken"

    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        async with http.get(f"{base}/") as r:
            page = await r.text()
        assert secret not in page and 'type="password" name="token"' in page
        refused = [
            ("/silences", silence_form(), {"Origin": base}),
            ("/silences", silence_form(token="wrong"), {"Origin": base}),
        ]
        for path, data, headers in refused:
            async with http.post(f"{base}{path}", data=data, headers=headers) as r:
                text = await r.text()
                assert r.status == 401 and "http.token" in text and secret not in text
        body = {"matchers": ['group="orders"'], "duration": "1h", "created_by": "ana", "comment": "deploy"}
        async with http.post(f"{base}/api/silences", json=body) as r:
            assert r.status == 401
        async with http.post(f"{base}/api/silences", json=body, headers={"Authorization": "Bearer nope"}) as r:
            assert r.status == 401
        assert daemon.silences.all() == []
        # The token proves the form even without Origin/Referer (e.g. a privacy proxy strips them).
        async with http.post(f"{base}/silences", data=silence_form(token=secret), allow_redirects=False) as r:
            assert r.status == 303
        async with http.post(f"{base}/api/silences", json=body, headers={"Authorization": f"Bearer {secret}"}) as r:
            assert r.status == 201
            created = await r.json()
        # ... but never a cross-site one, token or not.
        async with http.post(f"{base}/silences", data=silence_form(token=secret),
                             headers={"Origin": "http://evil.example"}) as r:
            assert r.status == 403
        async with http.delete(f"{base}/api/silences/{created['id']}") as r:
            assert r.status == 401
        async with http.delete(f"{base}/api/silences/{created['id']}",
                               headers={"Authorization": f"Bearer {secret}"}) as r:
            assert r.status == 200
        assert len(daemon.silences.all()) == 2
        assert secret not in repr(daemon.config)

    serve(make_daemon(tmp_path, f", token: {secret}"), scenario)


@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed; make test installs it (apt-get install -y chromium)")
def test_in_chromium_the_page_loads_clean_and_its_form_silences_an_alert(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        async with Chromium(tmp_path) as page:
            await page.navigate(f"{base}/")
            text = await page.evaluate("document.body.innerText")
            assert "Alerts (1 firing, 1 pending)" in text and "BigCache" in text and "SlowPull" in text
            assert "connection refused" in text and "No silences." in text
            # The SlowPull row's link fills the form with that alert's labels; the operator adds the rest.
            mark = page.mark()
            await page.evaluate(
                "document.querySelector('tr.pending a[href*=\"silence-form\"]').click()")
            await page.wait_for("Page.loadEventFired", mark)
            mark = page.mark()
            await page.evaluate("""(() => {
                const form = document.getElementById('silence-form');
                form.duration.value = '2h';
                form.author.value = 'ana';
                form.comment.value = 'billing is being redeployed';
                form.querySelector('button').click();
            })()""")
            await page.wait_for("Page.loadEventFired", mark)
            [silence] = daemon.silences.all()
            assert sorted(str(m) for m in silence.matchers) == [
                'alertname="SlowPull"', 'cluster="prod"', 'group="billing"']
            assert silence.created_by == "ana" and silence.ends_at - silence.starts_at > timedelta(minutes=119)
            assert await page.evaluate("location.pathname + location.hash") == "/#silences"
            text = await page.evaluate("document.body.innerText")
            assert "billing is being redeployed" in text
            assert await page.evaluate("document.querySelector('tr.pending').innerText.includes('(muted)')")
            shot = await page.screenshot(tmp_path / "status-page.png")
            # The expire button ends it.
            mark = page.mark()
            await page.evaluate(f"document.querySelector('tr[data-silence=\"{silence.id}\"] button').click()")
            await page.wait_for("Page.loadEventFired", mark)
            assert daemon.silences.all()[0].state(datetime.now(UTC)) == "expired"
            assert page.console_errors() == []
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

    serve(make_daemon(tmp_path), scenario)


def test_reload_is_a_write_too(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        before = daemon.rulebook
        async with http.post(f"{base}/-/reload", headers={"Origin": "http://evil.example"}) as r:
            assert r.status == 403 and "cross-site" in (await r.json())["message"]
        assert daemon.rulebook is before
        async with http.post(f"{base}/-/reload") as r:
            assert r.status == 200 and (await r.json())["reloaded"] is True

    serve(make_daemon(tmp_path), scenario)


def test_alerts_carry_a_chart_of_their_value_and_who_acknowledged_them(tmp_path: Path) -> None:
    async def scenario(http: aiohttp.ClientSession, base: str, daemon: Daemon) -> None:
        now = datetime.now(UTC)
        (big,) = [a for a in daemon.tracker.active_alerts() if a.rule == "BigCache"]
        for minutes, value in ((4, 5200.0), (3, 6100.0), (2, 7400.0), (1, 9100.0)):
            big.value = value
            daemon.value_history.record([big], now - timedelta(minutes=minutes))
        key = f'{{incident="{daemon.incidents.incident_of(big.fingerprint).id}"}}'  # the notification group's key
        daemon.group_actions.record(key, "ack", "ana", ['alertname="BigCache"'], now)
        async with http.get(f"{base}/") as r:
            raw = await r.text()
        page = html.unescape(raw)
        (chart,) = [part for part in raw.split("<svg")[1:]]
        assert 'class="spark"' in chart and "5200 at" in html.unescape(chart) and "9100 at" in html.unescape(chart)
        assert 'stroke-dasharray' in chart  # the threshold line
        assert chart.count("<polyline") == 1
        assert "Acknowledged by ana" in page
        # On the head of BigCache's incident block, not on SlowPull's group.
        block = text(incident_block(raw, daemon.incidents.incident_of(big.fingerprint).id))
        assert "1 of 1 alert firing · silence the incident… Acknowledged by ana" in block
        assert block.index("Acknowledged by ana") < block.index("first alert BigCache")
        assert page.index("Acknowledged by ana") < page.index('{cluster="prod",group="billing"}')

    serve(make_daemon(tmp_path), scenario)
