"""Where the Spark driver JVM's output goes: a log file, not the operator's terminal.

Spark logs through log4j2, and the JVM itself writes to stderr (module warnings, class-data-sharing
notes); pyspark starts that JVM with this process's stdout and stderr. So rocketwatch gives the JVM
its own log4j2 configuration (spark/log4j2.properties), which writes to a file, and starts it with
stdout and stderr on the same file: a command shows only rocketwatch's own lines. The file is the
state directory's when the caller has one, else a temporary file, removed at exit unless something
went wrong in it. With DEBUG logging on (`--log-level debug`) Spark's lines reach the terminal too
and the file's path is logged. A Spark error that ends a command is told in one line naming the
file (`failure_line`).

Imports nothing from pyspark at module level: the CLI asks `failure_line` about any error.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

log = logging.getLogger("rocketwatch.spark")

LOG4J_PROPERTIES = Path(__file__).with_name("log4j2.properties")
# Options a user's own spark.driver.extraJavaOptions may set to take logging over entirely.
_USER_LOG4J = ("-Dlog4j2.configurationFile=", "-Dlog4j.configurationFile=", "-Dlog4j.configuration=")
# What, in a temporary log, means the file is evidence worth keeping after the command exits.
_TROUBLE = ("ERROR", "Error", "Exception", "FATAL")
_MAX_LINE = 300


@dataclass
class SparkOutput:
    """The log file of the process's Spark driver JVM, and whether Spark's lines also reach the terminal."""

    path: Path
    verbose: bool
    temporary: bool
    kept: bool = False
    stream: IO[bytes] | None = None


_current: SparkOutput | None = None


def current() -> SparkOutput | None:
    """The output of the JVM this process started, None before one started."""
    return _current


def prepare(log_file: Path | None) -> SparkOutput:
    """Choose the output of the JVM about to start: `log_file`, or a new temporary file when None."""
    global _current
    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        output = SparkOutput(log_file, verbose, temporary=False)
        log.info("Spark's own log: %s", log_file)
    else:
        fd, name = tempfile.mkstemp(prefix="rocketwatch-spark-", suffix=".log")
        os.close(fd)
        output = SparkOutput(Path(name), verbose, temporary=True)
        atexit.register(_remove_if_clean, output)
        log.debug("Spark's own log: %s", name)
    _current = output
    return output


def java_options(output: SparkOutput, extra: str) -> str:
    """`extra` (the driver's extraJavaOptions) plus what points log4j2 at rocketwatch's file."""
    if any(option in extra for option in _USER_LOG4J):
        return extra  # the operator configured Spark's logging: theirs wins
    console = "warn" if output.verbose else "off"
    ours = (f"-Dlog4j2.configurationFile={_quoted(str(LOG4J_PROPERTIES))} "
            f"-Drocketwatch.spark.log={_quoted(str(output.path))} -Drocketwatch.spark.console={console}")
    return f"{extra} {ours}".strip()


def popen_kwargs(output: SparkOutput) -> dict[str, Any]:
    """How pyspark starts the JVM: stdout always into the log (a command's stdout may be JSON),
    stderr too unless the operator asked for debug output."""
    output.stream = open(output.path, "ab")  # noqa: SIM115 - the JVM writes to it for the process's life
    kwargs: dict[str, Any] = {"stdout": output.stream}
    if not output.verbose:
        kwargs["stderr"] = output.stream
    return kwargs


def failure_line(exc: BaseException) -> str | None:
    """`Spark failed: <what> (Spark's log: <path>)` when `exc` or an error behind it came from Spark, else None."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        what = _spark_message(error)
        if what is not None:
            where = ""
            if _current is not None:
                _current.kept = True
                where = f" (Spark's log: {_current.path})"
            return f"Spark failed: {what}{where}"
        error = error.__cause__ or error.__context__
    return None


def _spark_message(error: BaseException) -> str | None:
    module = type(error).__module__
    if not module.startswith(("py4j", "pyspark")):
        return None
    text = str(error)
    from py4j.protocol import Py4JJavaError

    if isinstance(error, Py4JJavaError):
        # Without py4j's "An error occurred while calling o42..."; when the JVM is gone, py4j's text stays.
        with contextlib.suppress(Exception):
            text = error.java_exception.toString()
    lines = [line.strip().lstrip(": ") for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else type(error).__name__
    return first if len(first) <= _MAX_LINE else first[: _MAX_LINE - 1] + "…"


def _quoted(path: str) -> str:
    # Spark's launcher splits extraJavaOptions like a shell: a state directory may hold spaces.
    return f'"{path}"' if " " in path else path


def _remove_if_clean(output: SparkOutput) -> None:
    """At exit: drop a temporary log nobody will read (no error in it, not asked for, not named in an error)."""
    if output.kept or output.verbose:
        return
    try:
        with open(output.path, "rb") as f:
            f.seek(max(0, output.path.stat().st_size - 2**20))
            tail = f.read().decode(errors="replace")
        if not any(word in tail for word in _TROUBLE):
            output.path.unlink()
    except OSError:
        pass
