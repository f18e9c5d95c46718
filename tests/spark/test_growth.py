"""Kind `growth` on real Spark: DLQ increase per group, counter resets, rates, gauges, no_data."""

from tests.spark.kind_samples import at, tq_row

DLQ_GROWTH = {
    "alert": "DlqGrowing", "kind": "growth", "table": "topic_queue", "value": "max_offset",
    "where": "topic_kind == 'dlq'", "over": "10m", "by": ["cluster", "group"], "reduce": "sum",
    "above": {"warning": 0, "critical": 100}, "summary": "{group}: {value} new dead letters in 10m",
}


def _dlq(ts, group, q, offset):
    return tq_row(ts, f"%DLQ%{group}", q, offset, kind="dlq", group=group)


def test_increase_sums_the_groups_queues_and_picks_the_level(write, evaluate):
    rows = []
    for age, a0, a1, b0 in ((540, 10, 0, 7), (300, 30, 5, 7), (0, 90, 60, 7)):
        rows += [_dlq(at(age), "orders", 0, a0), _dlq(at(age), "orders", 1, a1), _dlq(at(age), "billing", 0, b0)]
    # Older than the 10-minute window: the jump from 0 to 10 happened before it and is not counted.
    rows += [_dlq(at(900), "orders", 0, 0)]
    write("topic_queue", rows)
    found = {f.labels["group"]: f for f in evaluate(DLQ_GROWTH)}
    assert set(found) == {"orders"}  # billing's DLQ did not move
    orders = found["orders"]
    assert (orders.severity, orders.value, orders.threshold) == ("critical", 140, 100)
    assert orders.labels == {"cluster": "c1", "group": "orders"}
    assert orders.annotations["summary"] == "orders: 140 new dead letters in 10m"


def test_a_counter_reset_counts_from_zero_not_as_a_drop(write, evaluate):
    # Broker restarted with a recreated queue: 50 -> 3 is a reset, so the increase is 20 + 3 + 4.
    offsets = [(300, 30), (200, 50), (100, 3), (0, 7)]
    write("topic_queue", [_dlq(at(age), "orders", 0, off) for age, off in offsets])
    (orders,) = evaluate(DLQ_GROWTH)
    assert (orders.severity, orders.value, orders.threshold) == ("warning", 27, 0)


def test_rate_is_per_second_and_a_gauge_may_shrink(write, evaluate):
    write("topic_queue", [tq_row(at(age), "Backlog", 0, off) for age, off in ((300, 1000), (0, 4000))]
          + [tq_row(at(age), "Draining", 0, off) for age, off in ((300, 5000), (0, 2000))])
    rate = {"alert": "WriteRate", "kind": "growth", "table": "topic_queue", "value": "max_offset", "over": "10m",
            "measure": "rate", "where": "topic == 'Backlog'", "above": {"warning": 5, "critical": 20}}
    shrink = {"alert": "Shrinking", "kind": "growth", "table": "topic_queue", "value": "max_offset", "over": "10m",
              "counter": False, "below": {"warning": -1000}}
    found = {(f.rule, f.labels["topic"]): f for f in evaluate(rate, shrink)}
    assert set(found) == {("WriteRate", "Backlog"), ("Shrinking", "Draining")}
    assert (found[("WriteRate", "Backlog")].severity, found[("WriteRate", "Backlog")].value) == ("warning", 10)
    assert (found[("Shrinking", "Draining")].severity, found[("Shrinking", "Draining")].value) == ("warning", -3000)


def test_stale_series_is_no_data_and_a_single_sample_is_no_growth(write, evaluate):
    write("topic_queue", [_dlq(at(500), "gone", 0, 10), _dlq(at(400), "gone", 0, 90), _dlq(at(10), "new", 0, 500)])
    (gone,) = evaluate(DLQ_GROWTH)
    assert gone.labels["group"] == "gone" and gone.no_data and gone.severity is None


def test_the_table_is_read_as_far_back_as_the_longest_window(write, evaluate):
    # Hourly growth of 40 written 50 minutes ago; a threshold rule on the same table shares the read.
    write("topic_queue", [_dlq(at(3000), "orders", 0, 10), _dlq(at(1200), "orders", 0, 50), _dlq(at(0), "orders", 0, 50)])
    hourly = {**DLQ_GROWTH, "alert": "DlqHourly", "over": "1h", "above": {"warning": 30}}
    stored = {"alert": "DlqStored", "kind": "threshold", "table": "topic_queue", "value": "messages",
              "where": "topic_kind == 'dlq'", "above": {"warning": 40}}
    found = {f.rule: f for f in evaluate(DLQ_GROWTH, hourly, stored)}
    assert set(found) == {"DlqHourly", "DlqStored"}  # nothing new in the last 10 minutes
    assert (found["DlqHourly"].value, found["DlqStored"].value) == (40, 50)
