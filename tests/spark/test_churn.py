"""Kind `churn` on real Spark: the set of clients holding a group's queues changing too often."""

from tests.spark.kind_samples import at, pq_row

REBALANCES = {
    "alert": "RebalanceChurn", "kind": "churn", "table": "process_queue", "member": "client_id",
    "where": "not dropped", "by": ["cluster", "group"], "over": "10m", "above": {"warning": 2, "critical": 5},
    "summary": "{group}: {value} membership changes; now {members}",
}


def test_changes_of_the_client_set_are_counted(write, evaluate):
    # A deploy: clients come and go every minute; a stable group keeps the same two clients.
    sets = [("a", "b"), ("a", "b"), ("a", "b", "c"), ("b", "c"), ("b", "c"), ("c", "d"), ("c", "d")]
    rows = []
    for i, clients in enumerate(sets):
        ts = at(60 * (len(sets) - 1 - i))
        rows += [pq_row(ts, "deploying", q, f"{c}@1") for q, c in enumerate(clients)]
        rows += [pq_row(ts, "stable", q, f"{c}@1") for q, c in enumerate(("x", "y"))]
        # A dropped ProcessQueue is not membership: this group only looks like it churns.
        rows += [pq_row(ts, "dropping", 0, "x@1"), pq_row(ts, "dropping", 1, f"old{i}@1", dropped=True)]
    write("process_queue", rows)
    found = {f.labels["group"]: f for f in evaluate(REBALANCES)}
    assert set(found) == {"deploying"}
    deploying = found["deploying"]
    assert (deploying.severity, deploying.value, deploying.threshold) == ("warning", 3, 2)
    assert deploying.labels == {"cluster": "c1", "group": "deploying"}
    assert deploying.annotations["summary"] == "deploying: 3 membership changes; now c@1,d@1"


def test_changes_before_the_window_do_not_count(write, evaluate):
    rows = []
    for age in range(0, 1500, 60):
        clients = ("a",) if age < 600 else (("a",) if (age // 60) % 2 else ("b",))  # flapping, then settled
        rows += [pq_row(at(age), "g", 0, f"{c}@1") for c in clients]
    write("process_queue", rows)
    assert evaluate(REBALANCES) == []
