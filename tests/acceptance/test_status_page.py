"""End to end: the daemon's status page in headless Chromium silences a stuck consumer before it pages.

The daemon runs as a real subprocess against the simulator's wire protocol and a local Slack Web API;
Chromium (Debian's `chromium`) loads the page over the DevTools protocol.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon.simulator import SimulatorThread
from tests.helpers.chromium import Chromium, chromium_path
from tests.helpers.daemon_proc import wait_evaluations, write_config
from tests.helpers.slack_server import SlackServer

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed; .ci/run installs it"),
]

GROUP_A, GROUP_B = "stuckGroup", "healthyGroup"
TOKEN = "xoxb-acceptance"


async def _wait(predicate: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
            raise AssertionError(f"{what} did not happen within {timeout:.0f}s; daemon log tail:\n{tail}")
        await asyncio.sleep(0.25)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stuck_alert_firing(base: str) -> bool:
    with urllib.request.urlopen(f"{base}/api/alerts", timeout=5) as response:
        alerts = json.loads(response.read())["alerts"]
    return any(a["rule"] == "ProcessQueueSpanTooLong" and a["state"] == "firing" for a in alerts)


def _about_group_a(slack: SlackServer) -> list[str]:
    return [text for text in map(json.dumps, slack.messages.values()) if GROUP_A in text]


def _config(tmp: Path, namesrv: str, slack: SlackServer, http_port: int) -> Path:
    return write_config(tmp, namesrv, http=f'listen: "127.0.0.1:{http_port}"', slack_url=slack.base_url,
                        slack_token_env="ACCEPTANCE_SLACK_TOKEN")


async def _submit(page: Chromium, script: str) -> None:
    mark = page.mark()
    await page.evaluate(script)
    await page.wait_for("Page.loadEventFired", mark)


async def _drive(sim: SimulatorThread, slack: SlackServer, base: str, log: Path, tmp: Path) -> None:
    await _wait(lambda: "first cycle complete" in log.read_text(), 120, "the daemon's first cycle", log)
    async with Chromium(tmp) as page:
        await page.navigate(f"{base}/")
        text = await page.evaluate("document.body.innerText")
        assert "0 firing" in text or "Nothing firing" in text, text
        health = await page.evaluate("document.getElementById('health').nextElementSibling.innerText")
        assert sim.namesrv_addr in health and "failed" not in health  # every target answered
        assert "collect\tDefaultCluster" in text and "evaluate\trules" in text

        # On-call knows group A is about to be redeployed: silence it through the page first.
        await _submit(page, f"""(() => {{
            const form = document.getElementById('silence-form');
            form.matchers.value = 'group="{GROUP_A}"';
            form.duration.value = '1h';
            form.author.value = 'ana';
            form.comment.value = 'redeploying {GROUP_A}';
            form.querySelector('button').click();
        }})()""")
        assert f"redeploying {GROUP_A}" in await page.evaluate("document.body.innerText")

        sim.trigger("block")
        await _wait(lambda: _stuck_alert_firing(base), 120, "the stuck consumer's alert firing", log)
        # Whole evaluate-and-deliver cycles with the alert firing: a page would have gone out by now.
        await asyncio.to_thread(wait_evaluations, base, 2, log)
        assert not _about_group_a(slack), "a silenced alert must not page"
        await page.navigate(f"{base}/")
        rows = await page.evaluate("[...document.querySelectorAll('tr.firing')].map(r => r.innerText)")
        [row] = [r for r in rows if "ProcessQueueSpanTooLong" in r]
        assert GROUP_A in row and "(muted)" in row
        await page.screenshot(tmp / "status-page-silenced.png")

        # Expiring the silence from the page lets the still-firing alert page on-call.
        await _submit(page, "document.querySelector('tr[data-silence] button').click()")
        await _wait(lambda: bool(_about_group_a(slack)), 90, "the page after the silence ended", log)
        assert "ProcessQueueSpanTooLong" in "".join(_about_group_a(slack))
        assert page.console_errors() == []


def test_status_page_shows_health_and_its_silence_mutes_the_next_notification(tmp_path: Path) -> None:
    with (
        SimulatorThread("stuck-consumer", time_scale=0.25, block_at=None, group_a=GROUP_A, group_b=GROUP_B) as sim,
        SlackServer(token=TOKEN) as slack,
    ):
        http_port = _free_port()
        config = _config(tmp_path, sim.namesrv_addr, slack, http_port)
        log = tmp_path / "daemon.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "daemon.cli", "run", "--config", str(config)],
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "ACCEPTANCE_SLACK_TOKEN": TOKEN},
                cwd=Path(__file__).resolve().parents[2],
            )
        try:
            asyncio.run(_drive(sim, slack, f"http://127.0.0.1:{http_port}", log, tmp_path))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        assert rc == 0, f"daemon exited {rc} on SIGTERM"
        assert "silence" in log.read_text() and "created via status page by ana" in log.read_text()
