"""A Spark error that ends a command is one line on the terminal, naming the file with Spark's own account.

One subprocess: `rocketwatch eval` whose Spark settings keep the JVM from starting.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(120)]  # its subprocess starts Spark (which fails)

REPO = Path(__file__).resolve().parents[3]


def test_a_spark_failure_is_one_line_with_the_log_path(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(f'clusters: [{{name: c, namesrv: ["127.0.0.1:9876"]}}]\nstate_dir: {tmp_path / "state"}\n'
                      'spark: {conf: {spark.driver.memory: "plenty"}}\n')
    result = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "eval", "--config", str(config), "--store", str(store)],
        capture_output=True, text=True, cwd=REPO, timeout=110,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("rocketwatch eval: Spark failed: ") and "Traceback" not in result.stderr
    spark_log = Path(line.rsplit("(Spark's log: ", 1)[1].rstrip(")"))
    assert spark_log.parent == tmp_path
    assert "Invalid maximum heap size" in spark_log.read_text()  # the JVM's own reason, kept there
