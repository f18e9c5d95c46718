"""End to end: a stuck consumer in the simulated cluster reaches Slack and email, then resolves.

The daemon runs as a real subprocess (`rocketwatch run --config ...`) against the simulator's
wire protocol, a real SMTP server (aiosmtpd) and a local HTTP server answering the Slack Web API.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.simulator import SimulatorThread
from tests.helpers.daemon_proc import free_port, http, wait_evaluations, wait_until, write_config
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer

pytestmark = pytest.mark.acceptance

GROUP_A, GROUP_B = "stuckGroup", "healthyGroup"
TOKEN = "xoxb-acceptance"


def _config(tmp: Path, namesrv: str, slack: SlackServer, smtp: SmtpServer, http_port: int) -> Path:
    return write_config(tmp, namesrv, http=f'listen: "127.0.0.1:{http_port}"', slack_url=slack.base_url,
                        slack_token_env="ACCEPTANCE_SLACK_TOKEN", smtp_port=smtp.port)


def _slack_text(call_args: dict) -> str:
    return json.dumps(call_args, ensure_ascii=False)


def _mail_text(message) -> str:
    parts = [message["Subject"] or ""]
    for part in message.walk():
        if part.get_content_maintype() == "text":
            parts.append(part.get_content())
    return "\n".join(parts)


def test_stuck_consumer_fires_once_in_slack_and_email_then_resolves(tmp_path):
    with (
        SimulatorThread("stuck-consumer", time_scale=0.25, block_at=None, group_a=GROUP_A, group_b=GROUP_B) as sim,
        SlackServer(token=TOKEN) as slack,
        SmtpServer() as smtp,
    ):
        http_port = free_port()
        base = f"http://127.0.0.1:{http_port}"
        config = _config(tmp_path, sim.namesrv_addr, slack, smtp, http_port)
        log = tmp_path / "daemon.log"
        env = {**os.environ, "ACCEPTANCE_SLACK_TOKEN": TOKEN}
        with log.open("w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "daemon.cli", "run", "--config", str(config)],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=Path(__file__).resolve().parents[2],
            )
        try:
            wait_until(lambda: "first cycle complete" in log.read_text(), 120, "the daemon's first cycle", log)
            assert not slack.calls and not smtp.messages, "nothing may be sent while the cluster is healthy"

            sim.trigger("block")
            wait_until(lambda: slack.messages and smtp.messages, 180, "the firing notification", log)
            wait_evaluations(base, 2, log)  # more cycles pass: still exactly one message and one mail for the group
            assert len(slack.messages) == 1 and not slack.replies
            assert len(smtp.messages) == 1
            firing_slack = _slack_text(next(iter(slack.messages.values())))
            firing_mail = _mail_text(smtp.messages[0])
            for text in (firing_slack, firing_mail):
                assert GROUP_A in text and "broker-a" in text and "3626" in text
                assert "OrderTopic/broker-a/3" in text  # the queue, as the summary names it
            # For a lock screen: severity and the problem first (issue 44).
            assert re.match(r"(WARNING|CRITICAL) ProcessQueueSpanTooLong · " + GROUP_A, smtp.messages[0]["Subject"])

            # What the HTTP side shows while it fires: ready, the alert, its metrics; never the token.
            assert http("GET", f"{base}/readyz")[0] == 200
            status, body = http("GET", f"{base}/api/alerts")
            firing = [a for a in json.loads(body)["alerts"] if a["state"] == "firing"]
            assert status == 200 and [a["rule"] for a in firing] == ["ProcessQueueSpanTooLong"]
            assert firing[0]["labels"]["group"] == GROUP_A and firing[0]["value"] == 3626
            status, metrics = http("GET", f"{base}/metrics")
            assert 'rocketwatch_alerts{state="firing"} 1.0' in metrics
            assert 'rocketwatch_rows_collected_total{cluster="DefaultCluster",table="process_queue"}' in metrics
            assert TOKEN not in body and TOKEN not in metrics and TOKEN not in log.read_text()

            sim.trigger("release")
            wait_until(
                lambda: slack.calls_to("chat.update") and slack.replies and len(smtp.messages) >= 2,
                90, "the resolve notification", log,
            )
            wait_evaluations(base, 2, log)  # and nothing more after it
            # The resolve updates the original message and replies in its thread; one more mail, threaded.
            original_ts = next(iter(slack.messages))
            update = slack.calls_to("chat.update")[-1].args
            assert update["ts"] == original_ts and "RESOLVED" in _slack_text(update).upper()
            assert slack.replies[-1]["thread_ts"] == original_ts
            assert len(slack.messages) == 1 and len(smtp.messages) == 2
            resolved_mail = smtp.messages[1]
            assert "RESOLVED" in resolved_mail["Subject"]
            assert smtp.messages[0]["Message-ID"] in (resolved_mail["In-Reply-To"] or "")

            # Group B consumed the same topic throughout and must never be paged.
            everything = [_slack_text(c.args) for c in slack.calls] + [_mail_text(m) for m in smtp.messages]
            assert not any(GROUP_B in text for text in everything)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        assert rc == 0, f"daemon exited {rc} on SIGTERM"
        assert "rocketwatch stopped" in log.read_text()
