"""Views on real Spark: consumer_group, queue_owner and topic_activity as rules read them."""

from tests.spark.kind_samples import at, cq_row, pq_row, tq_row

TS = at(5)


def _client(group, client, *, model="CLUSTERING", subs="OrderTopic=*"):
    return dict(ts=TS, cluster="c1", group=group, client_id=client, client_addr="10.0.0.9:5000", language="JAVA",
                version=433, consume_type="CONSUME_PASSIVELY", message_model=model, subscriptions=subs)


def _status(group, client, ok_tps):
    return dict(ts=TS, cluster="c1", group=group, client_id=client, topic="OrderTopic", pull_rt_ms=1.0, pull_tps=ok_tps,
                consume_rt_ms=2.0, consume_ok_tps=ok_tps, consume_failed_tps=0.5, consume_failed_msgs_1h=3)


def test_consumer_group_joins_lag_clients_tps_retries_and_peers(write, evaluate):
    write("consumer_queue", [
        cq_row(TS, "slow", 0, broker_offset=9000, consumer_offset=1000, consume_delay_ms=60_000),
        cq_row(TS, "slow", 1, broker_offset=9000, consumer_offset=4000, consume_delay_ms=20_000, pull_offset=5000),
        cq_row(TS, "slow", 0, topic="%RETRY%slow", broker_offset=70, consumer_offset=30),
        cq_row(TS, "offline", 0, broker_offset=5000, consumer_offset=2000),
        cq_row(TS, "fine", 0, broker_offset=9000, consumer_offset=9000),
    ])
    write("consumer_client", [_client("slow", "a@1"), _client("slow", "b@1", subs="OrderTopic=TagA || TagB;Other=*"),
                              _client("fine", "f@1")])
    write("consumer_status", [_status("slow", "a@1", 10.0), _status("slow", "b@1", 2.5)])
    write("topic_queue", [tq_row(TS, "%DLQ%slow", 0, 12, kind="dlq", group="slow"),
                          tq_row(TS, "%RETRY%slow", 0, 70, kind="retry", group="slow"),
                          tq_row(TS, "OrderTopic", 0, 9000)])
    show = {
        "alert": "GroupRow", "kind": "threshold", "table": "consumer_group", "value": "lag", "above": {"warning": -1},
        "summary": "q={queues} lag={lag} avail={available} delay={max_consume_delay_ms} clients={online_clients} "
                   "tps={consume_ok_tps} bc={is_broadcast} tag={tag_filtered} retry={retry_lag} dlq={dlq_total} "
                   "rt={retry_total} peers={peer_groups_lagging}/{peer_groups}",
    }
    found = {f.labels["group"]: f.annotations["summary"] for f in evaluate(show)}
    assert found == {
        "slow": "q=2 lag=13000 avail=12000 delay=60000 clients=2 tps=12.5 bc=false tag=true retry=40 dlq=12 "
                "rt=70 peers=1/2",
        "offline": "q=1 lag=3000 avail=3000 delay=n/a clients=0 tps=0 bc=false tag=false retry=0 dlq=0 "
                   "rt=0 peers=1/2",
        "fine": "q=1 lag=0 avail=0 delay=n/a clients=1 tps=0 bc=false tag=false retry=0 dlq=0 rt=0 peers=2/2",
    }


def test_group_offline_with_lag_reads_like_one_rule(write, evaluate):
    write("consumer_queue", [cq_row(TS, "offline", 0, broker_offset=5000, consumer_offset=2000),
                             cq_row(TS, "online", 0, broker_offset=5000, consumer_offset=2000)])
    write("consumer_client", [_client("online", "a@1")])
    offline = {"alert": "GroupOffline", "kind": "threshold", "table": "consumer_group", "value": "lag",
               "where": "online_clients == 0 and not is_broadcast", "above": {"critical": 0}}
    assert [f.labels["group"] for f in evaluate(offline)] == ["offline"]


def test_queue_owner_counts_clients_holding_a_queue(write, evaluate):
    write("process_queue", [pq_row(TS, "g", 0, "a@1"), pq_row(TS, "g", 0, "b@1"), pq_row(TS, "g", 1, "a@1"),
                            pq_row(TS, "g", 2, "a@1"), pq_row(TS, "g", 2, "c@1", dropped=True)])
    twice = {"alert": "QueueHeldTwice", "kind": "threshold", "table": "queue_owner", "value": "owners",
             "above": {"critical": 1}, "summary": "{broker}/{queue_id} held by {clients}"}
    (found,) = evaluate(twice)
    assert found.labels["queue_id"] == "0" and found.value == 2
    assert found.annotations["summary"] == "broker-a/0 held by a@1,b@1"


