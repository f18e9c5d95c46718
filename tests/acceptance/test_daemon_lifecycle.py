"""The daemon as systemd runs it: READY and WATCHDOG over NOTIFY_SOCKET, JSON logs, no secret
anywhere, and SIGTERM with notifications still queued → the outbox flushed and exit 0.

One daemon subprocess for the whole story (against the simulator, aiosmtpd with auth and the local
Slack API server), so the suite pays for one JVM start.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from daemon.simulator import SimulatorThread
from tests.helpers.daemon_proc import (
    REPO,
    free_port,
    http,
    log_tail,
    start_daemon,
    wait_evaluations,
    wait_until,
    write_config,
)
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer

pytestmark = pytest.mark.acceptance

SLACK_TOKEN = "xoxb-lifecycle-5ecret"
SMTP_PASSWORD = "smtp-pa55word-lifecycle"
HTTP_TOKEN = "http-t0ken-lifecycle"
ACL_SECRET = "acl-5ecret-lifecycle"
SECRETS = (SLACK_TOKEN, SMTP_PASSWORD, HTTP_TOKEN, ACL_SECRET)
WATCHDOG_USEC = 400_000  # pings every 0.2 s


class NotifySocket:
    """A datagram socket standing in for systemd's $NOTIFY_SOCKET; keeps (time, message) pairs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.messages: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(4096).decode()
            except TimeoutError:
                continue
            for line in data.splitlines():
                self.messages.append((time.monotonic(), line))

    def times(self, message: str, since: float = 0.0) -> list[float]:
        """When `message` arrived (monotonic seconds), from `since` on."""
        return [t for t, m in list(self.messages) if m == message and t >= since]

    def after(self, mark: str) -> list[str]:
        """The messages that arrived after `mark`, in arrival order ([] until it arrived)."""
        lines = [m for _, m in list(self.messages)]
        return lines[lines.index(mark) + 1:] if mark in lines else []

    def between(self, first: str, last: str) -> list[str]:
        """The messages that arrived between two marks, in arrival order."""
        lines = [m for _, m in list(self.messages)]
        return lines[lines.index(first) + 1:lines.index(last)]

    def seen(self, prefix: str) -> bool:
        """True once a line starting with `prefix` arrived."""
        return any(m.startswith(prefix) for _, m in list(self.messages))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def _config(tmp: Path, namesrv: str, slack: SlackServer, smtp: SmtpServer, http_port: int) -> Path:
    path = write_config(
        tmp, namesrv, http=f'listen: "127.0.0.1:{http_port}", token: "{HTTP_TOKEN}"', slack_url=slack.base_url,
        slack_token_env="LIFECYCLE_SLACK_TOKEN", smtp_port=smtp.port, smtp_password_env="LIFECYCLE_SMTP_PASSWORD",
        span_for="4s", span_keep="2s",
        extra=f"daemon: {{shutdown_timeout: 20s, watchdog_stall_after: 300s}}\nrules: [builtin, {tmp / 'site.yaml'}]",
    )
    # Every request is ACL-signed with a secret that must never show up anywhere.
    namesrv_line = f'    namesrv: ["{namesrv}"]\n'
    text = path.read_text()
    assert namesrv_line in text
    path.write_text(text.replace(namesrv_line, namesrv_line + "    security: {access_key: rwmonitor, secret_key_env: LIFECYCLE_ACL_SECRET}\n"))
    return path


QUIET_RULE = """groups:
  - name: site
    rules:
      - alert: SitePutsAbsurd
        kind: threshold
        table: broker
        value: put_failed_total
        above: {warning: 1000000000}
        summary: "{broker} failed {value} puts"
        diagnosis: "a site rule that never fires"
        next_steps: "none"
"""
BROKEN_RULE = QUIET_RULE.replace("value: put_failed_total", "value: no_such_column")
CANARY_RULE = QUIET_RULE.replace("SitePutsAbsurd", "SiteCanary").replace("{warning: 1000000000}", "{warning: -1}")


def _alert_rules(base: str) -> set[str]:
    return {a["rule"] for a in json.loads(http("GET", f"{base}/api/alerts")[1])["alerts"] if a["state"] == "firing"}


def _undelivered(state_db: Path) -> int:
    with sqlite3.connect(f"file:{state_db}?mode=ro", uri=True, timeout=5) as conn:
        return conn.execute("SELECT count(*) FROM outbox WHERE delivered_at IS NULL").fetchone()[0]


