"""systemd/rocketwatch.service: the production contract it promises, and `systemd-analyze verify` on it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from config.models import DaemonConfig
from rules.durations import parse_duration

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "systemd" / "rocketwatch.service"
INSTALLED_EXEC = "/opt/rocketwatch/.venv/bin/rocketwatch"


def _directives(text: str) -> dict[str, list[str]]:
    """Key -> values of the [Service] section (keys such as LoadCredential may repeat)."""
    found: dict[str, list[str]] = defaultdict(list)
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]":
            key, _, value = line.partition("=")
            found[key].append(value)
    return found


def test_the_unit_is_notify_watched_restarted_and_confined():
    service = _directives(UNIT.read_text())
    one = {k: v[-1] for k, v in service.items()}
    assert one["Type"] == "notify" and one["Restart"] == "on-failure"
    assert "-HUP $MAINPID" in one["ExecReload"]
    assert one["ExecStart"].startswith(INSTALLED_EXEC + " run --config /etc/rocketwatch/")
    assert (one["DynamicUser"], one["StateDirectory"], one["ProtectSystem"]) == ("yes", "rocketwatch", "strict")
    assert one["NoNewPrivileges"] == one["PrivateTmp"] == "yes"
    # The JVM's JIT needs writable+executable memory: this hardening option would crash Spark.
    assert "MemoryDenyWriteExecute" not in service
    assert parse_duration(one["WatchdogSec"]).total_seconds() >= 10
    # Spark's driver heap (1g default) must fit under the hard limit with room for Python.
    assert re.fullmatch(r"\d+G", one["MemoryMax"]) and int(one["MemoryMax"][:-1]) >= 2


def test_systemd_waits_longer_than_the_daemon_needs_to_stop():
    one = {k: v[-1] for k, v in _directives(UNIT.read_text()).items()}
    # Otherwise systemd SIGKILLs the daemon in the middle of its final outbox flush.
    stop = parse_duration(one["TimeoutStopSec"])
    assert stop > DaemonConfig().shutdown_timeout + parse_duration("10s")


def test_credentials_are_named_like_the_variables_the_config_refers_to():
    credentials = _directives(UNIT.read_text())["LoadCredential"]
    assert credentials
    for entry in credentials:
        name, _, source = entry.partition(":")
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", name), f"{name}: use the env-var name the config's *_env field names"
        assert source.startswith("/etc/rocketwatch/credentials/")


def _runnable_unit(tmp_path: Path) -> Path:
    # verify checks that ExecStart exists; point it at this checkout's interpreter instead of /opt.
    script = Path(sys.executable).parent / "rocketwatch"
    command = str(script) if script.exists() else f"{sys.executable} -m daemon.cli"
    unit = tmp_path / "rocketwatch.service"
    unit.write_text(UNIT.read_text().replace(INSTALLED_EXEC, command))
    return unit


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze not installed (apt-get install -y systemd provides it)")
def test_systemd_analyze_verify_accepts_the_unit(tmp_path):
    unit = _runnable_unit(tmp_path)
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    # Unknown keys or bad values are only warnings (exit 0): any line about our file is a failure.
    ours = [line for line in (result.stdout + result.stderr).splitlines() if unit.name in line]
    assert result.returncode == 0 and not ours, result.stdout + result.stderr