def test_topic_activity_compares_last_write_with_the_brokers_put_rate(write, evaluate):
    write("topic_queue", [tq_row(TS, "Quiet", q, 100, last_update_ts=at(905)) for q in (0, 1)]
          + [tq_row(TS, "Busy", 0, 5000, last_update_ts=at(6))])
    write("broker", [dict(ts=TS, cluster="c1", broker="broker-a", broker_id=0, addr="10.0.0.1:10911", put_tps=850.0),
                     dict(ts=TS, cluster="c1", broker="broker-a", broker_id=1, addr="10.0.0.2:10911", put_tps=0.0)])
    stale = {"alert": "TopicStale", "kind": "threshold", "table": "topic_activity", "value": "update_age_s",
             "where": "broker_put_tps > 100", "above": {"warning": 600},
             "summary": "{topic} on {broker}: last write {value}s ago, broker puts {broker_put_tps}/s, "
                        "{max_offset_total} written"}
    (found,) = evaluate(stale)
    assert found.annotations["summary"] == "Quiet on broker-a: last write 900s ago, broker puts 850/s, 200 written"


def test_a_view_without_its_main_table_gives_nothing(write, evaluate):
    write("consumer_client", [_client("g", "a@1")])
    rule = {"alert": "GroupRow", "kind": "threshold", "table": "consumer_group", "value": "lag",
            "above": {"warning": -1}}
    assert evaluate(rule) == []


def test_rules_with_windows_and_peers_read_views_cycle_by_cycle(write, evaluate):
    cq, tq = [], []
    for age, dead in ((300, 5), (150, 40), (0, 90)):
        ts = at(age)
        cq += [cq_row(ts, "orders", 0, broker_offset=9000, consumer_offset=1000),
               cq_row(ts, "billing", 0, broker_offset=9000, consumer_offset=8990),
               cq_row(ts, "audit", 0, broker_offset=9000, consumer_offset=8950)]
        tq += [tq_row(ts, "%DLQ%orders", 0, dead, kind="dlq", group="orders")]
    write("consumer_queue", cq)
    write("topic_queue", tq)
    dlq = {"alert": "DlqGrowing", "kind": "growth", "table": "consumer_group", "value": "dlq_total", "over": "10m",
           "by": ["cluster", "group"], "above": {"warning": 0, "critical": 50}, "summary": "{group}: +{value}"}
    one = {"alert": "OneGroupLags", "kind": "peer", "table": "consumer_group", "value": "lag",
           "peers_by": ["cluster", "topic"], "member": "group", "above": {"warning": 1000},
           "summary": "{group} lags {value}, peers {peer_value}"}
    found = {f.rule: f for f in evaluate(dlq, one)}
    assert (found["DlqGrowing"].severity, found["DlqGrowing"].annotations["summary"]) == ("critical", "orders: +85")
    assert found["OneGroupLags"].annotations["summary"] == "orders lags 8000, peers 30"
    assert set(found) == {"DlqGrowing", "OneGroupLags"}


def test_views_keep_each_series_newest_cycle_whether_built_per_cycle_or_over_the_window(write, spark, tmp_path):
    """Rows that end at different cycles: every view series is judged at its own newest cycle, with the
    peers of that cycle, whether the view is built over the window (reference) or per folded cycle."""
    from rules.loader import load_rule_files
    from spark.evaluate import Evaluator
    from spark.reference import evaluate_reference
    from tests.spark.kind_samples import NOW, STALE, rule_yaml

    old, new = at(40), at(10)
    # Queue 2: held by a@1 and b@1 in the old cycle, dropped by both in the new one (no row of the new
    # cycle makes an owner row for it): its newest owner row is the old one.
    write("process_queue", [pq_row(old, "g", 0, "a@1"), pq_row(old, "g", 2, "a@1"), pq_row(old, "g", 2, "b@1"),
                            pq_row(new, "g", 0, "a@1"), pq_row(new, "g", 2, "a@1", dropped=True),
                            pq_row(new, "g", 2, "b@1", dropped=True)])
    # "gone" last reported in the old cycle, beside "fine"; only "fine" is left in the new one.
    write("consumer_queue", [cq_row(old, "gone", 0, broker_offset=9000, consumer_offset=1000),
                             cq_row(old, "fine", 0, broker_offset=9000, consumer_offset=9000),
                             cq_row(new, "fine", 0, broker_offset=9100, consumer_offset=9100),
                             cq_row(old, "gone", 0, topic="%RETRY%gone", broker_offset=5, consumer_offset=5),
                             cq_row(new, "gone", 0, topic="%RETRY%gone", broker_offset=5, consumer_offset=5)])
    rules_path = tmp_path / "rules.yaml"
    rules_path.write_text(rule_yaml(
        {"alert": "Owners", "kind": "threshold", "table": "queue_owner", "value": "owners", "above": {"warning": 0},
         "summary": "{queue_id}: {clients}"},
        {"alert": "Peers", "kind": "threshold", "table": "consumer_group", "value": "lag", "above": {"warning": -1},
         "summary": "{group}: {peer_groups_lagging}/{peer_groups}"},
    ))
    rules = load_rule_files([rules_path]).rules

    def summaries(found):
        return sorted((f.rule, f.annotations["summary"], f.value) for f in found)

    expected = [("Owners", "0: a@1", 1.0), ("Owners", "2: a@1,b@1", 2.0),
                ("Peers", "fine: 0/0", 0.0), ("Peers", "gone: 0/1", 8000.0)]
    assert summaries(evaluate_reference(spark, tmp_path / "store", rules, NOW, STALE)) == expected
    assert summaries(Evaluator(spark, tmp_path / "store").evaluate(rules, NOW, STALE)) == expected
