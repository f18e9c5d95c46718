"""The built-in pack's causal links: each can match, none loops, and a real incident has one root."""

from __future__ import annotations

import re

import pytest

from rules.links import CausalLinks
from rules.loader import BUILTIN_DIR, check_rule_files, load_rule_files

PACK = load_rule_files(["builtin"])
LINKS = CausalLinks.from_rules(PACK)
QUEUE = ["cluster", "group", "topic", "broker", "queue_id"]


def _labels(name: str) -> set[str]:
    # What an alert of the rule can carry: spark/kinds/common.py builds its labels from group_by and the
    # static labels (group_by = `by`, else the table key; peer rules: peers_by + member). A `by` column
    # that is null on the alert's row is left out: such a label is optional (_optional below).
    rule = PACK.get(name)
    return set(rule.group_by) | set(rule.labels)


def _optional(name: str) -> set[str]:
    """The labels some alerts of the rule may lack: its `by` columns the table declares nullable."""
    rule = PACK.get(name)
    return {label for label in rule.group_by
            if (column := rule.table_def.column(label)) is not None and column.nullable}


def test_every_link_names_a_pack_rule_and_labels_both_sides_carry():
    declared = [(rule.alert, spec) for rule in PACK.rules for spec in rule.explains]
    assert len(declared) == len(LINKS.links) >= 20
    problems = []
    for cause, spec in declared:
        if PACK.get(spec.alert) is None:
            problems.append(f"{cause} -> {spec.alert}: no such rule in the pack")
            continue
        for side in (cause, spec.alert):
            missing = set(spec.on) - _labels(side)
            if missing:
                problems.append(f"{cause} -> {spec.alert}: {side}'s alerts never carry {sorted(missing)}")
    assert not problems, "\n".join(problems)


def test_the_pack_has_no_causal_cycle():
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for link in LINKS.effects_of(name):
            assert state.get(link.effect) != "open", " explains ".join([*path, name, link.effect])
            if link.effect not in state:
                visit(link.effect, [*path, name])
        state[name] = "done"

    for name in PACK.names():
        if name not in state:
            visit(name, [])


def test_each_why_is_one_plain_sentence():
    for link in LINKS.links:
        text = " ".join(link.why.split())
        assert text.endswith(".") and not re.search(r"[.!?] [A-Z]", text[:-1]), f"{link.cause} -> {link.effect}: {text}"
        assert "{" not in text and "<" not in text, f"{link.cause} -> {link.effect}: not a template, not markup"


@pytest.mark.parametrize(("cause", "effect", "on"), [
    ("StuckMessage", "ProcessQueueSpanTooLong", [*QUEUE, "client_id"]),
    ("StuckMessage", "ConsumptionBlocked", [*QUEUE, "client_id"]),
    ("StuckMessage", "ConsumerOffsetStalled", QUEUE),
    ("StuckMessage", "ConsumeDelayHigh", ["cluster", "group", "topic"]),
    ("StuckMessage", "OneGroupLagging", ["cluster", "group", "topic"]),
    ("ConsumptionBlocked", "ProcessQueueCachedCountHigh", [*QUEUE, "client_id"]),
    ("ConsumptionBlocked", "ProcessQueueCachedSizeHigh", [*QUEUE, "client_id"]),
    ("ConsumptionBlocked", "ConsumerOffsetStalled", QUEUE),
    ("ConsumptionBlocked", "ConsumeDelayHigh", ["cluster", "group", "topic"]),
    ("ConsumptionBlocked", "OneGroupLagging", ["cluster", "group", "topic"]),
    ("ConsumerGroupOffline", "ConsumerOffsetStalled", ["cluster", "group", "topic"]),
    ("ConsumerGroupOffline", "OneGroupLagging", ["cluster", "group", "topic"]),
    ("ConsumerGroupOffline", "ConsumeDelayHigh", ["cluster", "group", "topic"]),
    ("BrokerStoppedReporting", "ConsumerOffsetStalled", ["cluster", "broker"]),
    ("DispatchBehind", "TopicWritesStopped", ["cluster", "broker"]),
    ("RetryBacklogGrowing", "DeadLetterQueueGrowing", ["cluster", "group"]),
    ("CollectorTargetUnreachable", "BrokerStoppedReporting", ["cluster", "broker", "broker_id"]),
    ("CollectorTargetUnreachable", "ConsumerOffsetStalled", ["cluster", "broker"]),
    ("CollectorTargetUnreachable", "ConsumptionBlocked", ["cluster", "broker"]),
])
def test_the_causal_chains_of_the_design_ship_with_the_pack(cause, effect, on):
    link = LINKS.link(cause, effect)
    assert link is not None and list(link.on) == on


