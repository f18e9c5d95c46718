"""The Spark class archive of one-shot commands: written once, adopted when finished, never required."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from daemon.diagnose.class_archive import archive_path, claim_build, finish_build, java_options


def _settle(path: Path, seconds_ago: float = 120) -> None:
    then = time.time() - seconds_ago
    os.utime(path, (then, then))


def test_no_archive_yet_means_no_options(tmp_path):
    assert java_options(tmp_path) == ""


def test_one_warm_up_at_a_time_and_its_archive_moved_into_place(tmp_path):
    final = archive_path(tmp_path)
    assert claim_build(final)
    assert not claim_build(final), "a second diagnose must not start a second warm-up"
    written = Path(f"{final}.tmp-404")
    written.write_bytes(b"classes")
    finish_build(final, written)
    assert final.read_bytes() == b"classes" and list(tmp_path.iterdir()) == [final]
    options = java_options(tmp_path)
    assert options.startswith(f"-XX:SharedArchiveFile={final} ")
    assert "-Xlog:disable -Xlog:all=warning:stderr" in options  # stdout stays the command's


def test_a_warm_up_that_died_long_ago_does_not_block_the_next(tmp_path):
    final = archive_path(tmp_path)
    assert claim_build(final)
    _settle(Path(f"{final}.building"), 3600)
    assert claim_build(final)


def test_a_finished_archive_is_adopted_and_used(tmp_path):
    final = archive_path(tmp_path)
    older, newer = Path(f"{final}.tmp-101"), Path(f"{final}.tmp-202")
    older.write_bytes(b"old")
    newer.write_bytes(b"new")
    _settle(older, 300)
    _settle(newer, 120)
    assert java_options(tmp_path).startswith(f"-XX:SharedArchiveFile={final} ")
    assert final.read_bytes() == b"new" and list(tmp_path.iterdir()) == [final]


def test_an_archive_still_being_written_is_left_alone(tmp_path):
    final = archive_path(tmp_path)
    Path(f"{final}.tmp-303").write_bytes(b"half")  # its JVM may still be dumping
    assert java_options(tmp_path) == ""
    assert not final.exists()


def test_an_unwritable_cache_means_no_archive(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert java_options(blocked / "rocketwatch") == ""
    assert not claim_build(archive_path(blocked / "rocketwatch"))


def test_the_archive_is_per_java(tmp_path, monkeypatch: pytest.MonkeyPatch):
    first = archive_path(tmp_path)
    other = tmp_path / "jdk"
    (other / "bin").mkdir(parents=True)
    (other / "bin" / "java").write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(other))
    assert archive_path(tmp_path) not in (None, first)


def test_archives_unused_for_a_month_go_when_another_is_written(tmp_path):
    mine = archive_path(tmp_path)
    stale = tmp_path / "spark-4.3.0-0123456789abcdef.jsa"  # another virtualenv's, long gone
    used = tmp_path / "spark-4.3.0-fedcba9876543210.jsa"  # another's, old but still started from
    stale.write_bytes(b"old")
    used.write_bytes(b"in use")
    _settle(stale, 40 * 86400)
    _settle(used, 40 * 86400)
    os.utime(used)  # what java_options does when it offers an archive to a JVM
    written = Path(f"{mine}.tmp-1")
    written.write_bytes(b"classes")
    finish_build(mine, written)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, used.name])


def test_offering_an_archive_marks_it_used(tmp_path):
    final = archive_path(tmp_path)
    final.write_bytes(b"classes")
    _settle(final, 40 * 86400)
    assert java_options(tmp_path)
    assert time.time() - final.stat().st_mtime < 86400
