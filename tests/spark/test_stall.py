"""Kind `stall` on real Spark: Burrow's STALL (frozen with work waiting) vs idle, and the stuck message."""

from datetime import timedelta

from tests.spark.kind_samples import at, cq_row, pq_row

OFFSET_STALL = {
    "alert": "CommitStalled", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset",
    "while": "lag > 0", "over": "5m", "critical_after": "10m",
    "summary": "{group} {broker}/{queue_id} offset {consumer_offset} frozen {value}s",
}
CYCLES = range(0, 721, 30)  # every 30 s for 12 minutes


def test_frozen_offset_with_lag_stalls_idle_and_moving_queues_do_not(write, evaluate):
    rows = []
    for age in CYCLES:
        ts = at(age)
        rows.append(cq_row(ts, "stuck", 0, broker_offset=5000 - age, consumer_offset=1200))  # frozen, lag grows
        rows.append(cq_row(ts, "idle", 0, broker_offset=800, consumer_offset=800))  # frozen, nothing to do
        rows.append(cq_row(ts, "busy", 0, broker_offset=9000 - age, consumer_offset=8000 - age))  # moving
        # Frozen for the last 6 minutes only: a warning, not yet critical.
        rows.append(cq_row(ts, "recent", 0, broker_offset=3000, consumer_offset=2000 if age <= 360 else 1000 + age))
    write("consumer_queue", rows)
    found = {f.labels["group"]: f for f in evaluate(OFFSET_STALL)}
    assert set(found) == {"stuck", "recent"}
    stuck = found["stuck"]
    assert stuck.severity == "critical" and stuck.threshold == 600 and stuck.value >= 600
    assert stuck.annotations["summary"].startswith("stuck broker-a/0 offset 1200 frozen ")
    assert (found["recent"].severity, found["recent"].value, found["recent"].threshold) == ("warning", 360, 300)


def test_a_sample_without_work_ends_the_stall(write, evaluate):
    # Lag dropped to 0 two minutes ago (the consumer caught up, then new messages came): no stall yet.
    rows = [cq_row(at(age), "g", 0, broker_offset=1000 if age == 120 else 1500, consumer_offset=1000)
            for age in CYCLES]
    write("consumer_queue", rows)
    assert evaluate(OFFSET_STALL) == []


def test_stuck_message_cache_frozen_while_the_client_keeps_pulling(write, evaluate):
    stuck_message = {
        "alert": "StuckMessage", "kind": "stall", "table": "process_queue", "value": "cached_min_offset",
        "while": "cached_msg_count > 0", "moving": "last_pull_ts", "over": "3m",
        "summary": "{client_id}: offset {cached_min_offset} not consumed for {value}s",
    }
    rows = []
    for age in range(0, 301, 30):
        ts = at(age)
        # Pulls continue (last_pull_ts advances), the oldest cached message stays at 4242.
        rows.append(pq_row(ts, "g", 0, "c1@1", cached_msg_count=3, cached_min_offset=4242,
                           cached_max_offset=4300 + age, last_pull_ts=ts))
        # Frozen too, but the client stopped pulling altogether: another rule's business (not this one).
        rows.append(pq_row(ts, "g", 1, "c1@1", cached_msg_count=3, cached_min_offset=10,
                           cached_max_offset=20, last_pull_ts=at(400)))
    write("process_queue", rows)
    (found,) = evaluate(stuck_message)
    # Frozen for 5 minutes, but the rule reads over + stale_after (4 minutes) back: it says "at least 240 s".
    assert found.labels["queue_id"] == "0" and found.severity == "warning" and found.value == 240
    assert found.annotations["summary"] == "c1@1: offset 4242 not consumed for 240s"


def test_stale_stalled_series_is_no_data(write, evaluate):
    write("consumer_queue", [cq_row(at(age), "g", 0, broker_offset=900, consumer_offset=100)
                             for age in range(120, 601, 30)])
    (found,) = evaluate(OFFSET_STALL)
    assert found.no_data and found.severity is None


def test_series_without_a_sample_since_over_are_still_judged(write, evaluate):
    # The prefilter reads only the samples since now - over; these two have none there, and the
    # evaluator's newest times name them. "late" is fresh (stale_after 3m > over 1m), "gone" is stale.
    short = {**OFFSET_STALL, "over": "1m"}
    rows = [cq_row(at(age), "late", 0, broker_offset=900, consumer_offset=100) for age in range(90, 601, 30)]
    rows += [cq_row(at(age), "gone", 0, broker_offset=900, consumer_offset=100) for age in range(400, 701, 30)]
    write("consumer_queue", rows)
    found = {f.labels["group"]: f for f in evaluate(short, stale_after=timedelta(minutes=3))}
    assert (found["late"].severity, found["late"].value, found["late"].no_data) == ("warning", 510, False)
    assert found["gone"].no_data and found["gone"].severity is None


def test_runs_broken_restarted_and_gone_are_judged_alike_from_the_window_and_the_kept_runs(write, evaluate):
    """Frozen all along, frozen since a change, broken by `while`, moving, and gone: the kept runs
    (the evaluate fixture compares them with the window) find the same stalls."""
    rows = []
    for age in CYCLES:
        ts = at(age)
        lag = dict(broker_offset=9000)
        rows.append(cq_row(ts, "frozen", 0, consumer_offset=1200, **lag))
        rows.append(cq_row(ts, "moving", 0, consumer_offset=8000 - age, **lag))
        # Changed 5.5 minutes ago, frozen since: longer than `over` although the window saw a change.
        rows.append(cq_row(ts, "frozen-since", 0, consumer_offset=2000 if age <= 330 else 1000, **lag))
        # Caught up once, 2 minutes ago (while false), frozen otherwise.
        rows.append(cq_row(ts, "caught-up", 0, consumer_offset=9000 if age == 120 else 1500, **lag))
        if age >= 150:  # changing, then gone for 2.5 minutes: stale
            rows.append(cq_row(ts, "gone", 0, consumer_offset=100 + age, **lag))
    write("consumer_queue", rows)

    def summary(found):
        return sorted((f.labels["group"], f.severity, f.value, f.no_data) for f in found)

    # Frozen for the whole window read (critical_after + stale_after: 11 minutes).
    assert summary(evaluate(OFFSET_STALL)) == [("frozen", "critical", 660.0, False), ("frozen-since", "warning", 330.0, False),
                      ("gone", None, None, True)]
