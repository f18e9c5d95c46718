"""Silences and inhibition decide what reaches people; muted alerts are announced when the mute ends."""

from __future__ import annotations

from datetime import timedelta

from daemon.alerts.inhibit import Inhibitor
from daemon.alerts.silences import SilenceStore
from rules.findings import Finding
from tests.daemon.notify.conftest import T0, Cycle, at, span


def _consumer(queue: int = 3, broker: str = "broker-a") -> Finding:
    f = span(queue=queue)
    return Finding(f.rule, {**f.labels, "broker": broker, "category": "consumer"}, "critical", 3626, 2000, f.annotations)


def _dispatch_behind(broker: str = "broker-a", severity: str = "critical") -> Finding:
    labels = {"cluster": "prod", "broker": broker, "broker_id": "0", "category": "broker"}
    return Finding("DispatchBehind", labels, severity, 300, 256, {"summary": f"{broker} behind", "diagnosis": "d", "next_steps": "n"})


def test_a_silence_mutes_matching_alerts_and_its_expiry_lets_them_through(db):
    silences = SilenceStore(db)
    silence = silences.add(['group="stuckGroup"', "queue_id=~\"3|4\""], T0, T0 + timedelta(minutes=10), "ana", "deploying", T0)
    cycle = Cycle(db, ["slack"], silences=silences)
    ((_, n),) = cycle.run([span(queue=3), span(queue=5)], at(0))
    # Only queue 5 reached anyone; queue 3 fires silently.
    assert [a.labels["queue_id"] for a in n.alerts] == ["5"]
    assert cycle.run([span(queue=3), span(queue=5)], at(30)) == []
    silences.expire(silence.id, at(60))
    ((_, n),) = cycle.run([span(queue=3), span(queue=5)], at(60))
    assert n.is_update and sorted(a.labels["queue_id"] for a in n.alerts) == ["3", "5"]
    fp3 = next(a.fingerprint for a in n.alerts if a.labels["queue_id"] == "3")
    assert [(c.fingerprint, c.kind, c.reason) for c in n.changes] == [(fp3, "firing", "no longer silenced or inhibited")]


def test_a_silenced_alert_that_resolves_while_silenced_is_never_mentioned(db):
    silences = SilenceStore(db)
    silences.add(['queue_id="3"'], T0, T0 + timedelta(hours=1), "ana", "known", T0)
    cycle = Cycle(db, ["slack"], silences=silences)
    assert cycle.run([span(queue=3)], at(0)) == []
    assert cycle.run([], at(30)) == []


def test_a_broker_cause_inhibits_consumer_symptoms_on_the_same_broker_only(db):
    rule = Inhibitor.parse(['category="broker"', 'severity="critical"'], ['category="consumer"'], ["cluster", "broker"])
    cycle = Cycle(db, ["slack"], group_by=["alertname", "cluster"], inhibitors=[rule])
    queued = cycle.run([_dispatch_behind("broker-a"), _consumer(3, "broker-a"), _consumer(4, "broker-b")], at(0))
    sent = {(n.group_labels["alertname"], a.labels["broker"]) for _, n in queued for a in n.alerts}
    assert sent == {("DispatchBehind", "broker-a"), ("ProcessQueueSpanTooLong", "broker-b")}
    # The cause resolves while the symptom goes on: now the symptom is news.
    queued = cycle.run([_consumer(3, "broker-a"), _consumer(4, "broker-b")], at(30))
    symptom = next(n for _, n in queued if n.group_labels["alertname"] == "ProcessQueueSpanTooLong")
    fp_a = next(a.fingerprint for a in symptom.alerts if a.labels["broker"] == "broker-a")
    assert [c.fingerprint for c in symptom.changes] == [fp_a]


def test_a_warning_on_the_broker_does_not_inhibit(db):
    rule = Inhibitor.parse(['category="broker"', 'severity="critical"'], ['category="consumer"'], ["cluster", "broker"])
    cycle = Cycle(db, ["slack"], group_by=["alertname"], inhibitors=[rule])
    queued = cycle.run([_dispatch_behind(severity="warning"), _consumer(3)], at(0))
    assert {n.group_labels["alertname"] for _, n in queued} == {"DispatchBehind", "ProcessQueueSpanTooLong"}
