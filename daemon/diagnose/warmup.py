"""Writes the Spark class archive diagnose's later runs start from (daemon/diagnose/class_archive.py).

Run in the background, detached, by the first diagnose on a machine once its verdict is printed:
archiving slows a JVM down (a run that archives took 33 s instead of 15 s), so no operator waits
for it. It starts Spark exactly as diagnose does and evaluates the built-in pack on the inputs
of the pack's own rule tests, so the classes a diagnose loads are the ones archived; then it
waits for the JVM to exit (the archive is written then) and moves the archive into place.

    python -m daemon.diagnose.warmup
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from daemon.diagnose.class_archive import archive_path, claim_build, finish_build

OFF_ENV = "ROCKETWATCH_CLASS_ARCHIVE"


def start_in_background() -> bool:
    """Start the warm-up as a detached process unless an archive exists or is being written; True if started."""
    if os.environ.get(OFF_ENV) == "off":
        return False
    from daemon.diagnose.rules_eval import SHORT_LIVED_JVM

    final = archive_path(options=SHORT_LIVED_JVM)
    if final is None or final.exists() or not claim_build(final):
        return False
    try:
        subprocess.Popen([sys.executable, "-m", "daemon.diagnose.warmup"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         cwd=Path(__file__).resolve().parents[2])
    except OSError:
        finish_build(final, Path(f"{final}.none"))  # only clears the mark: the next run tries again
        return False
    return True


def _workload(session: object) -> None:
    """The built-in pack evaluated on the inputs of its own rule tests, all in one store."""
    from daemon.diagnose.rules_eval import builtin_rules
    from daemon.store.case_input import START, write_case_input
    from daemon.store.writer import ParquetStore
    from rules.loader import BUILTIN_DIR
    from rules.testing import load_test_file
    from spark.reference import evaluate_reference

    with tempfile.TemporaryDirectory(prefix="rocketwatch-warmup-") as tmp:
        store = ParquetStore(Path(tmp) / "store")
        for path in sorted((Path(BUILTIN_DIR) / "tests").glob("*.test.yaml")):
            loaded = load_test_file(path)
            case = loaded.spec.tests[0]
            write_case_input(store, case, case.interval or loaded.spec.evaluation_interval)
        evaluate_reference(session, store.root, builtin_rules(), START + timedelta(minutes=6), timedelta(minutes=1))


def main() -> None:
    """Start Spark as diagnose does while archiving its classes, evaluate, and put the archive in place."""
    from daemon.diagnose.class_archive import QUIET_JVM_LOG
    from daemon.diagnose.rules_eval import SHORT_LIVED_JVM
    from spark.session import get_session, stop_session
    from spark.sizing import INTERPRETED

    final = archive_path(options=SHORT_LIVED_JVM)  # keyed by the options diagnose's JVM runs with
    if final is None:
        return
    written = Path(f"{final}.tmp-{os.getpid()}")
    session = get_session("local[2]", {**INTERPRETED, "spark.driver.extraJavaOptions":
                                       f"{SHORT_LIVED_JVM} -XX:ArchiveClassesAtExit={written} {QUIET_JVM_LOG}"})
    from pyspark import SparkContext

    jvm = getattr(SparkContext._gateway, "proc", None)  # the JVM process pyspark launched
    try:
        _workload(session)
    finally:
        stop_session()
    if jvm is not None and jvm.stdin is not None:
        jvm.stdin.close()  # the JVM exits when its stdin closes, and writes the archive as it does
        jvm.wait(timeout=300)
        finish_build(final, written)


if __name__ == "__main__":
    main()
