"""`rocketwatch collect --namesrv HOST:PORT --store DIR --once`: a first look at a cluster, no config."""

from __future__ import annotations

import socket

import pyarrow.dataset as ds

from daemon.cli import main
from daemon.simulator import SimulatorThread
from tests.helpers.waiting import offsets_committed


def _read(store, table):
    return ds.dataset(store / table, format="parquet", partitioning="hive").to_table().to_pylist()


def test_collect_once_writes_every_table_from_a_live_cluster(tmp_path, capsys):
    store = tmp_path / "store"
    # Time runs 10x fast so consumers commit offsets (every 5 s model time) soon; we look once they have.
    with SimulatorThread("healthy", time_scale=0.1, group_a="ordersA", group_b="ordersB") as sim:
        offsets_committed(sim)
        rc = main(["collect", "--namesrv", sim.namesrv_addr, "--store", str(store), "--once"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "DefaultCluster: 2 master(s), 2 group(s) (2 online, 0 offline)" in out
    assert "0 failed" in out

    queues = _read(store, "consumer_queue")
    order = {(r["group"], r["broker"], r["queue_id"]) for r in queues if r["topic"] == "OrderTopic"}
    assert order == {(g, b, q) for g in ("ordersA", "ordersB") for b in ("broker-a", "broker-b") for q in range(4)}
    assert all(r["broker_offset"] >= r["consumer_offset"] >= 0 for r in queues)

    held = _read(store, "process_queue")
    assert {r["group"] for r in held} == {"ordersA", "ordersB"}
    assert all(r["max_span"] == 2000 and r["pull_threshold_for_queue"] == 1000 for r in held)

    health = _read(store, "collector_health")
    assert health and all(r["ok"] for r in health)
    assert {"GET_BROKER_CLUSTER_INFO", "GET_CONSUME_STATS", "GET_CONSUMER_RUNNING_INFO"} <= {r["call"] for r in health}


def test_collect_once_with_no_name_server_says_so(tmp_path, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc = main(["collect", "--namesrv", f"127.0.0.1:{port}", "--store", str(tmp_path), "--once", "--timeout", "1"])
    assert rc == 1
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


def test_collect_once_against_a_53x_cluster_fills_the_native_and_pop_tables(tmp_path, capsys):
    store = tmp_path / "store"
    with SimulatorThread("pop-stuck", time_scale=0.05) as sim:
        sim.fast_forward(20)  # popGroup's threads blocked at 3 s; its client stopped popping since
        rc = main(["collect", "--namesrv", sim.namesrv_addr, "--store", str(store), "--once",
                   "--metrics-port", str(sim.metrics_port)])
    out = capsys.readouterr().out
    assert rc == 0 and "native metrics: 1 page(s) read, 0 failed" in out
    pops = _read(store, "pop_queue")
    assert {(r["group"], r["topic"], r["queue_id"]) for r in pops} == {("popGroup", "PopTopic", -1)}
    assert max(r["wait_ack_count"] for r in pops) > 96
    native = {(r["group"], r["broker"]): r for r in _read(store, "native_consumer")}
    assert native[("popGroup", "broker-a")]["ready"] > 0 and native[("popGroup", "broker-a")]["inflight"] == 0
    assert {r["broker"] for r in _read(store, "native_broker")} == {"broker-a", "broker-b"}
    assert any(r["call"] == "NATIVE_METRICS_SCRAPE" and r["ok"] for r in _read(store, "collector_health"))
    assert {r["pop_mode"] for r in _read(store, "consumer_queue") if r["group"] == "popGroup"} == {True}
