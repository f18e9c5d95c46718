"""rule_overrides: tune the built-in pack without forking it."""

from datetime import timedelta

from rules.loader import load_rule_files
from rules.overrides import RuleOverride, apply_overrides

SPAN = "ProcessQueueSpanTooLong"


def _override(**data):
    return RuleOverride.model_validate(data)


def test_demo_shortens_timing_while_the_pack_keeps_its_defaults():
    pack = load_rule_files(["builtin"])
    tuned, errors = apply_overrides(pack, {SPAN: _override(**{"for": "10s", "keep_firing_for": "20s"})})
    assert errors == []
    assert tuned.get(SPAN).timing.for_ == timedelta(seconds=10)
    assert tuned.get(SPAN).timing.keep_firing_for == timedelta(seconds=20)
    assert pack.get(SPAN).timing.for_ == timedelta(minutes=1)


def test_labels_merge_levels_replace_only_what_is_given_and_exclude_adds():
    pack = load_rule_files(["builtin"])
    change = _override(labels={"team": "payments"}, above={"warning": 1000}, exclude={"group": "test-.*"})
    tuned, errors = apply_overrides(pack, {SPAN: change})
    rule = tuned.get(SPAN)
    assert errors == []
    assert rule.labels == {"category": "consumer", "team": "payments"}
    assert rule.above.warning.source == "1000" and rule.above.critical.source == "max_span"
    assert rule.exclude == {"group": "test-.*"}


def test_disabled_rule_is_gone():
    tuned, errors = apply_overrides(load_rule_files(["builtin"]), {SPAN: _override(disabled=True)})
    assert errors == [] and SPAN not in tuned.names()


def test_unknown_rule_and_bad_override_values_are_errors():
    pack = load_rule_files(["builtin"])
    _, errors = apply_overrides(
        pack,
        {"ProcessQueueSpanTooLon": _override(disabled=True), SPAN: _override(above={"critical": "max_spam"}, exclude={"x": "("})},
    )
    text = "\n".join(errors)
    assert "unknown rule 'ProcessQueueSpanTooLon'; did you mean 'ProcessQueueSpanTooLong'?" in text
    assert "known rules: " in text and "ProcessQueueSpanTooLong" in text.split("known rules: ")[1]
    assert "above.critical: unknown column 'max_spam'" in text
    assert "exclude.x: unknown column 'x'" in text and "invalid regex '('" in text


def test_over_replaces_a_windowed_rules_window_and_is_refused_on_a_threshold_rule():
    pack = load_rule_files(["builtin"])
    tuned, errors = apply_overrides(pack, {"ConsumerOffsetStalled": _override(over="75s")})
    assert errors == []
    assert tuned.get("ConsumerOffsetStalled").over == timedelta(seconds=75)
    assert tuned.get("ConsumerOffsetStalled").window() >= timedelta(seconds=75)
    assert pack.get("ConsumerOffsetStalled").over == timedelta(minutes=5)
    _, errors = apply_overrides(pack, {SPAN: _override(over="1m")})
    assert [str(e) for e in errors] == [f"{SPAN}: over: a threshold rule has no `over` window"]
