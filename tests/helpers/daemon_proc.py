"""Run `rocketwatch run` as a real subprocess for acceptance tests, and wait on what it does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.helpers import waiting

REPO = Path(__file__).resolve().parents[2]
# The waits' timeouts are ceilings for a quiet machine, stretched by this factor: on two shared cores
# (the suite beside the daemon, or a busy CI runner) a daemon's JVM starts and evaluates more slowly.
# A wait that succeeds returns as soon as its event happens, whatever its ceiling.
PATIENCE = float(os.environ.get("ROCKETWATCH_TEST_PATIENCE", "2"))


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_tail(log: Path, lines: int = 40) -> str:
    """The last lines of the daemon's log, for assertion messages."""
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def wait_until(predicate: Callable[[], object], timeout: float, what: str, log: Path) -> None:
    """Poll `predicate` until true (for at most `timeout` x PATIENCE seconds); fail naming `what` with the daemon's log tail."""
    try:
        waiting.wait_until(predicate, what, timeout * PATIENCE, interval=0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; daemon log tail:\n{log_tail(log)}") from None


def http(method: str, url: str, timeout: float = 10) -> tuple[int, str]:
    """One HTTP request; (status, body) also for 4xx/5xx answers."""
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def evaluations(base: str) -> int:
    """How many evaluations the daemon at `base` has completed (its evaluate-duration histogram's count).

    Each evaluation ends by delivering what it queued, and evaluations never overlap: once the count
    has grown by 2, at least one whole evaluate-and-deliver cycle ran in between."""
    status, metrics = http("GET", f"{base}/metrics")
    assert status == 200, metrics
    for line in metrics.splitlines():
        if line.startswith("rocketwatch_evaluate_duration_seconds_count"):
            return int(float(line.split()[-1]))
    return 0


def wait_evaluations(base: str, more: int, log: Path, timeout: float = 120) -> None:
    """Wait until the daemon at `base` completed `more` evaluations after now (instead of sleeping
    "a few cycles" and hoping they ran)."""
    target = evaluations(base) + more
    wait_until(lambda: evaluations(base) >= target, timeout, f"{more} more evaluation(s)", log)


def start_daemon(config: Path, log: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    """`python -m daemon.cli run --config CONFIG` with stdout+stderr into `log`."""
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "daemon.cli", "run", "--config", str(config), *extra],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}, cwd=REPO,
        )


def write_config(
    tmp: Path, namesrv: str, *, http: str, slack_url: str | None = None, slack_token_env: str = "",
    slack_app_token_env: str | None = None,
    smtp_port: int | None = None, smtp_password_env: str | None = None,
    span_for: str = "6s", span_keep: str = "6s", extra: str = "",
) -> Path:
    """A daemon config for the simulated cluster with fast timers (2 s cycles), in `tmp`.

    `http` is the YAML of the http section's body, e.g. `listen: "127.0.0.1:9787"`; receivers
    are added for the Slack stand-in and the SMTP server when their address is given.
    """
    receivers = ""
    if slack_url is not None:
        buttons = f", app_token_env: {slack_app_token_env}" if slack_app_token_env else ""
        receivers += (f'    - {{type: slack, name: oncall-slack, channel: "#mq-alerts", '
                      f'token_env: {slack_token_env}, base_url: "{slack_url}"{buttons}}}\n')
    if smtp_port is not None:
        auth = f", username: rocketwatch, password_env: {smtp_password_env}" if smtp_password_env else ""
        receivers += (f"    - {{type: email, name: oncall-mail, host: 127.0.0.1, port: {smtp_port}, security: none, "
                      f"from_addr: rocketwatch@example.com, to: [mq-oncall@example.com]{auth}}}\n")
    path = tmp / "rocketwatch.yaml"
    path.write_text(
        f"""clusters:
  - name: DefaultCluster
    namesrv: ["{namesrv}"]
state_dir: {tmp / "state"}
collect: {{interval: 2s, timeout: 2s}}
evaluate: {{interval: 2s}}
http: {{{http}}}
rule_overrides:
  ProcessQueueSpanTooLong: {{for: {span_for}, keep_firing_for: {span_keep}}}
{extra}
notify:
  interval: 1s
  receivers:
{receivers}"""
    )
    return path
