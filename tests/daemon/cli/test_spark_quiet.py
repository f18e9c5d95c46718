"""A command that starts Spark shows only rocketwatch's own lines: Spark's and the JVM's go to a file.

One subprocess (Spark in it starts cold): `rocketwatch analyze` of a real 4.9.7 client log.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures_path import CAPTURE

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]  # its subprocess starts Spark

REPO = Path(__file__).resolve().parents[3]
# What Spark, log4j and the JVM print on their own (a log4j line, the JVM's notes): not an operator's business.
FOREIGN = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d [A-Z]+ |log4j|NativeCodeLoader|Using Spark's|setLogLevel"
                     r"|^WARNING: |jdk\.incubator|ShutdownHookManager|\[cds")


def test_analyze_shows_only_rocketwatch_lines_and_leaves_no_log_behind(tmp_path: Path) -> None:
    client_log = CAPTURE / "logs" / "rocketmq_client_stuckGroup.log"
    result = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "analyze", str(client_log)],
        capture_output=True, text=True, cwd=REPO, timeout=230,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("rocketwatch analyze")
    foreign = [line for line in (result.stdout + result.stderr).splitlines() if FOREIGN.search(line)]
    assert foreign == [], "Spark's or the JVM's own lines reached the terminal"
    assert result.stderr == ""
    # Spark's temporary log held nothing wrong: it is not left in the temporary directory.
    assert list(tmp_path.glob("rocketwatch-spark-*.log")) == []
