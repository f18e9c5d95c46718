"""Every page can be delivered and nothing on it is cut (issue 44), over every built-in rule's real texts.

Hypothesis draws incidents of 1 to 30 alerts of the built-in rules, their annotations rendered from
the rules' own templates with long, plausible values (long group, topic and client names, offsets
in the billions), linked as the pack links them, as a first page, an update or a resolve. Each Slack
message must stay within Slack's limits; every text the message starts to show it shows whole (a
diagnosis is split between sections, never cut); a folded message counts what it folded.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.notify import render, slack_budget
from daemon.notify.model import AlertSnapshot, Change, IncidentMember, IncidentSnapshot, Notification
from rules.kinds.base import TEMPLATE_FIELDS
from rules.links import CausalLinks
from rules.loader import load_rule_files
from rules.tables import BOOL, FLOAT64, INT32, INT64, TIMESTAMP
from rules.templates import parse_template, render_template, template_names, tidy

PACK = load_rule_files(["builtin"])
RULES = {r.alert: r for r in PACK.rules}
LINKS = CausalLinks.from_rules(PACK)
T0 = datetime(2026, 3, 1, 3, 0, tzinfo=UTC)
EXTERNAL = "https://rocketwatch.ops.example.com/prod-cluster-eu-west"
# The longest names an operator plausibly gives: a consumer group, a topic, a broker, a client id.
LONG = {
    "cluster": "rocketmq-prod-eu-west-1-payments", "group": "GID_payments_settlement_reconciliation_consumer_v2",
    "topic": "TOPIC_payments_settlement_reconciliation_events", "broker": "broker-payments-eu-west-1-az2-b",
    "client_id": "10.201.134.251@1234567#settlement-consumer-7f9c6d8b5-x2k4q", "addr": "10.201.134.17:10911",
    "host": "rocketwatch-eu-west-1-payments-01.ops.example.com", "target": "10.201.134.17:10911 (broker-payments-a)",
}


def _value(name: str, column_type: str | None, draw) -> object:
    if name in LONG:
        return LONG[name]
    if column_type == BOOL:
        return draw(st.booleans())
    if column_type == TIMESTAMP:
        return T0
    if column_type in (INT32, INT64):
        return draw(st.integers(0, 10**12))
    if column_type == FLOAT64 or name in ("value", "threshold"):
        return draw(st.floats(0, 1e9, allow_nan=False))
    return draw(st.sampled_from(["SEND_MESSAGE (code 10): remote timeout after 3000 ms on channel 10.201.134.17",
                                 "consumerA-7f9c6d8b5-x2k4q, consumerA-7f9c6d8b5-m8z1p, consumerA-7f9c6d8b5-q3w9r"]))


@st.composite
def alerts(draw, index: int) -> AlertSnapshot:
    rule = RULES[draw(st.sampled_from(sorted(RULES)))]
    table = rule.table_def
    values: dict[str, object] = {"severity": draw(st.sampled_from(["warning", "critical"]))}
    for field in TEMPLATE_FIELDS:
        for name in template_names(getattr(rule, field)):
            column = table.column(name)
            values.setdefault(name, _value(name, column.type if column is not None else None, draw))
    annotations = {field: tidy(render_template(parse_template(getattr(rule, field)), values))
                   for field in TEMPLATE_FIELDS if getattr(rule, field)}
    labels = {k: LONG[k] for k in ("cluster", "group", "topic", "broker", "client_id")} | {"queue_id": str(index % 16)}
    start = T0 + timedelta(seconds=index)
    return AlertSnapshot(fingerprint=f"fp{index:02d}", rule=rule.alert, labels=labels, severity=str(values["severity"]),
                         value=float(draw(st.integers(0, 10**9))), threshold=1000.0, annotations=annotations,
                         state="firing", active_at=start, fired_at=start)


@st.composite
def notifications(draw) -> Notification:
    count = draw(st.integers(1, 30))
    shown = [draw(alerts(i)) for i in range(count)]
    status = draw(st.sampled_from(["first", "update", "resolved"]))
    end = T0 + timedelta(minutes=20)
    if status == "resolved":
        shown = [a.model_copy(update={"state": "resolved", "resolved_at": end}) for a in shown]
    root = shown[0]
    members = [IncidentMember(fingerprint=a.fingerprint, rule=a.rule, labels=a.labels, joined_at=a.active_at,
                              cause=root.fingerprint if LINKS.link(root.rule, a.rule) and a is not root else None,
                              why=(LINKS.why(root.rule, a.rule) if LINKS.link(root.rule, a.rule) and a is not root
                                   else ""), resolved_at=a.resolved_at)
               for a in shown]
    incident = IncidentSnapshot(id=f"{LONG['cluster']}/{LONG['group']}@2026-03-01T03:00:00Z", opened_at=T0,
                                resolved_at=end if status == "resolved" else None, root=root.fingerprint,
                                members=members, ended_by=shown[-1].fingerprint if status == "resolved" else None)
    changes = [Change(kind="resolved" if status == "resolved" else "firing", fingerprint=a.fingerprint,
                      severity=a.severity) for a in (shown if status != "update" else shown[-3:])]
    return Notification(group_key='{incident="x"}', group_labels={"incident": incident.id},
                        status="resolved" if status == "resolved" else "firing", alerts=shown, changes=changes,
                        is_update=status != "first", created_at=end, reason=status, incident=incident)


def _texts(message: dict) -> list[str]:
    return [t for b in slack_budget.all_blocks(message) for t in slack_budget.block_texts(b)]


def _flat(text: str) -> str:
    return " ".join(text.split())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(n=notifications(), max_alerts=st.sampled_from([10, 20]), compact=st.booleans())
def test_every_slack_page_fits_slacks_limits_and_shows_whole_what_it_starts_to_show(n, max_alerts, compact):
    message = render.slack_message(n, max_alerts=max_alerts, actions=True, notes=["Acknowledged by ana at 03:05 UTC"],
                                   rules=RULES.get, external_url=EXTERNAL, detail="compact" if compact else "full",
                                   mention="S0123ABC")
    assert slack_budget.problems(message) == []
    texts = _texts(message)
    assert not any(t.endswith("…") for t in texts), "nothing is cut with an ellipsis"
    joined = _flat(" ".join(texts))
    for a in n.alerts:
        # first_step opens the page for the lead only (it shares its opening with next steps' first)
        for field in ("diagnosis", "next_steps") + (("first_step",) if a is n.alerts[0] else ()):
            said = _flat(render_slack_escape(a.annotations.get(field, "")))
            if said and said[:120] in joined and said not in joined:
                # the opening may be another alert's of the same rule, whose text is shown whole
                whole = [b for b in n.alerts if b.rule == a.rule and b is not a
                         and _flat(render_slack_escape(b.annotations.get(field, ""))) in joined]
                assert whole, f"{a.rule} {field} is shown cut"
    folded = re.search(r"_(\d+) alerts? folded", joined)
    if folded:
        assert int(folded.group(1)) == len(n.alerts) - 1, "a folded message counts every alert it folded"
    assert "/incidents/" in joined, "every page links its incident"


def render_slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def test_a_long_text_is_split_before_a_numbered_step_then_at_a_sentence_then_at_a_word():
    steps = " ".join(f"{i}) " + "word " * 80 + "end." for i in range(1, 6))
    pieces = slack_budget.split(steps, 1000)
    assert " ".join(pieces) == steps, "nothing lost or changed"
    assert all(len(p) <= 1000 for p in pieces)
    assert all(re.match(r"\d\) ", p) for p in pieces), "each piece starts at a numbered step"
    prose = "A sentence of several words. " * 60
    assert all(p.endswith(".") for p in slack_budget.split(prose.strip(), 500))
    words = "word " * 1000
    assert all(p.endswith("word") for p in slack_budget.split(words.strip(), 700))
