"""Kind `absent` on real Spark: a broker whose rows stopped, a collector target that stopped answering."""

from tests.spark.kind_samples import at

BROKER_SILENT = {
    "alert": "BrokerSilent", "kind": "absent", "table": "broker", "over": "30m", "critical_after": "10m",
    "summary": "{broker} ({addr}) silent for {value}s",
}


def _broker(ts, name, addr):
    return dict(ts=ts, cluster="c1", broker=name, broker_id=0, addr=addr)


def test_a_broker_that_stopped_reporting_fires_and_escalates(write, evaluate):
    rows = [_broker(at(age), "broker-a", "10.0.0.1:10911") for age in range(0, 1200, 30)]
    rows += [_broker(at(age), "broker-b", "10.0.0.2:10911") for age in range(240, 1200, 30)]  # stopped 4 min ago
    rows += [_broker(at(age), "broker-c", "10.0.0.3:10911") for age in range(900, 1200, 30)]  # stopped 15 min ago
    rows += [_broker(at(age), "broker-old", "10.0.0.4:10911") for age in range(1900, 2000, 30)]  # before the window
    write("broker", rows)
    found = {f.labels["broker"]: f for f in evaluate(BROKER_SILENT)}
    assert set(found) == {"broker-b", "broker-c"}
    assert (found["broker-b"].severity, found["broker-b"].value, found["broker-b"].threshold) == ("warning", 240, 60)
    assert (found["broker-c"].severity, found["broker-c"].threshold) == ("critical", 600)
    assert found["broker-b"].annotations["summary"] == "broker-b (10.0.0.2:10911) silent for 240s"
    assert not any(f.no_data for f in found.values())


def test_target_unreachable_counts_only_successful_calls(write, evaluate):
    def health(ts, target, ok):
        return dict(ts=ts, cluster="c1", target=target, call="GET_BROKER_RUNTIME_INFO", ok=ok,
                    error=None if ok else "connect timeout", latency_ms=3.0)

    rows = [health(at(age), "10.0.0.1:10911", True) for age in range(0, 600, 30)]
    rows += [health(at(age), "10.0.0.2:10911", age > 150) for age in range(0, 600, 30)]  # failing for 150 s
    write("collector_health", rows)
    unreachable = {"alert": "TargetUnreachable", "kind": "absent", "table": "collector_health", "where": "ok",
                   "by": ["cluster", "target"], "over": "1h", "summary": "{target}: no answer for {value}s"}
    (found,) = evaluate(unreachable)
    assert found.labels == {"cluster": "c1", "target": "10.0.0.2:10911"} and found.value == 180
