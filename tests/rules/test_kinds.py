"""Declarations of the rule kinds: what `rocketwatch check` accepts and the errors it prints (no Spark)."""

import json

import pytest

from rules.loader import check_rule_files, load_rule_files
from rules.models import RuleFile

RUNBOOK = {"summary": "s", "diagnosis": "d", "next_steps": "n"}


def _errors(tmp_path, *rules):
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps({"groups": [{"name": "g", "rules": [{**RUNBOOK, **r} for r in rules]}]}))
    return [str(e) for e in check_rule_files([path])]


VALID = [
    {"alert": "DlqGrowing", "kind": "growth", "table": "topic_queue", "value": "max_offset", "over": "10m",
     "by": ["cluster", "group"], "reduce": "sum", "above": {"warning": 0}},
    {"alert": "Stalled", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset", "while": "lag > 0",
     "over": "5m", "critical_after": "15m"},
    {"alert": "Stuck", "kind": "stall", "table": "process_queue", "value": "cached_min_offset",
     "while": "cached_msg_count > 0", "moving": "last_pull_ts", "over": "3m"},
    {"alert": "OneLags", "kind": "peer", "table": "consumer_group", "value": "lag", "peers_by": ["cluster", "topic"],
     "member": "group", "above": {"warning": 1000}, "summary": "{group}: {peer_value} among {peers} ({peers_above})"},
    {"alert": "Silent", "kind": "absent", "table": "broker", "over": "30m", "critical_after": "10m"},
    {"alert": "Churn", "kind": "churn", "table": "queue_owner", "member": "clients", "by": ["cluster", "group"],
     "over": "10m", "above": {"critical": 3}, "summary": "{members}"},
]


def test_every_kind_loads_with_its_documented_fields(tmp_path):
    assert _errors(tmp_path, *VALID) == []
    path = tmp_path / "r.yaml"
    rules = {r.alert: r for r in load_rule_files([path]).rules}
    assert rules["Stalled"].window().total_seconds() == 900
    assert rules["OneLags"].group_by == ("cluster", "topic", "group") and rules["OneLags"].is_view
    assert rules["Silent"].group_by == ("cluster", "broker", "broker_id")


def test_the_json_schema_offers_every_kind():
    schema = json.dumps(RuleFile.model_json_schema())
    for kind in ("threshold", "growth", "stall", "peer", "absent", "churn"):
        assert f'"const": "{kind}"' in schema or f'"{kind}"' in schema
    assert '"while"' in schema and '"peers_by"' in schema


@pytest.mark.parametrize(("rule", "message"), [
    ({"alert": "X", "kind": "growth", "table": "topic_queue", "value": "max_offset", "over": "10m"},
     "give `above` or `below`"),
    ({"alert": "X", "kind": "growth", "table": "topic_queue", "value": "max_offest", "over": "10m",
      "above": {"warning": 1}}, "unknown column 'max_offest'"),
    ({"alert": "X", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset", "over": "10m",
      "critical_after": "5m"}, "`critical_after` must not be shorter than `over`"),
    ({"alert": "X", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset", "over": "5m",
      "while": "lagg > 0"}, "while: unknown column 'lagg'"),
    ({"alert": "X", "kind": "peer", "table": "consumer_group", "value": "lag", "peers_by": ["cluster", "topic"],
      "member": "groupp", "above": {"warning": 1}}, "member: unknown column 'groupp'"),
    ({"alert": "X", "kind": "peer", "table": "consumer_group", "value": "lag", "peers_by": ["cluster", "topic"],
      "member": "group", "by": ["cluster"], "above": {"warning": 1}}, "leave `by` out"),
    ({"alert": "X", "kind": "absent", "table": "broker", "over": "5m", "critical_after": "10m"},
     "`critical_after` must be shorter than `over`"),
    ({"alert": "X", "kind": "churn", "table": "process_queue", "member": "client_id",
      "by": ["cluster", "client_id"], "over": "10m", "above": {"warning": 1}}, "`member` must not be one of `by`"),
    ({"alert": "X", "kind": "threshold", "table": "consumer_group", "value": "lag", "above": {"warning": 1},
      "summary": "{peer_value}"}, "unknown placeholder {peer_value}"),
    ({"alert": "X", "kind": "threshold", "table": "consumer_groups", "value": "lag", "above": {"warning": 1}},
     "views: consumer_group, dlq_queue, queue_owner, topic_activity"),
])
def test_mistakes_are_reported_with_the_field(tmp_path, rule, message):
    errors = _errors(tmp_path, rule)
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize(("rule", "field"), [
    ({"alert": "FrozenFor", "kind": "stall", "table": "consumer_queue", "value": "(now() - ts) / 1000 > 60",
      "over": "5m"}, "value"),
    ({"alert": "IdleStall", "kind": "stall", "table": "process_queue", "value": "cached_min_offset",
      "while": "now() - last_consume_ts > 60000", "over": "5m"}, "while"),
    ({"alert": "PullAge", "kind": "stall", "table": "process_queue", "value": "cached_min_offset",
      "moving": "now() - last_pull_ts", "over": "5m"}, "moving"),
    ({"alert": "RecentStall", "kind": "stall", "table": "process_queue", "value": "cached_min_offset",
      "where": "now() - last_pull_ts < 60000", "over": "5m"}, "where"),
    ({"alert": "RecentGrowth", "kind": "growth", "table": "topic_queue", "value": "max_offset", "over": "10m",
      "where": "now() - last_update_ts < 600000", "above": {"warning": 0}}, "where"),
    ({"alert": "RecentSilence", "kind": "absent", "table": "broker", "over": "30m",
      "where": "now() - ts < 600000"}, "where"),
    ({"alert": "RecentChurn", "kind": "churn", "table": "queue_owner", "member": "clients", "by": ["cluster", "group"],
      "over": "10m", "where": "now() - ts < 600000", "above": {"warning": 1}}, "where"),
    ({"alert": "ChurnLevel", "kind": "churn", "table": "queue_owner", "member": "clients", "by": ["cluster", "group"],
      "over": "10m", "above": {"warning": "(now() - ts) / 1000"}}, "above"),
])
def test_now_in_an_expression_a_kind_folds_is_refused_naming_the_rule(tmp_path, rule, field):
    # Such an expression is computed once per sample, when its cycle is folded into kept state: an
    # older version judged these rules over the whole window each cycle; check says how to rewrite.
    errors = _errors(tmp_path, rule)
    assert any(f"rule {rule['alert']}: `{field}` calls now()" in e and "`ts` instead of now()" in e for e in errors), errors


def test_now_where_a_kind_judges_is_accepted(tmp_path):
    # Threshold and peer judge the newest row, growth its kept samples, each at the evaluation time.
    assert _errors(tmp_path,
                   {"alert": "Idle", "kind": "threshold", "table": "process_queue",
                    "value": "(now() - last_consume_ts) / 1000", "above": {"warning": 60}},
                   {"alert": "AgeGrowth", "kind": "growth", "table": "topic_queue", "value": "(now() - ts) / 1000",
                    "counter": False, "over": "10m", "below": {"warning": "(now() - ts) / -1000"}}) == []
