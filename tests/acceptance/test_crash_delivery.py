"""SIGKILL between "queued in the outbox" and "Slack answered": after a restart on the same state,
the notification is delivered exactly once, and nothing that already went out is sent again."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest

from daemon.simulator import SimulatorThread
from tests.helpers.daemon_proc import (
    free_port,
    log_tail,
    start_daemon,
    wait_evaluations,
    wait_until,
    write_config,
)
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer

pytestmark = pytest.mark.acceptance

TOKEN = "xoxb-crash"


def _config(tmp: Path, namesrv: str, slack: SlackServer, smtp: SmtpServer, http_port: int) -> Path:
    return write_config(tmp, namesrv, http=f'listen: "127.0.0.1:{http_port}"', slack_url=slack.base_url,
                        slack_token_env="CRASH_SLACK_TOKEN", smtp_port=smtp.port, span_for="4s", span_keep="30s")


def _outbox(state_db: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(f"file:{state_db}?mode=ro", uri=True, timeout=5) as conn:
        return conn.execute("SELECT receiver, delivered_at FROM outbox ORDER BY id").fetchall()


def test_killed_mid_send_the_notification_goes_out_once_after_restart(tmp_path):
    with (
        SimulatorThread("stuck-consumer", time_scale=0.25, block_at=None) as sim,
        SlackServer(token=TOKEN) as slack,
        SmtpServer() as smtp,
    ):
        base = f"http://127.0.0.1:{free_port()}"
        config = _config(tmp_path, sim.namesrv_addr, slack, smtp, int(base.rsplit(":", 1)[1]))
        env = {"CRASH_SLACK_TOKEN": TOKEN}
        state_db = tmp_path / "state" / "state.db"
        first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"

        slack.hang_next(1, seconds=15)  # the first post never gets its answer
        proc = start_daemon(config, first_log, env)
        try:
            wait_until(lambda: "first cycle complete" in first_log.read_text(), 120, "the first cycle", first_log)
            sim.trigger("block")
            wait_until(lambda: slack.calls_to("chat.postMessage", answered=False), 180, "the post to Slack",
                       first_log)
            assert ("oncall-slack", None) in _outbox(state_db)  # queued, sent, not yet acknowledged
            # The mail goes out beside the hung post: the kill waits until its delivery is recorded.
            # A kill between the SMTP server's acceptance and that record sends the mail again after
            # the restart, with the same Message-ID (SMTP cannot be asked whether a mail arrived):
            # that is the email path's at-least-once, not what this test is about.
            wait_until(lambda: any(r == "oncall-mail" and done for r, done in _outbox(state_db)), 30,
                       "the mail's delivery recorded", first_log)
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=10) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
        assert slack.messages == {}  # the killed send never landed

        proc = start_daemon(config, second_log, env)
        try:
            wait_until(lambda: slack.messages, 120, "the message after the restart", second_log)
            wait_until(lambda: smtp.messages, 30, "the mail", second_log)
            wait_evaluations(base, 3, second_log)  # several cycles: the alert keeps firing, nothing more may go out
            posts = slack.calls_to("chat.postMessage")
            # One page: the killed send went out once after the restart. A later alert of the same
            # incident (ConsumptionBlocked joining on a slow machine) may follow as a thread reply,
            # carrying a key of its own: nothing that went out is sent again.
            firsts_in_slack = [c for c in posts if not c.args.get("thread_ts")]
            assert len(slack.messages) == 1 and len(firsts_in_slack) == 1, [c.args.get("text") for c in posts]
            keys = [json.dumps(c.args.get("metadata"), sort_keys=True) for c in posts]
            assert len(set(keys)) == len(keys), keys
            # One email thread: the first mail, recorded before the kill, is not sent again; a later
            # alert of the same incident may follow as a reply in that thread, never as a new one.
            firsts = [m for m in smtp.messages if not m["In-Reply-To"]]
            heads = [(m["Message-ID"], m["In-Reply-To"], m["Subject"]) for m in smtp.messages]
            assert len(firsts) == 1, f"the mail went out before the kill, and only then: {heads}"
            assert len({m["Message-ID"] for m in smtp.messages}) == len(smtp.messages)
            assert all(m["In-Reply-To"] == firsts[0]["Message-ID"] for m in smtp.messages if m is not firsts[0])
            assert all(delivered for _, delivered in _outbox(state_db))
            assert "orderConsumerA" in str(next(iter(slack.messages.values())))  # the stuck group
        finally:
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=60)
        assert rc == 0, log_tail(second_log)
