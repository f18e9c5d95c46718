"""rocketwatch alerting about itself, as a subprocess: Slack refuses every message, so the outbox
backs up and the mail receiver carries the RocketwatchOutboxBackingUp alert; then a broken file in
the store makes every evaluation fail, and RocketwatchEvaluationFailing still goes out by mail.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from daemon.store.writer import partition_dir
from spark.store_layout import write_commit
from tests.helpers.daemon_proc import free_port, log_tail, start_daemon, wait_until
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer

pytestmark = pytest.mark.acceptance

SLACK_TOKEN = "xoxb-selfmon-token"


def _config(tmp: Path, slack: SlackServer, smtp: SmtpServer) -> Path:
    path = tmp / "rocketwatch.yaml"
    # Nobody listens on the name server port: CollectorTargetUnreachable gives the outbox work.
    path.write_text(
        f"""
clusters:
  - name: lab
    namesrv: ["127.0.0.1:{free_port()}"]
state_dir: {tmp / "state"}
collect: {{interval: 2s, timeout: 1s}}
evaluate: {{interval: 2s}}
http: {{enabled: false}}
rule_overrides:
  CollectorTargetUnreachable: {{for: 0s}}
  RocketwatchOutboxBackingUp: {{for: 0s, above: {{warning: 0.05}}}}
  RocketwatchEvaluationFailing: {{above: {{warning: 0}}}}
notify:
  interval: 1s
  receivers:
    - {{type: slack, name: team-slack, channel: "#mq", token_env: SELFMON_SLACK_TOKEN, base_url: "{slack.base_url}"}}
    - {{type: email, name: team-mail, host: 127.0.0.1, port: {smtp.port}, security: none,
        from_addr: rocketwatch@example.com, to: [mq-oncall@example.com]}}
"""
    )
    return path


def _mailed(smtp: SmtpServer, alertname: str) -> bool:
    return any(alertname in message.as_string() for message in smtp.messages)


def test_a_failing_receiver_and_a_failing_evaluation_are_alerted_through_the_other_receiver(tmp_path):
    with SlackServer(token=SLACK_TOKEN) as slack, SmtpServer() as smtp:
        slack.fail_next(1_000_000, error="invalid_auth")  # e.g. a revoked bot token
        config = _config(tmp_path, slack, smtp)
        log = tmp_path / "daemon.log"
        proc = start_daemon(config, log, {"SELFMON_SLACK_TOKEN": SLACK_TOKEN})
        try:
            wait_until(lambda: _mailed(smtp, "CollectorTargetUnreachable"), 180, "the collector alert by mail", log)
            wait_until(lambda: _mailed(smtp, "RocketwatchOutboxBackingUp"), 60, "the outbox self-alert by mail", log)
            assert slack.calls_to("chat.postMessage") and not slack.messages  # Slack refused every post

            store = tmp_path / "state" / "store"
            health = [pq.read_table(p).to_pylist() for p in (store / "daemon_health").rglob("*.parquet")]
            rows = [row for table in health for row in table]
            assert rows and all(r["cluster"] == "rocketwatch" for r in rows)
            assert max(r["outbox_depth"] for r in rows) >= 1

            # A committed cycle whose file no Parquet reader accepts (a disk that lost its bytes):
            # every evaluation must read it, from the kept state's fold or from the full window.
            now = datetime.now(UTC)
            broken = partition_dir(store, "collector_health", now) / "00000000-broken.parquet"
            broken.parent.mkdir(parents=True, exist_ok=True)
            broken.write_bytes(b"PAR1 not really")
            write_commit(store, now, {"collector_health": [broken]}, {"collector_health": 1}, ["lab"])
            wait_until(lambda: _mailed(smtp, "RocketwatchEvaluationFailing"), 90, "the evaluation self-alert", log)
            assert "evaluation failed" in log.read_text()
            broken.unlink()

            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert rc == 0, f"exit {rc} on SIGTERM; log tail:\n{log_tail(log)}"
        assert "store maintenance:" in log.read_text()  # the maintain job ran at start
