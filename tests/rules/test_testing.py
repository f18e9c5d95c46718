"""Rule test files: series notation, positioned errors, and the diff an operator reads on failure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rules.tables import PROCESS_QUEUE
from rules.testing import (
    MISSING,
    ActiveAlert,
    AlertRuleTest,
    InputSeries,
    RuleTestError,
    compare,
    expand_series,
    load_test_file,
    series_rows,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_series_notation_expands_like_promtool():
    assert expand_series("1+2x3") == [1, 3, 5, 7]
    assert expand_series("10-5x2") == [10, 5, 0]
    assert expand_series("7x2 _ 1.5") == [7, 7, 7, MISSING, 1.5]
    assert expand_series([1, "_", 3]) == [1, MISSING, 3]
    with pytest.raises(ValueError, match="cannot read series term '1\\+\\+2'"):
        expand_series("1++2")


def test_rows_fill_defaults_skip_missing_samples_and_read_timestamps_as_ages():
    series = InputSeries(
        labels={"cluster": "c", "group": "g", "topic": "T", "broker": "b", "queue_id": 3, "client_id": "x"},
        values={"cached_msg_count": "5 _ 6", "last_consume_ts": "0+30x2"},
        static={"orderly": "true"},
    )
    rows = series_rows(PROCESS_QUEUE, series, T0, timedelta(seconds=30))
    assert [r["ts"] for r in rows] == [T0, T0 + timedelta(seconds=60)]
    assert [r["cached_msg_count"] for r in rows] == [5, 6]
    # An age growing by the interval is a frozen moment: the queue's last consumption at T0.
    assert {r["last_consume_ts"] for r in rows} == {T0}
    assert rows[0]["orderly"] is True and rows[0]["queue_id"] == 3 and rows[0]["max_span"] == 0


def test_unknown_and_derived_columns_are_rejected():
    table_series = InputSeries(labels={"group": "g"}, values={"spam": "1x2"})
    with pytest.raises(ValueError, match="unknown column 'spam' in table process_queue"):
        series_rows(PROCESS_QUEUE, table_series, T0, timedelta(seconds=30))
    with pytest.raises(ValueError, match="derived"):
        series_rows(PROCESS_QUEUE, InputSeries(labels={}, values={"span": "1x1"}), T0, timedelta(seconds=30))


def test_errors_in_a_test_file_name_file_line_and_field(tmp_path):
    path = tmp_path / "bad.test.yaml"
    path.write_text(
        "rule_files: [rules.yaml]\n"
        "tests:\n"
        "  - input:\n"
        "      process_queu: []\n"
        "    alert_rule_test:\n"
        "      - eval_time: soon\n"
        "        alertname: X\n"
        "  - input:\n"
        "      process_queue:\n"
        "        - labels: {group: g}\n"
        "          values: {cached_msg_cnt: 1x3}\n"
        "    alert_rule_test: [{eval_time: 1m, alertname: X}]\n"
    )
    with pytest.raises(RuleTestError) as err:
        load_test_file(path)
    text = str(err.value)
    assert f"{path}:4:" in text and "unknown table 'process_queu'" in text
    assert f"{path}:6:" in text and "eval_time" in text
    path.write_text(path.read_text().replace("process_queu: []", "process_queue: []").replace("soon", "1m"))
    with pytest.raises(RuleTestError) as err:
        load_test_file(path)
    assert f"{path}:10:" in str(err.value) and "unknown column 'cached_msg_cnt'" in str(err.value)


def test_compare_lists_missing_and_unexpected_alerts():
    check = AlertRuleTest.model_validate(
        {"eval_time": "5m", "alertname": "Span", "exp_alerts": [{"labels": {"queue_id": 3}, "severity": "critical"}]}
    )
    good = ActiveAlert("Span", {"queue_id": "3", "group": "g"}, "critical", "firing", {})
    other = ActiveAlert("Span", {"queue_id": "4", "group": "g"}, "warning", "firing", {})
    pending = ActiveAlert("Span", {"queue_id": "5"}, "critical", "pending", {})
    assert compare("t", check, [good, pending]) is None  # pending is only compared when asked for
    mismatch = compare("t", check, [other])
    assert mismatch is not None
    text = str(mismatch)
    assert 'expected, not found: Span{queue_id="3"} critical firing' in text
    assert 'found, not expected: Span{group="g",queue_id="4"} warning firing' in text


def test_an_alertname_no_rule_file_defines_is_an_error_not_a_silent_pass(tmp_path):
    (tmp_path / "rules.yaml").write_text(
        "groups:\n  - name: t\n    rules:\n      - alert: BigCache\n        kind: threshold\n"
        "        table: process_queue\n        value: cached_msg_count\n        above: {critical: 100}\n"
        "        summary: s\n        diagnosis: d\n        next_steps: n\n"
    )
    path = tmp_path / "typo.test.yaml"
    path.write_text(
        "rule_files: [rules.yaml]\n"
        "tests:\n"
        "  - alert_rule_test:\n"
        "      - eval_time: 1m\n"
        "        alertname: BigCahce\n"
        "        exp_alerts: []\n"
    )
    with pytest.raises(RuleTestError) as err:
        load_test_file(path)
    assert str(err.value) == (
        f"{path}:5:20: tests.0.alert_rule_test.0.alertname: no rule 'BigCahce' in rules.yaml; did you mean 'BigCache'?"
    )
