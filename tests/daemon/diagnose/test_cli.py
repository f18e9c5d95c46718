"""The `rocketwatch diagnose` command as an operator runs it: exit codes and messages, never a trace."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from daemon.simulator import SimulatorThread


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own cache directory, where diagnose keeps its Spark class archive; no warm-up
    JVM left running behind a test unless it asks for one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("ROCKETWATCH_CLASS_ARCHIVE", "off")
    return tmp_path / "cache" / "rocketwatch"


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


BAD_ARGUMENTS = {
    "a name server without a port": (["--namesrv", "nohost"], "argument --namesrv: 'nohost' is not host:port"),
    "a port past 65535": (["--namesrv", "127.0.0.1:99999"], "argument --namesrv: '127.0.0.1:99999' is not host:port"),
    "an empty group": (["--group", ""], "argument --group/-g: give the consumer group's name"),
    "no samples": (["--samples", "0"], "argument --samples: '0': give a whole number, 1 or more"),
    "a timeout of 0": (["--timeout", "0"], "argument --timeout: '0': give seconds, more than 0"),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_a_bad_argument_is_a_usage_error_naming_it(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    from daemon.cli import main

    change, said = BAD_ARGUMENTS[case]
    args = {"--namesrv": "127.0.0.1:1", "--group": "g", "--timeout": "1"}
    args.update(zip(change[::2], change[1::2], strict=True))
    with pytest.raises(SystemExit) as exit_:
        main(["diagnose", *(item for pair in args.items() for item in pair)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(f"rocketwatch diagnose: error: {said}") and "Traceback" not in err


def test_first_run_leaves_a_class_archive_the_next_run_starts_from(cache: Path, monkeypatch) -> None:
    monkeypatch.delenv("ROCKETWATCH_CLASS_ARCHIVE")
    with SimulatorThread("healthy", time_scale=0.1) as sim:
        args = ("--namesrv", sim.namesrv_addr, "--group", "orderConsumerA", "--samples", "2", "--every", "1s",
                "--format", "json")
        first = _run(*args)
        assert first.returncode == 0, first.stderr[-2000:]
        assert json.loads(first.stdout)["status"] == "healthy"
        # The warm-up runs detached after the verdict; it moves its archive into place when done.
        deadline = time.monotonic() + 300
        while not list(cache.glob("*.jsa")) and time.monotonic() < deadline:
            time.sleep(1)
        (archive,) = cache.glob("*.jsa")
        assert archive.stat().st_size > 10 * 2**20, "Spark's classes were archived"
        second = _run(*args)
    assert second.returncode == 0, second.stderr[-2000:]
    assert json.loads(second.stdout)["status"] == "healthy"  # nothing from the JVM on stdout
    assert [p.name for p in cache.iterdir()] == [archive.name], "no second warm-up, nothing left half-done"
