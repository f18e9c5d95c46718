"""Writes the Spark class archive later JVMs start from (daemon/diagnose/class_archive.py).

Run in the background, detached: by the first diagnose on a machine once its verdict is printed,
and by the daemon after its first evaluation, for the JVM options each runs with. Archiving slows
a JVM down (a diagnose run that archives took 33 s instead of 15 s), so no operator waits for it.
It starts Spark as its user does and runs what that user runs on the inputs of the built-in
pack's own rule tests, so the classes its user loads are the ones archived: diagnose's reference
path (interpreted), or the daemon's kept-state cycles (interpreted, as a small cluster's, and
generated, as a big one's) and the reference path it falls back to. Then it waits for the JVM to
exit (the archive is written then) and moves the archive into place.

    python -m daemon.diagnose.warmup                           # for diagnose
    python -m daemon.diagnose.warmup --daemon [--options "…"]  # for the daemon (with its JVM's options)

`make test` writes the daemon's before the tests that start Spark, so their JVMs start from it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path

from daemon.diagnose.class_archive import archive_path, claim_build, finish_build, java_options

OFF_ENV = "ROCKETWATCH_CLASS_ARCHIVE"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def start_in_background(options: str | None = None) -> bool:
    """Start the warm-up as a detached process unless an archive exists or is being written; True if started.

    For diagnose without `options`; for the daemon with its JVM's options."""
    if os.environ.get(OFF_ENV) == "off":
        return False
    from daemon.diagnose.rules_eval import SHORT_LIVED_JVM

    final = archive_path(options=SHORT_LIVED_JVM if options is None else options)
    if final is None or final.exists() or not claim_build(final):
        return False
    command = [sys.executable, "-m", "daemon.diagnose.warmup"]
    if options is not None:
        command += ["--daemon", "--options", options]
    try:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, cwd=Path(__file__).resolve().parents[2])
    except OSError:
        finish_build(final, Path(f"{final}.none"))  # only clears the mark: the next run tries again
        return False
    return True


def daemon_java_options(conf: Mapping[str, str]) -> str:
    """The JVM options of a daemon whose Spark settings are `conf` (its own, else spark/session.py's)."""
    from spark.session import DEFAULTS

    return conf.get(JAVA_OPTIONS) or DEFAULTS[JAVA_OPTIONS]


def daemon_session_conf(master: str, conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with the daemon's JVM started from the archive written for its options, when there is one."""
    if master.startswith("sc://"):
        return dict(conf)  # a Spark Connect client starts no JVM
    options = daemon_java_options(conf)
    return {**conf, JAVA_OPTIONS: f"{options} {java_options(options=options)}".strip()}


def _workload(session: object, daemon: bool) -> None:
    """The built-in pack on the inputs of its own rule tests, all in one store: diagnose's reference
    path, and for the daemon first its kept-state cycles, interpreted and generated."""
    from daemon.diagnose.rules_eval import builtin_rules
    from daemon.store.case_input import START, write_case_input
    from daemon.store.writer import ParquetStore
    from rules.loader import BUILTIN_DIR
    from rules.testing import load_test_file
    from spark.evaluate import Evaluator
    from spark.reference import evaluate_reference
    from spark.sizing import Sizing

    with tempfile.TemporaryDirectory(prefix="rocketwatch-warmup-") as tmp:
        store = ParquetStore(Path(tmp) / "store")
        for path in sorted((Path(BUILTIN_DIR) / "tests").glob("*.test.yaml")):
            loaded = load_test_file(path)
            case = loaded.spec.tests[0]
            write_case_input(store, case, case.interval or loaded.spec.evaluation_interval)
        at, stale = START + timedelta(minutes=6), timedelta(minutes=1)
        if daemon:
            for sizing in (Sizing(), Sizing(generated_min_rows=0)):
                evaluator = Evaluator(session, store.root, sizing, saved_state=Path(tmp) / "state")  # type: ignore[arg-type]
                evaluator.evaluate(builtin_rules(), at, stale)
                evaluator.evaluate(builtin_rules(), at + timedelta(seconds=30), stale)
                evaluator.save()
        evaluate_reference(session, store.root, builtin_rules(), at, stale)


def main(argv: Sequence[str] | None = None) -> None:
    """Start Spark as diagnose (or the daemon) does while archiving its classes, run its work, and put the archive in place."""
    parser = argparse.ArgumentParser(prog="python -m daemon.diagnose.warmup")
    parser.add_argument("--daemon", action="store_true", help="archive what the daemon loads")
    parser.add_argument("--options", help="the JVM options the archive is for (default: its user's default ones)")
    args = parser.parse_args(argv)
    # Beside a running daemon (and its JVM) on few cores: its cycles come first.
    os.nice(19)
    from daemon.diagnose.class_archive import QUIET_JVM_LOG
    from daemon.diagnose.rules_eval import SHORT_LIVED_JVM
    from spark.session import get_session, stop_session
    from spark.sizing import INTERPRETED

    if args.options is not None:
        options = args.options
    else:
        options = daemon_java_options({}) if args.daemon else SHORT_LIVED_JVM
    final = archive_path(options=options)  # keyed by the options its user's JVM runs with
    if final is None or final.exists():
        return
    final.parent.mkdir(parents=True, exist_ok=True)  # run by make on a fresh machine: no cache yet
    written = Path(f"{final}.tmp-{os.getpid()}")
    conf = {} if args.daemon else dict(INTERPRETED)
    session = get_session("local[2]", {**conf, JAVA_OPTIONS: f"{options} -XX:ArchiveClassesAtExit={written} {QUIET_JVM_LOG}"})
    from pyspark import SparkContext

    jvm = getattr(SparkContext._gateway, "proc", None)  # the JVM process pyspark launched
    try:
        _workload(session, args.daemon)
    finally:
        stop_session()
    if jvm is not None and jvm.stdin is not None:
        jvm.stdin.close()  # the JVM exits when its stdin closes, and writes the archive as it does
        jvm.wait(timeout=300)
        finish_build(final, written)


if __name__ == "__main__":
    main()
