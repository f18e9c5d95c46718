"""The `rocketwatch diagnose` command as an operator runs it: exit codes and messages, never a trace."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from daemon.simulator import SimulatorThread


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon.cli", "diagnose", *args],
                          capture_output=True, text=True, timeout=120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_name_server_exits_2_with_a_sentence() -> None:
    addr = f"127.0.0.1:{_free_port()}"
    result = _run("--namesrv", addr, "--group", "g", "--timeout", "1")
    assert result.returncode == 2
    assert f"could not collect group g: name server {addr}" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_unknown_group_json_exits_2() -> None:
    with SimulatorThread("healthy", time_scale=0.1) as sim:
        result = _run("--namesrv", sim.namesrv_addr, "--group", "nobody", "--samples", "1", "--format", "json")
    assert result.returncode == 2, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["status"] == "unknown" and verdict["exit_code"] == 2
    assert "Traceback" not in result.stderr


def test_bad_every_is_a_usage_error() -> None:
    result = _run("--namesrv", "127.0.0.1:1", "--group", "g", "--every", "soon")
    assert result.returncode == 2 and "--every" in result.stderr and "Traceback" not in result.stderr
