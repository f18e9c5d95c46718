"""`rocketwatch test-rules`, `eval` and `schema` as an operator runs them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from daemon.cli import main
from daemon.store.writer import ParquetStore

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
