"""`rocketwatch test-rules`, `eval` and `schema` as an operator runs them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from daemon.cli import main
from daemon.cli.rules import parse_time
from daemon.store.writer import ParquetStore
from rules.tables import PROCESS_QUEUE
from rules.testing import InputSeries, series_rows

RULES = """\
groups:
  - name: t
    rules:
      - alert: BigCache
        kind: threshold
        table: process_queue
        value: cached_msg_count
        above: {critical: 100}
        summary: "{group}: {value} cached on queue {queue_id}"
        diagnosis: d
        next_steps: n
"""

TEST = """\
rule_files: [rules.yaml]
evaluation_interval: 30s
tests:
  - input:
      process_queue:
        - labels: {cluster: c, group: g, topic: T, broker: b, queue_id: 1, client_id: x}
          values: {cached_msg_count: "500x4"}
    alert_rule_test:
      - eval_time: 1m
        alertname: BigCache
        exp_alerts:
          - labels: {queue_id: 2}
"""


@pytest.mark.spark
def test_test_rules_exit_status_and_diff(spark, tmp_path, capsys):
    (tmp_path / "rules.yaml").write_text(RULES)
    failing = tmp_path / "big.test.yaml"
    failing.write_text(TEST)
    assert main(["test-rules", str(failing)]) == 1
    out = capsys.readouterr().out
    assert 'expected, not found: BigCache{queue_id="2"}' in out
    assert 'found, not expected: BigCache{' in out and 'queue_id="1"' in out

    failing.write_text(TEST.replace("queue_id: 2", "queue_id: 1"))
    assert main(["test-rules", str(failing)]) == 0
    assert "PASS (1 check(s))" in capsys.readouterr().out

    failing.write_text(TEST.replace("eval_time: 1m", "eval_time: later"))
    assert main(["test-rules", str(failing)]) == 2
    err = capsys.readouterr().err
    assert f"{failing}:9:20: tests.0.alert_rule_test.0.eval_time: expected a duration" in err


@pytest.mark.spark
def test_eval_prints_findings_as_json_lines(spark, tmp_path, capsys):
    (tmp_path / "rules.yaml").write_text(RULES)
    at = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    row = {"ts": at - timedelta(seconds=10), "cluster": "c", "group": "g", "topic": "T", "broker": "b",
           "queue_id": 7, "client_id": "x", "cached_msg_count": 250, "cached_msg_size_mib": 1,
           "cached_min_offset": 1, "cached_max_offset": 2, "commit_offset": 1, "locked": False,
           "dropped": False, "try_unlock_times": 0, "pull_threshold_for_queue": 1000,
           "pull_threshold_size_mib": 100, "max_span": 2000, "consume_timeout_min": 15,
           "max_reconsume_times": 16, "orderly": False}
    ParquetStore(tmp_path / "store").append("process_queue", [row], row["ts"])
    code = main(["eval", "--store", str(tmp_path / "store"), "--rules", str(tmp_path / "rules.yaml"),
                 "--at", at.isoformat(), "--format", "json"])
    assert code == 0
    [line] = capsys.readouterr().out.splitlines()
    finding = json.loads(line)
    assert finding["rule"] == "BigCache" and finding["severity"] == "critical"
    assert finding["labels"]["queue_id"] == "7" and finding["value"] == 250
    assert finding["annotations"]["summary"] == "g: 250 cached on queue 7"


def test_schema_describes_rules_config_and_tests(capsys):
    assert main(["schema", "rules"]) == 0
    rules = json.loads(capsys.readouterr().out)
    assert "ThresholdRule" in rules["$defs"] and "for" in rules["$defs"]["ThresholdRule"]["properties"]
    assert main(["schema", "config"]) == 0
    assert "clusters" in json.loads(capsys.readouterr().out)["properties"]
    assert main(["schema", "rule-tests"]) == 0
    assert "tests" in json.loads(capsys.readouterr().out)["properties"]


def test_times_are_iso_or_relative_to_now():
    now = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    assert parse_time("-15m", now) == now - timedelta(minutes=15)
    assert parse_time("now", now) == now
    assert parse_time("2026-11-22T09:00:00Z", now) == datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
    # No zone means UTC, as every time in the store is.
    assert parse_time("2026-11-22 09:00", now) == datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
    assert parse_time("2026-11-22T11:00:00+02:00", now) == datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
TIMED_RULES = RULES.replace("above: {critical: 100}", "above: {warning: 100, critical: 400}\n        for: 1m")


def _history(tmp_path):
    """Queue 1 of group g: 2 idle samples, 250 cached (warning) for 2 minutes, 500 (critical), then drained."""
    series = InputSeries(labels={"cluster": "c", "group": "g", "topic": "T", "broker": "b", "queue_id": 1,
                                 "client_id": "x"},
                         values={"cached_msg_count": "0x1 250x3 500x2 0x4"})
    store = ParquetStore(tmp_path / "store")
    store.append("process_queue", series_rows(PROCESS_QUEUE, series, T0, timedelta(seconds=30)), T0)
    (tmp_path / "rules.yaml").write_text(TIMED_RULES)
    return tmp_path / "store", tmp_path / "rules.yaml"


@pytest.mark.spark
def test_replay_prints_the_alert_timeline(spark, tmp_path, capsys):
    store, rules = _history(tmp_path)
    code = main(["replay", "--store", str(store), "--rules", str(rules), "--from", T0.isoformat(),
                 "--to", (T0 + timedelta(minutes=6)).isoformat(), "--step", "30s", "--format", "json"])
    assert code == 0
    out = capsys.readouterr()
    timeline = [json.loads(line) for line in out.out.splitlines()]
    assert [(t["at"], t["state"], t["severity"]) for t in timeline] == [
        ("2026-11-22T09:01:00Z", "pending", "warning"),
        ("2026-11-22T09:02:00Z", "firing", "warning"),
        ("2026-11-22T09:02:00Z", "severity", "critical"),
        ("2026-11-22T09:03:00Z", "resolved", "critical"),
    ] or timeline
    assert timeline[0]["labels"]["queue_id"] == "1" and timeline[0]["summary"] == "g: 250 cached on queue 1"
    assert "13 evaluation(s)" in out.err and "4 transition(s)" in out.err


@pytest.mark.spark
def test_eval_with_config_applies_overrides_and_relative_time(spark, tmp_path, capsys):
    store, rules = _history(tmp_path)
    config = tmp_path / "rocketwatch.yaml"
    config.write_text(
        "clusters: [{name: c, namesrv: ['127.0.0.1:9876']}]\n"
        f"state_dir: {tmp_path / 'state'}\nstore_path: {store}\nrules: [{rules}]\n"
        "evaluate: {stale_after: 10m}\n"
        "rule_overrides:\n  BigCache: {above: {critical: 200}}\n"
    )
    # 09:01:30 has 250 cached: a warning by the file, critical by the operator's override.
    code = main(["eval", "--config", str(config), "--at", "2026-11-22T09:01:30Z", "--format", "text"])
    assert code == 0
    assert capsys.readouterr().out == "critical BigCache: g: 250 cached on queue 1\n"
    # Relative --at: an hour ago from now the store is empty, which is no finding, not an error.
    assert main(["eval", "--config", str(config), "--at", "-1h", "--format", "json"]) == 0
    assert capsys.readouterr().out == ""


def test_eval_and_replay_reject_bad_input_with_status_2(tmp_path, capsys):
    (tmp_path / "store").mkdir()
    (tmp_path / "rules.yaml").write_text(RULES)
    base = ["--store", str(tmp_path / "store"), "--rules", str(tmp_path / "rules.yaml")]
    assert main(["eval", *base, "--at", "yesterday-ish"]) == 2
    assert "--at 'yesterday-ish': give an ISO time" in capsys.readouterr().err
    assert main(["replay", "--store", str(tmp_path / "nope"), "--from", "-1h"]) == 2
    assert f"store {tmp_path / 'nope'} does not exist" in capsys.readouterr().err
    assert main(["replay", *base, "--from", "-1h", "--to", "-2h"]) == 2
    assert "is after --to" in capsys.readouterr().err
    (tmp_path / "rules.yaml").write_text(RULES.replace("cached_msg_count", "cached_msgs"))
    assert main(["eval", *base]) == 2
    assert "cached_msgs" in capsys.readouterr().err


BAD_FLAGS = {
    "a stale_after that is no duration": (["eval", "--stale-after", "soon"],
                                          "rocketwatch eval: --stale-after 'soon': expected a duration"),
    "a stale_after of 0": (["eval", "--stale-after", "0s"], "rocketwatch eval: --stale-after '0s': must be more than 0"),
    "an offset before year 1": (["eval", "--at", "-99999999d"], "rocketwatch eval: --at '-99999999d': give an ISO time"),
    "a step of 0": (["replay", "--from", "-1h", "--step", "0s"], "rocketwatch replay: --step '0s': must be more than 0"),
    "a step that is no duration": (["replay", "--from", "-1h", "--step", "soon"],
                                   "rocketwatch replay: --step 'soon': expected a duration"),
    "years at one second": (["replay", "--from", "1999-01-01", "--step", "1s"],
                            "rocketwatch replay: --from 1999-01-01T00:00:00+00:00 to --to "),
}


@pytest.mark.parametrize("case", list(BAD_FLAGS))
def test_a_bad_flag_is_one_line_and_status_2(case, tmp_path, capsys):
    """No traceback, and no Spark job per second of 27 years (that one ran the machine out of memory)."""
    (tmp_path / "store").mkdir()
    (tmp_path / "rules.yaml").write_text(RULES)
    command, *flags = BAD_FLAGS[case][0]
    code = main([command, "--store", str(tmp_path / "store"), "--rules", str(tmp_path / "rules.yaml"), *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(BAD_FLAGS[case][1]) and err.count("\n") == 1, err


def test_timeline_names_a_pending_alert_that_cleared_and_one_that_fired_at_once():
    from daemon.offline.replay import replay, steps
    from rules.findings import Finding, RuleTiming

    # Findings per evaluation time, as the evaluator would return them.
    seen = {1: ["Slow", "Down"], 2: ["Down"]}

    def evaluate(rules, now, stale_after):
        minute = int((now - T0).total_seconds() // 60)
        return [Finding(name, {"broker": "b"}, "critical", 1.0, 0.0, {"summary": f"{name} on b"})
                for name in seen.get(minute, [])]

    timings = {"Slow": RuleTiming("Slow", for_=timedelta(minutes=5)), "Down": RuleTiming("Down")}
    times = list(steps(T0, T0 + timedelta(minutes=3), timedelta(minutes=1)))
    timeline = [(t.at - T0, t.state, t.rule) for t in replay(evaluate, [], timings, times, timedelta(minutes=1))]
    assert timeline == [
        (timedelta(minutes=1), "pending", "Slow"),
        (timedelta(minutes=1), "firing", "Down"),
        (timedelta(minutes=2), "inactive", "Slow"),
        (timedelta(minutes=3), "resolved", "Down"),
    ]
