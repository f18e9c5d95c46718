"""Run `rocketwatch run` as a real subprocess for acceptance tests, and wait on what it does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_tail(log: Path, lines: int = 40) -> str:
    """The last lines of the daemon's log, for assertion messages."""
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def wait_until(predicate: Callable[[], object], timeout: float, what: str, log: Path) -> None:
    """Poll `predicate` until true; fail naming `what` with the daemon's log tail."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:.0f}s; daemon log tail:\n{log_tail(log)}")
        time.sleep(0.2)


def http(method: str, url: str, timeout: float = 10) -> tuple[int, str]:
    """One HTTP request; (status, body) also for 4xx/5xx answers."""
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def start_daemon(config: Path, log: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    """`python -m daemon.cli run --config CONFIG` with stdout+stderr into `log`."""
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "daemon.cli", "run", "--config", str(config), *extra],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}, cwd=REPO,
        )
