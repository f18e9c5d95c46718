"""Kind `peer` on real Spark: one group lagging while its peers keep up, or every group lagging."""

from tests.spark.kind_samples import at, cq_row

ONE_LAGS = {
    "alert": "OneGroupLags", "kind": "peer", "table": "consumer_queue", "value": "lag", "reduce": "sum",
    "peers_by": ["cluster", "topic"], "member": "group", "above": {"warning": 1000, "critical": 10000},
    "summary": "{group} lags {value} on {topic}; {peers} peers at {peer_value}, {peers_above} lagging",
}
ALL_LAG = {**ONE_LAGS, "alert": "AllGroupsLag", "mode": "all", "summary": "all {peers} groups on {topic} lag >= {value}"}


def _topic(ts, topic, lags):
    """Two queues per group; `lags` maps group -> total lag."""
    return [cq_row(ts, group, q, topic=topic, broker_offset=100_000, consumer_offset=100_000 - lag // 2)
            for group, lag in lags.items() for q in (0, 1)]


def test_one_group_lagging_on_a_topic_is_the_consumers_problem(write, evaluate):
    rows = _topic(at(5), "Orders", {"slow": 30_000, "fast": 0, "audit": 200})
    rows += _topic(at(5), "Pay", {"p1": 5000, "p2": 4000, "p3": 0})  # two of three lag: median 2000, not fine
    rows += _topic(at(5), "Solo", {"alone": 50_000})  # no peers: a threshold rule's business
    write("consumer_queue", rows)
    found = evaluate(ONE_LAGS, ALL_LAG)
    assert [(f.rule, f.labels["group"]) for f in found] == [("OneGroupLags", "slow")]
    slow = found[0]
    assert (slow.severity, slow.value, slow.threshold) == ("critical", 30_000, 10_000)
    assert slow.labels == {"cluster": "c1", "topic": "Orders", "group": "slow"}
    assert slow.annotations["summary"] == "slow lags 30000 on Orders; 2 peers at 100, 0 lagging"


def test_all_groups_lagging_is_the_brokers_problem(write, evaluate):
    write("consumer_queue", _topic(at(5), "Orders", {"a": 20_000, "b": 12_000, "c": 3000})
          + _topic(at(5), "Solo", {"alone": 50_000}))  # one member is below min_members
    found = evaluate(ONE_LAGS, ALL_LAG)
    assert [(f.rule, f.labels) for f in found] == [("AllGroupsLag", {"cluster": "c1", "topic": "Orders"})]
    (everyone,) = found
    assert (everyone.severity, everyone.value, everyone.threshold) == ("warning", 3000, 1000)
    assert everyone.annotations["summary"] == "all 3 groups on Orders lag >= 3000"


def test_a_stale_member_is_no_data_and_not_a_peer(write, evaluate):
    write("consumer_queue", _topic(at(5), "Orders", {"slow": 30_000, "fast": 0})
          + _topic(at(300), "Orders", {"gone": 90_000}))
    found = {f.labels["group"]: f for f in evaluate(ONE_LAGS)}
    assert set(found) == {"slow", "gone"}
    assert found["gone"].no_data and not found["slow"].no_data
    assert "1 peers at 0" in found["slow"].annotations["summary"]