def test_systemd_contract_json_logs_no_secrets_and_a_clean_stop(tmp_path):
    with (
        SimulatorThread("stuck-consumer", time_scale=0.25, block_at=None) as sim,
        SlackServer(token=SLACK_TOKEN) as slack,
        SmtpServer(credentials=("rocketwatch", SMTP_PASSWORD)) as smtp,
    ):
        notify = NotifySocket(tmp_path / "notify.sock")
        http_port = free_port()
        base = f"http://127.0.0.1:{http_port}"
        config = _config(tmp_path, sim.namesrv_addr, slack, smtp, http_port)
        site = tmp_path / "site.yaml"
        site.write_text(QUIET_RULE)
        log = tmp_path / "daemon.log"
        env = {
            "NOTIFY_SOCKET": str(notify.path), "WATCHDOG_USEC": str(WATCHDOG_USEC), "ROCKETWATCH_TEST_HOOKS": "1",
            "LIFECYCLE_SLACK_TOKEN": SLACK_TOKEN, "LIFECYCLE_SMTP_PASSWORD": SMTP_PASSWORD,
            "LIFECYCLE_ACL_SECRET": ACL_SECRET,
        }
        proc = start_daemon(config, log, env, "--log-format", "json")
        try:
            # READY=1 after the first completed cycle, then WATCHDOG=1 about every 0.2 s.
            wait_until(lambda: notify.seen("READY=1"), 120, "READY=1", log)
            ready_at = notify.times("READY=1")[0]
            wait_until(lambda: len(notify.times("WATCHDOG=1", ready_at)) >= 5, 10, "WATCHDOG=1 pings", log)
            assert notify.seen("STATUS=cycle")

            # A blocked event loop stops the pings (systemd then restarts the process); they resume once
            # it runs again. The hook marks the block on the notify socket itself, so the order of the
            # socket's messages tells, with no clock: no ping between the two marks, pings after them.
            status, _ = http("POST", f"{base}/-/test/block-loop?seconds=1", timeout=30)
            assert status == 200
            wait_until(lambda: notify.after("STATUS=test hook: event loop running again").count("WATCHDOG=1") >= 3,
                       10, "pings after the block", log)
            during = notify.between("STATUS=test hook: event loop blocked", "STATUS=test hook: event loop running again")
            assert "WATCHDOG=1" not in during, f"pings went on while the loop was blocked: {during}"

            assert http("GET", f"{base}/readyz")[0] == 200
            status, metrics = http("GET", f"{base}/metrics")
            assert status == 200 and "rocketwatch_evaluate_duration_seconds" in metrics

            # An alert fires and goes out; then Slack breaks and the resolve waits in the outbox.
            sim.trigger("block")
            wait_until(lambda: slack.messages and smtp.messages, 180, "the firing notification", log)

            # SIGHUP with a broken rule file: refused with file:line, the running rules keep firing.
            site.write_text(BROKEN_RULE)
            proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "reload rejected" in log.read_text(), 30, "the rejected reload", log)
            rejected = next(json.loads(ln)["msg"] for ln in log.read_text().splitlines()
                            if ln.startswith("{") and "reload rejected" in ln)
            assert f"{site}:7:16:" in rejected and "no_such_column" in rejected, rejected
            wait_evaluations(base, 2, log)  # cycles after the rejected reload, on the rules that were running
            assert "ProcessQueueSpanTooLong" in _alert_rules(base)
            # Fixed with a new rule + SIGHUP: the new rule fires, what was already told is not told again.
            site.write_text(CANARY_RULE)
            proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "SiteCanary" in _alert_rules(base), 60, "the new rule firing", log)
            # One incident per broker the canary fires on (each broker is its own place), beside the
            # stuck group's incident, whose message is not sent again.
            wait_until(lambda: len(slack.messages) == 3, 30, "the new rule's messages", log)
            assert sum("ProcessQueueSpanTooLong" in json.dumps(m) for m in slack.messages.values()) == 1
            assert sum("SiteCanary" in json.dumps(m) for m in slack.messages.values()) == 2

            slack.fail_next(10_000, error="internal_error", status=500)
            sim.trigger("release")
            state_db = tmp_path / "state" / "state.db"
            # Every alert of the stuck group resolved (under load ConsumptionBlocked may have joined its
            # incident late, and resolves after the others), and its incident's update stuck in the outbox.
            wait_until(lambda: _alert_rules(base) <= {"SiteCanary"} and _undelivered(state_db) > 0
                       and slack.calls_to("chat.update", answered=False), 90, "a resolve stuck in the outbox", log)

            # Nothing secret anywhere an operator or a scraper can look.
            exposed = [http("GET", f"{base}{path}")[1] for path in ("/api/alerts", "/api/silences", "/metrics", "/")]
            check = subprocess.run([sys.executable, "-m", "daemon.cli", "check", str(config)], capture_output=True,
                                   text=True, cwd=REPO, timeout=60)
            for text in [*exposed, check.stdout + check.stderr, log.read_text()]:
                for secret in SECRETS:
                    assert secret not in text

            # Slack is back; SIGTERM right away: the flush gives the waiting resolve its last try.
            slack.fail_next(0)
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=30)  # raises if the daemon does not stop
        finally:
            if proc.poll() is None:
                proc.kill()
            notify.close()

        assert rc == 0, f"exit {rc} on SIGTERM; log tail:\n{log_tail(log)}"
        assert notify.seen("STOPPING=1")
        assert _undelivered(tmp_path / "state" / "state.db") == 0
        assert any("RESOLVED" in json.dumps(c.args) for c in slack.calls_to("chat.update"))

        # Every line our Python logging wrote is one JSON object; the JVM may add its own lines.
        lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
        assert not [ln for ln in lines if re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (INFO|WARNING|ERROR) ", ln)]
        entries = [json.loads(ln) for ln in lines if ln.startswith("{")]
        assert {"ts", "level", "logger", "msg"} <= set(entries[0])
        assert any(e.get("cluster") == "DefaultCluster" and "collected cluster" in e["msg"] for e in entries)
        assert any(e.get("rule") == "ProcessQueueSpanTooLong" and e.get("group") for e in entries)
        assert any("outbox flushed" in e["msg"] for e in entries)
        # The kept evaluation state is saved at the stop, for the next start to fold from.
        assert any(e["msg"].startswith("stopping: evaluation state saved") for e in entries)
        assert entries[-1]["msg"] == "rocketwatch stopped"
