"""The outbox: rows before sends, backoff on failure, order per group, survival across restarts."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from config.receivers import EmailReceiver
from daemon.alerts.db import StateDB
from daemon.notify.factory import build_notifier
from daemon.notify.outbox import Outbox, backoff
from tests.daemon.notify.conftest import Cycle, at, span
from tests.helpers.smtp_server import SmtpServer


def mailer(smtp: SmtpServer):
    return build_notifier(EmailReceiver(
        type="email", name="oncall-mail", host=smtp.host, port=smtp.port, security="none",
        from_addr="rocketwatch@example.com", to=["mq-oncall@example.com"], timeout=2,
    ))


def deliver(outbox: Outbox, notifiers, now):
    return asyncio.run(outbox.deliver_due(notifiers, now))


def test_backoff_doubles_from_5s_and_caps_at_5min():
    assert [backoff(n).total_seconds() for n in range(1, 9)] == [5, 10, 20, 40, 80, 160, 300, 300]


def test_smtp_down_keeps_the_row_then_delivers_exactly_once(db):
    smtp = SmtpServer()  # not started: connection refused
    notifiers = {"oncall-mail": mailer(smtp)}
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span()], at(0))

    report = deliver(cycle.outbox, notifiers, at(0))
    assert (report.delivered, report.failed) == (0, 1)
    (row,) = cycle.outbox.rows()
    assert row.attempts == 1 and row.delivered_at is None
    assert row.next_attempt_at == at(5)
    assert "receiver 'oncall-mail'" in row.last_error and 'group="stuckGroup"' in row.last_error
    assert "attempt 1 failed" in row.last_error

    smtp.start()
    try:
        report = deliver(cycle.outbox, notifiers, at(3))  # before the backoff: not even tried
        assert (report.delivered, report.failed, report.waiting) == (0, 0, 1)
        report = deliver(cycle.outbox, notifiers, at(5))
        assert (report.delivered, report.failed) == (1, 0)
        report = deliver(cycle.outbox, notifiers, at(60))
        assert (report.delivered, report.failed, report.waiting) == (0, 0, 0)
        assert len(smtp.wait_for(1)) == 1
        (row,) = cycle.outbox.rows()
        assert row.delivered_at == at(5) and row.attempts == 2 and cycle.outbox.depth() == 0
    finally:
        smtp.stop()


def test_resolve_never_goes_out_before_its_firing(db):
    smtp = SmtpServer()
    notifiers = {"oncall-mail": mailer(smtp)}
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span()], at(0))
    deliver(cycle.outbox, notifiers, at(0))  # firing fails: server down
    cycle.run([], at(2))                      # the alert resolves while the firing is still queued

    smtp.start()
    try:
        # The resolve row is due, but its group's firing row is still backing off: nothing is sent.
        report = deliver(cycle.outbox, notifiers, at(3))
        assert (report.delivered, report.waiting) == (0, 2)
        report = deliver(cycle.outbox, notifiers, at(5))
        assert report.delivered == 2
        firing, resolved = smtp.wait_for(2)
        assert firing["Subject"].startswith("WARNING ") and resolved["Subject"].startswith("RESOLVED ")
        assert resolved["In-Reply-To"] == firing["Message-ID"]
    finally:
        smtp.stop()


def test_a_failing_group_does_not_hold_back_other_groups(db):
    smtp = SmtpServer()
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span(group="stuckGroup")], at(0))
    deliver(cycle.outbox, {"oncall-mail": mailer(smtp)}, at(0))
    cycle.run([span(group="stuckGroup"), span(group="otherGroup")], at(1))
    smtp.start()
    try:
        report = deliver(cycle.outbox, {"oncall-mail": mailer(smtp)}, at(2))
        assert (report.delivered, report.waiting) == (1, 1)
        assert "otherGroup" in smtp.wait_for(1)[0]["Subject"]
    finally:
        smtp.stop()


def test_rows_and_threads_survive_a_restart(tmp_path):
    path = tmp_path / "state.db"
    with SmtpServer() as smtp:
        db = StateDB(path)
        cycle = Cycle(db, ["oncall-mail"])
        cycle.run([span()], at(0))
        deliver(cycle.outbox, {"oncall-mail": mailer(smtp)}, at(0))
        cycle.run([], at(60))  # queued, not yet sent: then the daemon dies
        db.close()

        db = StateDB(path)
        outbox = Outbox(db)
        assert outbox.depth() == 1
        report = deliver(outbox, {"oncall-mail": mailer(smtp)}, at(120))
        assert report.delivered == 1
        firing, resolved = smtp.wait_for(2)
        assert resolved["In-Reply-To"] == firing["Message-ID"]  # the thread was remembered on disk
        db.close()


def test_a_thread_a_newer_version_recorded_is_still_continued(db):
    # A rollback, or an older HA daemon beside a newer one: the stored thread holds a field this
    # version does not know; the group's resolve still replies in its thread.
    with SmtpServer() as smtp:
        cycle = Cycle(db, ["oncall-mail"])
        cycle.run([span()], at(0))
        deliver(cycle.outbox, {"oncall-mail": mailer(smtp)}, at(0))
        with db.transaction() as conn:  # the local thread and the notification log's copy of it
            conn.execute("UPDATE notification_threads SET thread_ref = json_set(thread_ref, '$.sent_marked', json('true'))")
            conn.execute("UPDATE coord_log SET receiver_data = json_set(receiver_data, '$.thread.sent_marked', json('true'))")
        cycle.run([], at(60))
        report = deliver(cycle.outbox, {"oncall-mail": mailer(smtp)}, at(60))
        assert report.delivered == 1, report.errors
        firing, resolved = smtp.wait_for(2)
        assert resolved["In-Reply-To"] == firing["Message-ID"]


def test_unknown_receiver_is_kept_with_an_error(db):
    cycle = Cycle(db, ["gone"])
    cycle.run([span()], at(0))
    report = deliver(cycle.outbox, {}, at(0))
    assert report.failed == 1 and "receiver 'gone'" in report.errors[0]
    assert cycle.outbox.depth() == 1


def test_repeated_failures_back_off_further(db):
    smtp = SmtpServer()
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span()], at(0))
    now = at(0)
    for expected in (5, 10, 20):
        deliver(cycle.outbox, {"oncall-mail": mailer(smtp)}, now)
        (row,) = cycle.outbox.rows()
        assert row.next_attempt_at - now == timedelta(seconds=expected)
        now = row.next_attempt_at


def test_prune_forgets_old_delivered_rows(db):
    with SmtpServer() as smtp:
        cycle = Cycle(db, ["oncall-mail"])
        cycle.run([span()], at(0))
        deliver(cycle.outbox, {"oncall-mail": mailer(smtp)}, at(0))
        cycle.run([], at(60))
        assert cycle.outbox.prune(at(30)) == 1
        assert len(cycle.outbox.rows()) == 1


def test_a_hanging_receiver_times_out_and_is_retried(db):
    class Hangs:
        async def send(self, notification, thread):
            await asyncio.sleep(10)

    cycle = Cycle(db, ["slow"])
    cycle.outbox.send_timeout = 0.05
    cycle.run([span()], at(0))
    report = deliver(cycle.outbox, {"slow": Hangs()}, at(0))
    assert report.failed == 1 and "TimeoutError: no answer within 0.05s" in report.errors[0]


def test_jitter_spreads_the_retries_of_rows_that_failed_together(db):
    cycle = Cycle(db, ["mail"])
    cycle.run([span(group=f"g{group}") for group in range(20)], at(0))  # 20 groups: 20 notifications
    outbox = Outbox(db, jitter=0.2)
    report = asyncio.run(outbox.deliver_due({}, at(0)))  # the receiver is missing: every send fails
    assert report.failed == 20
    waits = {(r.next_attempt_at - at(0)).total_seconds() for r in outbox.rows(undelivered_only=True)}
    assert len(waits) > 10 and all(5 <= w <= 6 for w in waits)  # 5 s plus up to 20 %
