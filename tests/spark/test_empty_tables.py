"""A table with no rows in the window costs a cycle nothing (a 4.9 cluster's 5.x tables, a cluster
with no pop consumers): no kept frame is folded for it and none of its rules is judged. When its
rows arrive, its rules fire at the cycle the full window says, and once its rows have left the
window its frame is dropped again."""

from __future__ import annotations

from datetime import timedelta

from daemon.store.writer import ParquetStore
from rules.loader import load_rule_files
from spark.evaluate import Evaluator
from spark.reference import evaluate_reference
from tests.spark.kind_samples import NOW, STALE, comparable, cq_row, pq_row, rule_yaml

SPAN = {"alert": "SpanHigh", "kind": "threshold", "table": "process_queue", "value": "span",
        "above": {"warning": 1000}, "summary": "{group} q{queue_id}: span {value}"}
LAG = {"alert": "LagHigh", "kind": "threshold", "table": "consumer_queue", "value": "lag",
       "above": {"warning": 500}, "summary": "{group} q{queue_id}: lag {value}"}
LAG_STALLED = {"alert": "LagStalled", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset",
               "while": "lag > 0", "over": "1m", "summary": "{group} q{queue_id} stalled {value}s"}
STEP = timedelta(seconds=30)


def test_a_table_without_rows_is_not_folded_until_its_rows_arrive(spark, tmp_path):
    store = ParquetStore(tmp_path / "store")
    path = tmp_path / "rules.yaml"
    path.write_text(rule_yaml(SPAN, LAG, LAG_STALLED))
    rules = load_rule_files([path]).rules
    evaluator = Evaluator(spark, tmp_path / "store")
    start = NOW - 4 * STEP
    found = {}
    for i in range(30):  # 15 minutes of cycles: the consumer_queue rows come and go
        ts = start + i * STEP
        store.append("process_queue", [pq_row(ts, "orders", 0, "c1@1", cached_msg_count=10, cached_min_offset=0,
                                              cached_max_offset=1500)], ts)
        if 4 <= i < 8:
            store.append("consumer_queue", [cq_row(ts, "orders", 0, broker_offset=2000, consumer_offset=100)], ts)
        if i >= 10 and i % 5 != 4:
            continue  # evaluated every 2.5 minutes once the rows have stopped
        incremental = evaluator.evaluate(rules, ts, STALE)
        reference = evaluate_reference(spark, tmp_path / "store", rules, ts, STALE)
        assert comparable(incremental) == comparable(reference), f"cycle {i}: {evaluator.last_cycle}"
        found[i] = ({f.rule for f in incremental if f.severity}, len(evaluator.state.frames.frames),
                    evaluator.last_cycle)
    # Before consumer_queue has rows, only process_queue's frame is folded and judged.
    assert found[3][:2] == ({"SpanHigh"}, 1)
    # Its first rows: its frame is folded from the window, and its lag fires in that very cycle.
    assert found[4][:2] == ({"SpanHigh", "LagHigh"}, 2) and "re-folded 1 frame(s)" in found[4][2]
    assert "LagStalled" in found[6][0]  # its offset held for a minute, as the window says
    assert found[19][1] == 2  # its series is remembered for the 10-minute lookback (stale: no data)
    assert found[29][:2] == ({"SpanHigh"}, 1)  # past it, its frame is gone again
