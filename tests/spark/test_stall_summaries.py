"""Merging a cycle's stall summaries into the runs kept (spark/stall_summaries.py), in Arrow alone."""

from datetime import timedelta

import pyarrow as pa

from spark.stall_summaries import TS, merge, one_per_series
from tests.spark.kind_samples import NOW

T0, T1, T2 = NOW - timedelta(seconds=60), NOW - timedelta(seconds=30), NOW


def _state(rows: list[tuple[int, int, int, object, object]]) -> pa.Table:
    h1, h2, v, since, last = zip(*rows, strict=True)
    nothing = pa.nulls(len(rows))
    return pa.table({"_h1": pa.array(h1, pa.int64()), "_h2": pa.array(h2, pa.int32()), "_v": pa.array(v, pa.int64()),
                     "_since": pa.array(since, TS), "_last": pa.array(last, TS), "_m_last": nothing.cast(pa.int64()),
                     "_m_last_ts": nothing.cast(TS), "_m_prev": nothing.cast(TS)})


def _summary(rows: list[tuple[int, int, int]], at=T2) -> pa.Table:
    """One sample per series at `at`, `while` true on it."""
    h1, h2, v = zip(*rows, strict=True)
    n = len(rows)
    nothing = pa.nulls(n)
    return pa.table({"_h1": pa.array(h1, pa.int64()), "_h2": pa.array(h2, pa.int32()), "_v": pa.array(v, pa.int64()),
                     "_since": pa.array([at] * n, TS), "_first": pa.array([at] * n, TS),
                     "_last": pa.array([at] * n, TS), "_clean": pa.array([True] * n),
                     "_m_first": nothing.cast(pa.int64()), "_m_last": nothing.cast(pa.int64()),
                     "_m_last_ts": nothing.cast(TS), "_m_prev": nothing.cast(TS)})


def _runs(state: pa.Table) -> dict[tuple[int, int], tuple[int, object, object]]:
    rows = state.to_pylist()
    return {(r["_h1"], r["_h2"]): (r["_v"], r["_since"], r["_last"]) for r in rows}


def test_a_run_holding_its_value_keeps_its_start_and_a_changed_one_starts_again():
    old = _state([(1, 1, 10, T0, T1), (2, 2, 10, T0, T1), (3, 3, 10, T0, T1)])
    merged, ended = merge(old, _summary([(1, 1, 10), (2, 2, 11)]))
    assert _runs(merged) == {(1, 1): (10, T0, T2), (2, 2): (11, T2, T2), (3, 3): (10, T0, T1)}
    assert ended.to_pylist() == [{"_h1": 2, "_h2": 2}]


def test_two_series_sharing_the_first_hash_are_kept_apart():
    # Series A (7, 1) and B (7, 2) share _h1 (a 64-bit collision): pairing them by _h1 alone would
    # merge B's new sample into A's run.
    old = _state([(7, 1, 10, T0, T1), (9, 3, 5, T0, T1)])
    merged, ended = merge(old, _summary([(7, 2, 20), (7, 1, 10)]))
    assert _runs(merged) == {(7, 1): (10, T0, T2), (7, 2): (20, T2, T2), (9, 3): (5, T0, T1)}
    assert ended.to_pylist() == [{"_h1": 7, "_h2": 2}]
    # Only B is new, and A's run went on: the same without the collision's second series in old.
    merged, _ = merge(_state([(7, 1, 10, T0, T1)]), _summary([(7, 2, 20)]))
    assert _runs(merged) == {(7, 1): (10, T0, T1), (7, 2): (20, T2, T2)}


def test_a_series_with_two_rows_in_one_cycle_is_told_apart_from_two_series_sharing_a_hash():
    assert one_per_series(_summary([(1, 1, 10), (2, 2, 10), (3, 3, 10)]))
    assert one_per_series(_summary([(7, 1, 10), (7, 2, 10)]))  # two series, one _h1
    assert not one_per_series(_summary([(1, 1, 10), (2, 2, 10), (1, 1, 10)]))  # a row written twice
