"""With --log-level debug, Spark's own lines do reach the terminal, and the path of their file is told.

One subprocess: `rocketwatch eval` of an empty store.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]  # its subprocess starts Spark

REPO = Path(__file__).resolve().parents[3]


def test_debug_shows_sparks_lines_and_names_their_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "eval", "--store", str(store), "--log-level", "debug"],
        capture_output=True, text=True, cwd=REPO, timeout=230,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    told = re.search(r"Spark's own log: (\S+)", result.stderr)
    assert told, result.stderr[-3000:]
    spark_log = Path(told.group(1))
    assert spark_log.parent == tmp_path and spark_log.is_file(), "the file is kept for the operator who asked"
    logged = [line.split(" ", 2)[2] for line in spark_log.read_text().splitlines() if " WARN " in line]
    assert logged, "Spark's warnings are in the file"
    assert all(message in result.stderr for message in logged), "and on the terminal, at debug"
