"""SIGHUP to a running `rocketwatch run`: the heartbeat moves to another Slack receiver and keeps
beating there at the reloaded cadence; the log lists what changed. One daemon subprocess (with Spark)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers.daemon_proc import free_port, log_tail, start_daemon, wait_until
from tests.helpers.slack_server import SlackServer
from tests.helpers.status_page_daemon import RULE  # one threshold rule on process_queue

pytestmark = [pytest.mark.acceptance, pytest.mark.spark, pytest.mark.timeout(420)]

def config_text(tmp_path: Path, slack: dict[str, SlackServer], namesrv_port: int, http_port: int, heartbeat: str,
                evaluate: str) -> str:
    """A Slack receiver per stand-in server; the heartbeat to `heartbeat` every 2 s."""
    receivers = "".join(
        f"    - {{type: slack, name: {name}, channel: '#{name}', token: xoxb-test, base_url: '{server.base_url}'}}\n"
        for name, server in slack.items())
    return f"""\
clusters:
  - {{name: prod, namesrv: ["127.0.0.1:{namesrv_port}"]}}
state_dir: {tmp_path / "state"}
rules: [{tmp_path / "rules.yaml"}]
collect: {{interval: 2s, timeout: 1s}}
evaluate: {{interval: {evaluate}}}
http: {{listen: "127.0.0.1:{http_port}"}}
notify:
  interval: 1s
  receivers:
{receivers}  route: {{receiver: team-a}}
  heartbeat: {{receiver: {heartbeat}, interval: 2s}}
"""


def test_sighup_moves_the_heartbeat_to_its_new_receiver(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(RULE)
    config, log = tmp_path / "rocketwatch.yaml", tmp_path / "daemon.log"
    ports = (free_port(), free_port())  # nothing listens on the name server's: every collect fails fast

    # One Slack stand-in per receiver: every message one receives is a heartbeat (no rule has data to fire on),
    # the first posted in the channel, the later ones replies in its thread.
    with SlackServer(token="xoxb-test") as team_a, SlackServer(token="xoxb-test") as team_b:
        slack = {"team-a": team_a, "team-b": team_b}

        def beats(receiver: str) -> int:
            return len(slack[receiver].calls_to("chat.postMessage"))

        config.write_text(config_text(tmp_path, slack, *ports, heartbeat="team-a", evaluate="2s"))
        proc = start_daemon(config, log, {})
        try:
            wait_until(lambda: beats("team-a") >= 1, 240, "the first heartbeat at team-a", log)

            config.write_text(config_text(tmp_path, slack, *ports, heartbeat="team-b", evaluate="1s"))
            proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "reloaded" in log.read_text(), 30, "the reload", log)
            text = log.read_text()
            assert "heartbeat: receiver team-a -> team-b" in text, log_tail(log)
            assert "intervals (rescheduled): evaluate every 2s -> 1s" in text, log_tail(log)

            wait_until(lambda: beats("team-b") >= 1, 60, "the heartbeat at team-b", log)
            at_a = beats("team-a")
            # It keeps beating there, and only there.
            wait_until(lambda: beats("team-b") >= 3, 60, "two more heartbeats at team-b", log)
            assert beats("team-a") == at_a
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        assert rc == 0, f"exit {rc} on SIGTERM; log tail:\n{log_tail(log)}"
