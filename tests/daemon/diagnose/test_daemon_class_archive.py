"""The daemon's JVM starts from a class archive written for its own JVM options, and its first start on
a machine asks for one in the background (daemon/diagnose/warmup.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from daemon.diagnose import warmup
from daemon.diagnose.class_archive import archive_path, finish_build
from daemon.diagnose.warmup import JAVA_OPTIONS, daemon_java_options, daemon_session_conf, start_in_background
from spark.session import DEFAULTS


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "rocketwatch"


def _written(cache: Path, options: str) -> Path:
    final = archive_path(cache, options)
    assert final is not None
    final.parent.mkdir(parents=True, exist_ok=True)
    written = Path(f"{final}.tmp-7")
    written.write_bytes(b"classes")
    finish_build(final, written)
    return final


def test_without_an_archive_the_daemon_starts_its_jvm_as_before(cache: Path) -> None:
    conf = daemon_session_conf("local[2]", {"spark.driver.memory": "2g"})
    assert conf == {"spark.driver.memory": "2g", JAVA_OPTIONS: DEFAULTS[JAVA_OPTIONS]}


def test_the_archive_for_the_daemons_options_is_mapped(cache: Path) -> None:
    final = _written(cache, DEFAULTS[JAVA_OPTIONS])
    options = daemon_session_conf("local[2]", {})[JAVA_OPTIONS]
    assert options.startswith(DEFAULTS[JAVA_OPTIONS] + " ")
    assert f"-XX:SharedArchiveFile={final} " in options


def test_options_set_in_the_config_get_their_own_archive(cache: Path) -> None:
    _written(cache, DEFAULTS[JAVA_OPTIONS])
    mine = "-XX:+UseParallelGC"
    assert daemon_session_conf("local[2]", {JAVA_OPTIONS: mine}) == {JAVA_OPTIONS: mine}  # none written for them
    final = _written(cache, mine)
    assert daemon_session_conf("local[2]", {JAVA_OPTIONS: mine})[JAVA_OPTIONS].startswith(
        f"{mine} -XX:SharedArchiveFile={final} ")


def test_a_spark_connect_client_gets_no_jvm_options(cache: Path) -> None:
    _written(cache, DEFAULTS[JAVA_OPTIONS])
    assert daemon_session_conf("sc://spark:15002", {}) == {}


def test_the_first_start_asks_for_an_archive_of_its_own_options_once(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETWATCH_CLASS_ARCHIVE", raising=False)
    started: list[list[str]] = []

    class Spawned:
        def __init__(self, command: list[str], **_: object) -> None:
            started.append(command)

    monkeypatch.setattr(subprocess, "Popen", Spawned)
    options = daemon_java_options({})
    assert start_in_background(options)
    assert started[0][-4:] == ["daemon.diagnose.warmup", "--daemon", "--options", options]
    assert not start_in_background(options), "a second start while the first warm-up writes must not start another"
    assert len(started) == 1


def test_no_warm_up_when_switched_off_or_already_written(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail("no warm-up expected"))
    monkeypatch.setenv(warmup.OFF_ENV, "off")
    assert not start_in_background(daemon_java_options({}))
    monkeypatch.delenv(warmup.OFF_ENV)
    _written(cache, daemon_java_options({}))
    assert not start_in_background(daemon_java_options({}))


def _mapped_files(spark: object) -> str:
    """The files the session's JVM has mapped into its memory (Linux: /proc/PID/maps)."""
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[attr-defined]
    return Path(f"/proc/{pid}/maps").read_text()


def test_the_shared_session_started_as_the_daemon_does_maps_spark_from_the_archive(spark: object) -> None:
    # The suite's session starts as the daemon's does (tests/conftest.py), after `make test` wrote the archive.
    final = archive_path(options=daemon_java_options({}))
    if final is None or not final.exists():
        pytest.skip("no class archive for the daemon's JVM options here: `make test` writes it first")
    assert str(final) in _mapped_files(spark), "the JVM refused the archive written for its options"