# Links on a label the rule's table may hold null, each with why that is right.
NULLABLE_LINK_LABELS = {
    # Alerts about a name server or an exporter name no broker: they explain nothing on the broker side.
    ("CollectorTargetUnreachable", "broker"): "null for a target that is no broker",
    ("CollectorTargetUnreachable", "broker_id"): "null for a target that is no broker",
    ("DeadLetterQueueGrowing", "group"): "never null: dlq_queue holds %DLQ% topics, each named after its group",
}


def test_links_on_a_nullable_label_are_the_known_ones():
    # A link on a label some of a rule's alerts lack never matches those alerts: a new one must be a
    # deliberate choice, listed above.
    nullable = {(side, label) for link in LINKS.links for side in (link.cause, link.effect)
                for label in set(link.on) & _optional(side)}
    assert nullable == set(NULLABLE_LINK_LABELS)


@pytest.mark.parametrize("path", sorted(BUILTIN_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_each_pack_file_loads_alone_though_its_links_name_rules_of_other_files(path):
    # Rule unit tests and `rocketwatch check FILE` load one file of the pack at a time.
    assert check_rule_files([path]) == []


def _alert(rule: str, **labels: str):
    from rules.findings import Finding

    return Finding(rule, {"cluster": "prod", **labels, "category": PACK.get(rule).labels["category"]}, "warning", 1, None)


def test_a_stuck_consumer_is_one_incident_led_by_the_stuck_message():
    queue = {"group": "orders", "topic": "Orders", "broker": "broker-a", "queue_id": "3"}
    stuck = _alert("StuckMessage", **queue, client_id="10.0.0.7@5764")
    present = [
        _alert("ConsumeDelayHigh", group="orders", topic="Orders"),
        _alert("ConsumerOffsetStalled", **queue),
        _alert("ProcessQueueSpanTooLong", **queue, client_id="10.0.0.7@5764"),
        _alert("OneGroupLagging", group="orders", topic="Orders"),
        stuck,
        _alert("ConsumerOffsetStalled", **{**queue, "group": "billing"}),  # another group: its own incident
    ]
    assert [a.rule + "/" + a.labels["group"] for a in LINKS.roots(present)] == [
        "StuckMessage/orders", "ConsumerOffsetStalled/billing"]
    assert LINKS.ordered(present)[0] is stuck


def test_a_group_gone_offline_explains_its_stalled_queues_lag_and_delay():
    offline = _alert("ConsumerGroupOffline", group="orders", topic="Orders")
    present = [_alert("ConsumerOffsetStalled", group="orders", topic="Orders", broker=b, queue_id=q)
               for b in ("broker-a", "broker-b") for q in ("0", "1")]
    present += [_alert("ConsumeDelayHigh", group="orders", topic="Orders"), offline,
                _alert("RetryBacklogGrowing", group="orders")]
    assert LINKS.roots(present) == [offline]


def test_a_crashed_broker_is_one_incident_led_by_the_unreachable_address():
    # bench/results/pages.md, broker-crash: broker-b refuses every call, its runtime figures go stale,
    # the queues it holds stop committing; the name server's own trouble is another incident.
    unreachable = _alert("CollectorTargetUnreachable", target="10.0.0.2:10911", broker="broker-b", broker_id="0")
    present = [
        _alert("BrokerStoppedReporting", broker="broker-b", broker_id="0"),
        _alert("ConsumerOffsetStalled", group="orders", topic="Orders", broker="broker-b", queue_id="1"),
        _alert("ConsumptionBlocked", group="orders", topic="Orders", broker="broker-b", queue_id="1",
               client_id="10.0.0.7@5764"),
        unreachable,
        _alert("BrokerStoppedReporting", broker="broker-b", broker_id="1"),  # the slave reports no more either
        _alert("CollectorTargetUnreachable", target="10.0.0.9:9876"),  # a name server: no broker label
    ]
    assert [a.labels["target"] if "target" in a.labels else a.rule + "/" + a.labels["broker_id"]
            for a in LINKS.roots(present)] == ["10.0.0.2:10911", "BrokerStoppedReporting/1", "10.0.0.9:9876"]
    assert LINKS.ordered(present)[0] is unreachable
    # An unreachable name server explains nothing on the broker side.
    name_server = present[-1]
    assert not [a for a in present if LINKS.explains(name_server.rule, name_server.labels, a.rule, a.labels)]
