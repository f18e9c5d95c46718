"""Rule files: every problem is reported, each at its own file:line:col."""

import textwrap
from datetime import timedelta

import pytest

from rules.kinds import KINDS
from rules.loader import BUILTIN_DIR, RuleLoadError, check_rule_files, load_rule_files
from rules.tables import PROCESS_QUEUE

GOOD_RULE = """\
groups:
  - name: flow
    rules:
      - alert: SpanTooLong
        kind: threshold
        table: process_queue
        value: cached_max_offset - cached_min_offset
        above: {critical: max_span}
        for: 1m
        summary: "{group}: span {value} > {threshold}"
        diagnosis: "queue {broker}/{queue_id}"
        next_steps: "jstack {client_id}"
"""


def _write(tmp_path, text, name="rules.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_valid_file_loads_with_defaults_from_the_table(tmp_path):
    ruleset = load_rule_files([_write(tmp_path, GOOD_RULE)])
    (rule,) = ruleset.rules
    assert rule.group_by == PROCESS_QUEUE.key
    assert rule.timing.for_ == timedelta(minutes=1) and rule.timing.keep_firing_for == timedelta(0)
    assert ruleset.sources["SpanTooLong"].line == 4


def test_typo_and_bad_duration_give_two_errors_each_on_its_own_line(tmp_path):
    text = GOOD_RULE.replace("        for: 1m\n", "        for: 5 minutes\n        thresold: 5\n")
    path = _write(tmp_path, text)
    errors = check_rule_files([path])
    lines = sorted(str(e) for e in errors)
    assert len(errors) == 2, lines
    by_field = {e.field: e for e in errors}
    assert by_field["for"].line == 9 and by_field["for"].col == 14
    assert "expected a duration like 30s, 5m, 2h" in by_field["for"].message
    assert by_field["thresold"].line == 10 and "unknown field 'thresold'" in by_field["thresold"].message
    assert str(by_field["for"]).startswith(f'{path}:9:14: group "flow", rule "SpanTooLong": for: expected a duration')


def test_unknown_column_in_value_is_named_and_the_right_one_suggested(tmp_path):
    path = _write(tmp_path, GOOD_RULE.replace("cached_max_offset - cached_min_offset", "cached_max_ofset - cached_min_offset"))
    (error,) = check_rule_files([path])
    assert (error.line, error.field) == (7, "value")
    assert "'cached_max_ofset'" in error.message and "did you mean 'cached_max_offset'" in error.message


def test_forbidden_expression_is_refused_at_its_field(tmp_path):
    text = GOOD_RULE.replace("{critical: max_span}", "{critical: max_span.__class__}")
    (error,) = check_rule_files([_write(tmp_path, text)])
    assert (error.line, error.field) == (8, "above.critical")
    assert "attribute access" in error.message


def test_unknown_placeholders_and_unknown_columns_are_all_reported(tmp_path):
    text = GOOD_RULE.replace("jstack {client_id}", "jstack {clientid} {value.__class__}").replace(
        "max_span}", "max_spam}"
    )
    errors = check_rule_files([_write(tmp_path, text)])
    assert sorted((e.line, e.field) for e in errors) == [(8, "above.critical"), (12, "next_steps"), (12, "next_steps")]
    text = "\n".join(map(str, errors))
    assert "unknown placeholder {clientid}" in text and "must be a plain column name" in text
    assert "did you mean 'max_span'" in text


def test_yaml_syntax_error_has_a_position(tmp_path):
    path = _write(tmp_path, GOOD_RULE.replace("above: {critical: max_span}", "above: {critical: max_span"))
    (error,) = check_rule_files([path])
    assert error.line >= 8 and "YAML syntax error" in error.message
    assert str(error).startswith(f"{path}:{error.line}:{error.col}: YAML syntax error")


def test_duplicate_rule_name_across_files_points_at_both(tmp_path):
    first = _write(tmp_path, GOOD_RULE, "a.yaml")
    second = _write(tmp_path, GOOD_RULE, "b.yaml")
    with pytest.raises(RuleLoadError) as info:
        load_rule_files([tmp_path])
    (error,) = info.value.errors
    assert error.file == str(second) and error.line == 4 and error.field == "alert"
    assert f"first defined at {first}:4" in error.message
    assert str(info.value) == str(error)


def test_errors_in_several_rules_and_files_are_all_collected(tmp_path):
    bad_kind = GOOD_RULE.replace("kind: threshold", "kind: treshold")
    no_levels = GOOD_RULE.replace("        above: {critical: max_span}\n", "").replace("SpanTooLong", "Other")
    _write(tmp_path, bad_kind, "a.yaml")
    _write(tmp_path, no_levels, "b.yml")
    errors = check_rule_files([tmp_path, tmp_path / "missing.yaml"])
    text = "\n".join(map(str, errors))
    assert "unknown kind 'treshold'; known kinds: " in text
    assert "threshold" in text.split("known kinds: ")[1]
    assert 'rule "Other": give `above` or `below`' in text
    assert "missing.yaml: no such file or directory" in text


def test_missing_required_field_and_bad_name(tmp_path):
    text = GOOD_RULE.replace('        next_steps: "jstack {client_id}"\n', "").replace("SpanTooLong", "span_too_long")
    errors = check_rule_files([_write(tmp_path, text)])
    fields = {e.field: e.message for e in errors}
    assert fields["next_steps"] == "missing required field"
    assert "CamelCase" in fields["alert"]


def test_builtin_pack_loads_and_every_rule_has_a_runbook():
    ruleset = load_rule_files(["builtin"])
    assert "ProcessQueueSpanTooLong" in ruleset.names()
    for rule in ruleset.rules:
        assert rule.kind in KINDS
        for field in ("summary", "diagnosis", "next_steps"):
            assert len(getattr(rule, field)) > 40, f"{rule.alert}.{field} is not a runbook"
    assert all(p.suffix == ".yaml" for p in BUILTIN_DIR.glob("*.y*ml"))


def test_builtin_span_rule_keeps_design_defaults():
    rule = load_rule_files(["builtin"]).get("ProcessQueueSpanTooLong")
    assert rule.timing.for_ == timedelta(minutes=1) and rule.timing.keep_firing_for == timedelta(minutes=2)
    assert rule.labels == {"category": "consumer"}
    assert rule.above.critical.source == "max_span" and rule.above.warning is None


def test_rules_package_never_imports_pyspark():
    # `rocketwatch check` must run without a JVM; a fresh interpreter shows what rules/ pulls in.
    import subprocess
    import sys

    code = "import sys, rules.loader, rules.overrides, rules.models; print(any(m.startswith('pyspark') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_first_step_longer_than_a_lock_screen_line_is_refused_at_its_line(tmp_path):
    step = "Take five jstacks of {client_id} a second apart and look for ConsumeMessageThread_ threads " * 2
    path = _write(tmp_path, GOOD_RULE + f'        first_step: "{step.strip()}"\n')
    (error,) = check_rule_files([path])
    assert (error.line, error.field) == (13, "first_step")
    assert "160 characters" in error.message


def test_first_step_and_runbook_url_are_templates_checked_against_the_table(tmp_path):
    path = _write(tmp_path, GOOD_RULE + '        first_step: "jstack {client_idd}"\n'
                  '        runbook_url: "https://wiki.example/rocketmq/{group}"\n')
    (error,) = check_rule_files([path])
    assert error.field == "first_step" and "client_idd" in error.message
