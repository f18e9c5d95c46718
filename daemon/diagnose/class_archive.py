"""A class-data-sharing archive of Spark's classes for the one-shot commands' short-lived JVMs.

A JVM that lives for one evaluation (`rocketwatch diagnose`) spends much of its life loading and
verifying Spark's classes. Java 17 can dump the classes a run loaded into an archive
(-XX:ArchiveClassesAtExit) and map it on later runs (-XX:SharedArchiveFile). Measured cold on
2 cores: session start 3.4 s -> 1.7 s, first plan 3.9 s -> 3.1 s, first collect 3.9 s -> 2.8 s.

Archiving slows the JVM that does it, so no command archives itself: the first diagnose on a
machine starts a detached warm-up (daemon/diagnose/warmup.py) that writes the archive under a
temporary name and moves it into place once its JVM has exited; a temporary archive left by a
warm-up that could not wait is adopted once it has not changed for a minute.

An archive is valid only for the JVM build that wrote it, the exact class path (each jar's path,
size and time: two virtualenvs on one machine have the same pyspark version but their jars at
other paths) and the JVM options that shape it. All of these are in its name, so a run only ever
finds an archive written for it; one that does not match is never offered to the JVM, which would
otherwise refuse it with a warning (with -Xshare:auto it then runs without one). JVM logging goes
to stderr only (spark/output.py puts that into Spark's log): diagnose's stdout may be JSON.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from pathlib import Path

# An archive no JVM started from for this long is removed when another is written: each pyspark
# install (each virtualenv) and each set of JVM options has its own, ~180 MB each.
UNUSED_S = 30 * 86400
# A temporary archive untouched this long was finished by a JVM that has exited.
_SETTLED_S = 60.0
# A warm-up that started this long ago and left no archive has failed: another may try.
_BUILD_TIMEOUT_S = 600.0
# Warnings (e.g. an archive that does not match this JVM) to stderr, never to stdout.
QUIET_JVM_LOG = "-Xshare:auto -Xlog:disable -Xlog:all=warning:stderr"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rocketwatch"


def archive_path(cache: Path | None = None, options: str = "") -> Path | None:
    """Where the archive for this JVM, this pyspark install's jars and these JVM `options` lives;
    None without a java on PATH or JAVA_HOME."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if java is None or not Path(java).exists():
        return None
    try:
        key = "\n".join((_jvm_identity(Path(java).resolve()), _class_path_identity(), " ".join(options.split())))
    except OSError:
        return None  # a jar or the JVM changing under us: no archive this run
    ident = hashlib.sha256(key.encode()).hexdigest()[:16]
    return (cache or _cache_dir()) / f"spark-{pyspark.__version__}-{ident}.jsa"


def _jvm_identity(java: Path) -> str:
    """The JVM build: the binary, its `release` file (version and build) and libjvm's size and time."""
    home = java.parent.parent
    parts = [f"{java}:{java.stat().st_mtime_ns}"]
    release = home / "release"
    if release.is_file():
        parts.append(release.read_text(encoding="utf-8", errors="replace"))
    for libjvm in sorted(home.glob("lib/*/libjvm.*")):
        stat = libjvm.stat()
        parts.append(f"{libjvm}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(parts)


def _class_path_identity() -> str:
    """Spark's class path as the JVM checks it against an archive: every jar's path, size and time."""
    from pyspark.find_spark_home import _find_spark_home

    jars = Path(_find_spark_home()) / "jars"  # as the launcher puts it on the class path, not resolved
    entries = []
    for jar in sorted(jars.glob("*.jar")):
        stat = jar.stat()
        entries.append(f"{jar}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(entries)


def java_options(cache: Path | None = None, options: str = "") -> str:
    """JVM options that start from the archive written for these JVM `options` (the other options the
    JVM starts with); "" while there is none (or the cache is unusable)."""
    final = archive_path(cache, options)
    if final is None:
        return ""
    try:
        if not final.exists() and final.parent.is_dir():
            _adopt_finished(final)
    except OSError:
        return ""  # a read-only home: run without the archive rather than fail
    if not final.exists():
        return ""
    with contextlib.suppress(OSError):  # a read-only cache: the archive still serves
        os.utime(final)  # in use: kept by the sweep in finish_build
    return f"-XX:SharedArchiveFile={final} {QUIET_JVM_LOG}"


def claim_build(final: Path) -> bool:
    """Mark that a warm-up is writing `final`; False when another one is at it (or the cache is unusable)."""
    marker = Path(f"{final}.building")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        if marker.exists() and time.time() - marker.stat().st_mtime > _BUILD_TIMEOUT_S:
            marker.unlink(missing_ok=True)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except OSError:
        return False
    os.close(fd)
    return True


def finish_build(final: Path, written: Path) -> None:
    """Move a warm-up's archive into place (once its JVM has exited) and clear the mark."""
    if written.exists() and written.stat().st_size > 0:
        written.replace(final)
        _sweep_unused(final.parent)
    Path(f"{final}.building").unlink(missing_ok=True)


def _sweep_unused(cache: Path) -> None:
    """Remove the archives no JVM started from in UNUSED_S (other installs, other options)."""
    now = time.time()
    for archive in cache.glob("spark-*.jsa"):
        try:
            if now - archive.stat().st_mtime > UNUSED_S:
                archive.unlink()
        except OSError:
            continue  # another process removed or replaced it meanwhile


def _adopt_finished(final: Path) -> None:
    """Rename the newest settled temporary archive into place; remove the other settled ones."""
    now = time.time()
    settled = sorted((p for p in final.parent.glob(final.name + ".tmp-*")
                      if now - p.stat().st_mtime > _SETTLED_S and p.stat().st_size > 0),
                     key=lambda p: p.stat().st_mtime)
    if settled:
        settled[-1].replace(final)
        for stale in settled[:-1]:
            stale.unlink(missing_ok=True)
