"""rules/links.py: the causal-link query API the alert engine calls, and the link's own shape."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from pydantic import ValidationError

from rules.findings import Finding
from rules.links import CausalLinks, Link, LinkSpec
from rules.loader import load_rule_files
from rules.models import RuleFile

Q = ("cluster", "group", "topic", "broker", "queue_id")
LINKS = CausalLinks([
    Link("StuckMessage", "ConsumerOffsetStalled", Q, "the stuck message pins the committed offset"),
    Link("StuckMessage", "ConsumeDelayHigh", ("cluster", "group", "topic"), "delay grows"),
    Link("ConsumerOffsetStalled", "ConsumeDelayHigh", ("cluster", "group", "topic"), "delay grows"),
    Link("ConsumerGroupOffline", "ConsumerOffsetStalled", ("cluster", "group", "topic"), "nobody commits"),
])


@dataclass(frozen=True)
class Alert:
    rule: str
    labels: dict[str, str] = field(default_factory=dict)


def _queue(rule: str, queue_id: str = "3", group: str = "orders", **more: str) -> Alert:
    return Alert(rule, {"cluster": "prod", "group": group, "topic": "Orders", "broker": "broker-a",
                        "queue_id": queue_id, **more})


def test_explains_needs_a_declared_link_and_every_on_label_equal():
    stuck, stalled = _queue("StuckMessage", client_id="10.0.0.7@1"), _queue("ConsumerOffsetStalled")
    link = LINKS.explains(stuck.rule, stuck.labels, stalled.rule, stalled.labels)
    assert link is not None and link.why == "the stuck message pins the committed offset"
    other_queue = _queue("ConsumerOffsetStalled", queue_id="4")
    assert LINKS.explains(stuck.rule, stuck.labels, other_queue.rule, other_queue.labels) is None
    # Backwards: the consequence does not explain its cause.
    assert LINKS.explains(stalled.rule, stalled.labels, stuck.rule, stuck.labels) is None
    # A label missing on either side is not equal, even when missing on both.
    no_queue = {k: v for k, v in stalled.labels.items() if k != "queue_id"}
    assert LINKS.explains(stuck.rule, no_queue, stalled.rule, no_queue) is None


def test_why_link_causes_and_effects_by_rule():
    assert LINKS.why("ConsumerGroupOffline", "ConsumerOffsetStalled") == "nobody commits"
    with pytest.raises(KeyError, match="ConsumeDelayHigh does not explain StuckMessage"):
        LINKS.why("ConsumeDelayHigh", "StuckMessage")
    assert LINKS.link("ConsumeDelayHigh", "StuckMessage") is None
    assert [link.cause for link in LINKS.causes_of("ConsumerOffsetStalled")] == ["StuckMessage", "ConsumerGroupOffline"]
    assert [link.effect for link in LINKS.effects_of("StuckMessage")] == ["ConsumerOffsetStalled", "ConsumeDelayHigh"]
    assert LINKS.causes_of("StuckMessage") == () and LINKS.effects_of("Unknown") == ()


def test_depth_is_the_longest_chain_of_causes_and_roots_have_none():
    assert [LINKS.depth(r) for r in ("StuckMessage", "ConsumerOffsetStalled", "ConsumeDelayHigh", "Other")] == [0, 1, 2, 0]
    assert LINKS.is_root("StuckMessage") and LINKS.is_root("Other") and not LINKS.is_root("ConsumeDelayHigh")


def test_the_root_of_present_alerts_is_the_one_no_other_explains_and_it_leads():
    delay = Alert("ConsumeDelayHigh", {"cluster": "prod", "group": "orders", "topic": "Orders"})
    stalled, stuck = _queue("ConsumerOffsetStalled"), _queue("StuckMessage", client_id="c1")
    unrelated = _queue("ConsumerOffsetStalled", group="billing")
    present = [delay, stalled, unrelated, stuck]
    assert LINKS.roots(present) == [unrelated, stuck]
    assert LINKS.ordered(present) == [unrelated, stuck, stalled, delay]
    # Both present causes explain the delay; the most upstream comes first.
    assert [(a.rule, link.cause) for a, link in LINKS.explaining(delay, present)] == [
        ("StuckMessage", "StuckMessage"), ("ConsumerOffsetStalled", "ConsumerOffsetStalled")]
    # The cause arrived after its consequence: the consequence is no longer a root.
    assert LINKS.roots([stalled]) == [stalled] and LINKS.roots([stalled, stuck]) == [stuck]


def test_findings_are_alerts_the_api_takes():
    cause = Finding("StuckMessage", _queue("x", client_id="c").labels, "warning", 1.0, None)
    effect = Finding("ConsumerOffsetStalled", _queue("x").labels, "critical", 1.0, None)
    assert LINKS.roots([effect, cause]) == [cause]


def test_from_rules_keeps_only_links_whose_consequence_is_loaded():
    pack = load_rule_files(["builtin"])
    whole = CausalLinks.from_rules(pack)
    assert whole.link("StuckMessage", "ConsumerOffsetStalled") is not None
    # consumer-progress.yaml alone: its links into other pack files can never match, so they are left out.
    progress = CausalLinks.from_rules(load_rule_files(["rules/builtin/consumer-progress.yaml"]).rules)
    assert progress.link("StuckMessage", "ConsumerOffsetStalled") is not None
    assert progress.link("StuckMessage", "ProcessQueueSpanTooLong") is None
    assert {(link.cause, link.effect) for link in progress.links} <= {(link.cause, link.effect) for link in whole.links}


def test_a_cycle_built_by_hand_does_not_hang_depth():
    looped = CausalLinks([Link("A", "B", ("cluster",), "x"), Link("B", "A", ("cluster",), "y")])
    assert looped.depth("A") in (0, 1, 2)


@pytest.mark.parametrize(("data", "message"), [
    ({"alert": "X", "on": [], "why": "w"}, "`on` needs at least one label"),
    ({"alert": "X", "on": ["group", "group"], "why": "w"}, "label named twice in `on`: group"),
    ({"alert": "X", "on": ["group"], "why": "  "}, "`why` is one sentence"),
    ({"alert": "X", "why": "w"}, "Field required"),
    ({"alert": "X", "on": ["group"]}, "Field required"),
    ({"alert": "X", "on": ["group"], "why": "w", "because": "z"}, "Extra inputs are not permitted"),
])
def test_a_link_needs_labels_and_a_reason(data, message):
    with pytest.raises(ValidationError, match=message):
        LinkSpec.model_validate(data)


def test_the_rule_schema_shows_explains_on_every_kind():
    schema = RuleFile.model_json_schema()
    link = schema["$defs"]["LinkSpec"]
    assert sorted(link["required"]) == ["alert", "on", "why"] and link["properties"]["on"]["minItems"] == 1
    kinds = [d for name, d in schema["$defs"].items() if name.endswith("Rule")]
    assert len(kinds) >= 6 and all(d["properties"]["explains"]["items"] == {"$ref": "#/$defs/LinkSpec"} for d in kinds)


def test_the_query_api_imports_neither_spark_nor_the_daemon():
    import subprocess
    import sys

    probe = ("import sys, rules.links, rules.link_checks; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'spark', 'daemon')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
