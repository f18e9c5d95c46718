"""The same evaluation on a real Spark standalone cluster (master + worker from the pyspark
distribution, on 127.0.0.1), and through a real Spark Connect server, gives exactly the findings
of local mode.

The store holds the inputs of two built-in rule test files (broker and ProcessQueue symptoms) and
their rule files are evaluated, so several rules fire; `rocketwatch eval --config` runs as a subprocess, as an operator would run it,
once with `spark.master: local[2]` and once with the cluster's `spark://` URL.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pyspark
import pytest

from daemon.store.case_input import START, write_case_input
from daemon.store.writer import ParquetStore
from rules.testing import load_test_file
from tests.helpers.daemon_proc import REPO, free_port

pytestmark = [pytest.mark.acceptance, pytest.mark.timeout(840)]

SPARK_HOME = Path(pyspark.__file__).parent
BUILTIN_TESTS = REPO / "rules" / "builtin" / "tests"
EVAL_AT = START + timedelta(minutes=6)


def _build_store(root: Path) -> None:
    store = ParquetStore(root)
    for name in ("broker-store.test.yaml", "consumer-cache.test.yaml"):
        loaded = load_test_file(BUILTIN_TESTS / name)
        case = loaded.spec.tests[0]
        write_case_input(store, case, case.interval or loaded.spec.evaluation_interval)


def _config(tmp: Path, store: Path, master: str, name: str) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(
        f"""clusters: [{{name: prod, namesrv: ["127.0.0.1:9876"]}}]
state_dir: {tmp / "state"}
store_path: {store}
rules: ["{REPO / 'rules' / 'builtin' / 'broker-store.yaml'}", "{REPO / 'rules' / 'builtin' / 'consumer-cache.yaml'}"]
spark:
  master: "{master}"
  conf: {{spark.driver.host: 127.0.0.1, spark.driver.bindAddress: 127.0.0.1, spark.executor.memory: 512m,
          spark.cores.max: "2"}}
"""
    )
    return path


def _findings(config: Path) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "eval", "--config", str(config), "--at", EVAL_AT.isoformat(),
         "--format", "json"],
        capture_output=True, text=True, cwd=REPO, timeout=180,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return sorted((json.loads(line) for line in out.stdout.splitlines() if line.strip()),
                  key=lambda f: (f["rule"], sorted(f["labels"].items())))


def _spark_class(cls: str, *args: str, log: Path, env: dict[str, str]) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), cls, *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env)


def _wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"nothing listens on {port}; tail:\n{log.read_text(errors='replace')[-3000:]}") from None
            time.sleep(0.5)


def _stop(*procs: subprocess.Popen | None) -> None:
    for proc in procs:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{log.name}: {text!r} not seen; tail:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)


def test_standalone_cluster_gives_the_findings_of_local_mode(tmp_path):
    store = tmp_path / "store"
    _build_store(store)
    local = _findings(_config(tmp_path, store, "local[2]", "local"))
    assert {f["rule"] for f in local} >= {"DispatchBehind", "BrokerPutLatencyHigh"}, local

    port = free_port()
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_WORKER_DIR": str(tmp_path / "work"), "SPARK_LOG_DIR": str(tmp_path / "logs")}
    master = _spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                          "--webui-port", str(free_port()), log=tmp_path / "master.log", env=env)
    worker = None
    try:
        _wait_for(tmp_path / "master.log", "I have been elected leader", master, 90)
        worker = _spark_class("org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
                              "--memory", "1g", "--webui-port", str(free_port()), f"spark://127.0.0.1:{port}",
                              log=tmp_path / "worker.log", env=env)
        _wait_for(tmp_path / "worker.log", "Successfully registered with master", worker, 90)

        remote = _findings(_config(tmp_path, store, f"spark://127.0.0.1:{port}", "cluster"))
        # The work ran on the cluster: the worker started an executor for rocketwatch.
        assert "Asked to launch executor" in (tmp_path / "worker.log").read_text(errors="replace")
    finally:
        _stop(worker, master)
    assert remote == local


def test_spark_connect_server_gives_the_findings_of_local_mode(tmp_path):
    pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect] (the test extra has it)")
    store = tmp_path / "store"
    _build_store(store)
    local = _findings(_config(tmp_path, store, "local[2]", "local"))
    port = free_port()
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    log = tmp_path / "connect.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--master", "local[2]", "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.session.timeZone=UTC"],
            stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_for_port(port, server, log, 120)
        remote = _findings(_config(tmp_path, store, f"sc://127.0.0.1:{port}", "connect"))
        # The work ran in the server: it executed the client's plans as Spark jobs.
        served = log.read_text(errors="replace")
        assert "ExecuteHolder" in served and "DAGScheduler: Job" in served, served[-3000:]
    finally:
        _stop(server)
    assert remote == local
