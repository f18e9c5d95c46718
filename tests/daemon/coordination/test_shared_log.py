"""The shared notification log and incident identity, as two daemons see them: what a holder told is what
the next holder reads, pending is what fires minus that, keys never repeat. SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from daemon.coordination.keys import email_message_id, idempotency_key
from daemon.coordination.model import Coordinator, Fenced, GroupRef, Told
from daemon.coordination.pending import PendingChange, pending_changes, told_by
from tests.daemon.coordination.conftest import Connect, run_pair
from tests.daemon.coordination.test_lease import LABELS, REF, hold_and_send, keep_holding, keepers
from tests.helpers.clock import ManualClock


def test_what_one_holder_told_is_what_the_next_reads_and_pending_is_what_fires_minus_it(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, kb = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        opened = clock.now
        await a.note_pending(ka.fence(), REF, LABELS, opened)
        clock.advance(5)
        await a.note_pending(ka.fence(), REF, LABELS, clock.now)  # group_wait counts from the first
        group = await b.log_group(REF)
        assert group is not None and group.first_pending_at == opened and group.last_sent_at is None
        firing = {"fp-span": "warning"}
        changes = pending_changes(group, firing)
        assert changes == [PendingChange("firing", "fp-span", "warning")]
        intent = await a.record_intent(ka.fence(), REF, LABELS, told_by(firing, changes), "first", clock.now)
        assert intent.key == idempotency_key(REF.receiver, REF.group_key, intent.seq) and not intent.retry
        await a.record_sent(ka.fence(), intent.ref, intent.seq, {"channel": "C0ONCALL", "ts": "1764212400.000100"}, clock.now)
        # Recorded again (its commit's answer was lost on the way back): the same record, no error.
        await a.record_sent(ka.fence(), intent.ref, intent.seq, {"channel": "C0ONCALL", "ts": "1764212400.000100"}, clock.now)
        # B (the standby) reads the same record: nothing is pending for what A told.
        group = await b.log_group(REF)
        assert group.told_firing == firing and group.last_sent_at == clock.now and group.first_pending_at is None
        assert group.receiver_data == {"channel": "C0ONCALL", "ts": "1764212400.000100"}
        assert group.open_intent is None and group.last_reason == "first"
        assert pending_changes(group, firing) == []
        assert pending_changes(group, {"fp-span": "critical"}) == [
            PendingChange("severity_changed", "fp-span", "critical", "warning")]
        assert pending_changes(group, {}, muted={"fp-span"}) == [], "a silenced alert has not resolved"
        assert pending_changes(group, {}) == [PendingChange("resolved", "fp-span", "warning")]

    run_pair(connect, scenario)


def test_a_group_closed_and_reopened_keeps_counting_so_its_keys_never_repeat(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, _ = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        fence = ka.fence()
        first = await a.record_intent(fence, REF, LABELS, Told({"fp-lag": "warning"}), "first", clock.now)
        await a.record_sent(fence, first.ref, first.seq, {"message_id": email_message_id(first.key)}, clock.now)
        await keep_holding(clock, ka, 60)
        resolve = await a.record_intent(fence, REF, LABELS, Told({}, ("fp-lag",)), "resolved", clock.now)
        await a.record_sent(fence, resolve.ref, resolve.seq, {}, clock.now)
        group = await a.log_group(REF)
        assert group.told_firing == {} and set(group.told_resolved) == {"fp-lag"}
        await a.close_group(fence, REF, clock.now)
        assert [g.ref for g in await b.log_groups()] == []
        await keep_holding(clock, ka, 60)
        await a.note_pending(fence, REF, LABELS, clock.now)  # fires again: a new message, nothing told yet
        group = await b.log_group(REF)
        assert not group.closed and group.told_firing == {} and group.receiver_data == {}
        again = await a.record_intent(fence, REF, LABELS, Told({"fp-lag": "warning"}), "first", clock.now)
        assert first.seq < resolve.seq < again.seq
        assert len({first.key, resolve.key, again.key}) == 3
        assert [g.ref for g in await b.log_groups()] == [REF]

    run_pair(connect, scenario)


def test_a_send_confirmed_late_does_not_undo_a_later_one(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, _ = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        fence = ka.fence()
        older = await a.record_intent(fence, REF, LABELS, Told({"fp-1": "warning"}), "first", clock.now)
        newer = await a.record_intent(fence, REF, LABELS, Told({"fp-1": "warning", "fp-2": "critical"}),
                                      "new_alerts_in_group", clock.now)
        assert newer.seq > older.seq and not newer.retry
        await a.record_sent(fence, newer.ref, newer.seq, {"ts": "2"}, clock.now)
        await a.record_sent(fence, older.ref, older.seq, {"ts": "1"}, clock.now)
        group = await b.log_group(REF)
        assert group.told_firing == {"fp-1": "warning", "fp-2": "critical"} and group.last_reason == "new_alerts_in_group"

    run_pair(connect, scenario)


def test_groups_told_before_ha_are_seeded_once(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, _ = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        told_at = clock.now - timedelta(minutes=7)
        thread = {"channel": "C0ONCALL", "ts": "1764212000.000200"}
        assert await a.seed_group(ka.fence(), REF, LABELS, Told({"fp-span": "warning"}), thread, told_at)
        assert not await a.seed_group(ka.fence(), REF, LABELS, Told({"fp-other": "critical"}), {}, clock.now)
        group = await b.log_group(REF)
        assert group.told_firing == {"fp-span": "warning"} and group.receiver_data == thread
        assert group.last_sent_at == told_at and pending_changes(group, {"fp-span": "warning"}) == []

    run_pair(connect, scenario)


def test_two_daemons_name_one_incident_once(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        locus = {"cluster": "prod", "group": "orders"}
        t1 = clock.now
        mine = await a.claim_incident(locus, "prod/orders@2026-11-27T03:00:00Z", t1)
        assert (mine.id, mine.adopted, mine.opened_at) == ("prod/orders@2026-11-27T03:00:00Z", False, t1)
        clock.advance(12)  # B evaluates a little later and would have named it by its own time
        theirs = await b.claim_incident({"group": "orders", "cluster": "prod"}, "prod/orders@2026-11-27T03:00:12Z",
                                        clock.now)
        assert (theirs.id, theirs.adopted, theirs.opened_at) == (mine.id, True, t1)
        other = await b.claim_incident({"cluster": "prod", "broker": "broker-a"}, "prod/broker-a@x", clock.now)
        assert other.id == "prod/broker-a@x" and not other.adopted
        await b.resolve_incident(mine.id, clock.now)
        reopened = await a.claim_incident(locus, "prod/orders@2026-11-27T03:00:00Z", clock.now)
        assert reopened.id == "prod/orders@2026-11-27T03:00:00Z#2" and not reopened.adopted

    run_pair(connect, scenario)


@pytest.mark.parametrize("seq", [0, -1])
def test_keys_are_numbered_from_one(seq: int) -> None:
    with pytest.raises(ValueError, match="numbered from 1"):
        idempotency_key("webhook", "{}", seq)


def test_keys_differ_by_receiver_group_and_sequence_and_are_the_same_on_every_daemon() -> None:
    keys = {idempotency_key(r, g, s) for r in ("slack", "email") for g in ('{a="1"}', '{a="2"}') for s in (1, 2)}
    assert len(keys) == 8
    assert idempotency_key("slack", '{a="1"}', 1) == idempotency_key("slack", '{a="1"}', 1)
    assert GroupRef("r", "slack", "g") == GroupRef("r", "slack", "g")


def test_the_email_message_id_of_a_key_is_the_one_the_email_receiver_writes() -> None:
    from datetime import UTC, datetime

    from daemon.notify.email import EmailNotifier
    from daemon.notify.model import Notification

    key = idempotency_key("oncall-mail", '{incident="prod/orders@t"}', 7)
    notification = Notification(group_key='{incident="prod/orders@t"}', group_labels={}, status="firing", alerts=[],
                                changes=[], is_update=False, created_at=datetime(2026, 11, 27, tzinfo=UTC),
                                idempotency_key=key)
    mail = EmailNotifier("oncall-mail", "smtp.ops.example", 587, "rw@ops.example", ["oncall@ops.example"])
    assert mail.build(notification, None)["Message-ID"] == email_message_id(key, "ops.example")


def test_a_holder_that_lost_and_retook_the_lease_retries_its_unconfirmed_send_under_the_same_key(
        connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, _ = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        told = Told({"fp-span": "warning"})
        intent = await a.record_intent(ka.fence(), REF, LABELS, told, "first", clock.now)
        clock.advance(16)  # its send hung past the deadline; the lease expired, nobody else wanted it
        assert await ka.renew() and ka.epoch == intent.epoch + 1
        with pytest.raises(Fenced, match=f"is open under epoch {intent.epoch}"):
            await a.record_sent(ka.fence(), REF, intent.seq, {"ts": "1.1"}, clock.now)
        again = await a.record_intent(ka.fence(), REF, LABELS, told, "first", clock.now)
        assert (again.seq, again.key, again.retry) == (intent.seq, intent.key, True)
        await a.record_sent(ka.fence(), REF, again.seq, {"ts": "1.1"}, clock.now)
        assert (await b.log_group(REF)).told_firing == {"fp-span": "warning"}

    run_pair(connect, scenario)
