"""A class-data-sharing archive of Spark's classes for the one-shot commands' short-lived JVMs.

A JVM that lives for one evaluation (`rocketwatch diagnose`) spends much of its life loading and
verifying Spark's classes. Java 17 can dump the classes a run loaded into an archive
(-XX:ArchiveClassesAtExit) and map it on later runs (-XX:SharedArchiveFile). Measured cold on
2 cores: session start 3.4 s -> 1.7 s, first plan 3.9 s -> 3.1 s, first collect 3.9 s -> 2.8 s.

Archiving slows the JVM that does it, so no command archives itself: the first diagnose on a
machine starts a detached warm-up (daemon/diagnose/warmup.py) that writes the archive under a
temporary name and moves it into place once its JVM has exited; a temporary archive left by a
warm-up that could not wait is adopted once it has not changed for a minute. The archive is keyed
by the pyspark version and the java binary, and the JVM itself refuses an archive that does not
match it (with -Xshare:auto it then runs without one), so a stale file costs only the speed-up.
JVM logging goes to stderr only: diagnose's stdout may be JSON for a script.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

# A temporary archive untouched this long was finished by a JVM that has exited.
_SETTLED_S = 60.0
# A warm-up that started this long ago and left no archive has failed: another may try.
_BUILD_TIMEOUT_S = 600.0
# Warnings (e.g. an archive that does not match this JVM) to stderr, never to stdout.
QUIET_JVM_LOG = "-Xshare:auto -Xlog:disable -Xlog:all=warning:stderr"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rocketwatch"


def archive_path(cache: Path | None = None) -> Path | None:
    """Where this pyspark + java pair's archive lives; None without a java on PATH or JAVA_HOME."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if java is None or not Path(java).exists():
        return None
    real = Path(java).resolve()
    ident = hashlib.sha256(f"{real}:{real.stat().st_mtime_ns}".encode()).hexdigest()[:12]
    return (cache or _cache_dir()) / f"spark-{pyspark.__version__}-java-{ident}.jsa"


def java_options(cache: Path | None = None) -> str:
    """JVM options that start from the archive; "" while there is none (or the cache is unusable)."""
    final = archive_path(cache)
    if final is None:
        return ""
    try:
        if not final.exists() and final.parent.is_dir():
            _adopt_finished(final)
    except OSError:
        return ""  # a read-only home: run without the archive rather than fail
    return f"-XX:SharedArchiveFile={final} {QUIET_JVM_LOG}" if final.exists() else ""


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
    Path(f"{final}.building").unlink(missing_ok=True)


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
