"""The Spark class archive is offered only to a JVM it was written for (no class-data-sharing warning
when two virtualenvs, or a reinstalled pyspark, share one machine's cache)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.find_spark_home import _find_spark_home

from daemon.diagnose.class_archive import archive_path, finish_build, java_options


def _archive_written_by_this_install(cache: Path, options: str = "") -> Path:
    final = archive_path(cache, options) if options else archive_path(cache)
    assert final is not None
    written = Path(f"{final}.tmp-1")
    final.parent.mkdir(parents=True, exist_ok=True)
    written.write_bytes(b"classes")
    finish_build(final, written)
    return final


def _other_install(root: Path) -> Path:
    """A second pyspark install of the same version: the same jars, at another path (a second venv)."""
    jars = root / "pyspark" / "jars"
    jars.mkdir(parents=True)
    for jar in sorted((Path(_find_spark_home()) / "jars").glob("*.jar")):
        (jars / jar.name).symlink_to(jar)
    return root / "pyspark"


def test_an_archive_of_another_virtualenv_is_not_offered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    final = _archive_written_by_this_install(cache)
    assert java_options(cache).startswith(f"-XX:SharedArchiveFile={final} ")
    monkeypatch.setenv("SPARK_HOME", str(_other_install(tmp_path / "venv-b")))
    # Its class path differs, so the JVM would refuse this archive with a warning: it is not offered.
    assert java_options(cache) == ""
    assert archive_path(cache) != final


def test_a_reinstalled_jar_gets_a_new_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    home = _other_install(tmp_path / "venv")
    monkeypatch.setenv("SPARK_HOME", str(home))
    final = _archive_written_by_this_install(cache)
    jar = sorted((home / "jars").iterdir())[0]
    original = jar.resolve()
    jar.unlink()
    shutil.copyfile(original, jar)  # `pip install --force-reinstall`: same path and size, a new file
    assert java_options(cache) == ""
    assert archive_path(cache) != final


def test_an_archive_is_used_only_with_the_jvm_options_it_was_written_with(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    final = _archive_written_by_this_install(cache, "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    assert java_options(cache, "-XX:TieredStopAtLevel=1  -XX:+UseSerialGC").startswith(f"-XX:SharedArchiveFile={final} ")
    assert java_options(cache, "-XX:+UseSerialGC") == ""
