"""Email against a real SMTP server on 127.0.0.1 (aiosmtpd)."""

from __future__ import annotations

import asyncio
import ssl
import subprocess

import pytest

from config.receivers import EmailReceiver
from daemon.notify.factory import build_notifier
from tests.daemon.notify.conftest import Cycle, at, span
from tests.helpers.smtp_server import SmtpServer


@pytest.fixture
def smtp():
    with SmtpServer() as server:
        yield server


def mail_receiver(smtp: SmtpServer, **extra) -> EmailReceiver:
    return EmailReceiver(
        type="email", name="oncall-mail", host=smtp.host, port=smtp.port, from_addr="rocketwatch@example.com",
        to=["mq-oncall@example.com"], **({"security": "none"} | extra),
    )


def test_firing_then_resolved_mails_thread_per_group(db, smtp):
    cycle = Cycle(db, ["oncall-mail"])
    notifiers = {"oncall-mail": build_notifier(mail_receiver(smtp))}
    cycle.run([span(queue=3)], at(0))
    asyncio.run(cycle.outbox.deliver_due(notifiers, at(0)))
    cycle.run([], at(60))
    asyncio.run(cycle.outbox.deliver_due(notifiers, at(60)))

    firing, resolved = smtp.wait_for(2)
    assert firing["Subject"] == "WARNING ProcessQueueSpanTooLong · stuckGroup · prod"
    assert resolved["Subject"] == "RESOLVED ProcessQueueSpanTooLong · stuckGroup · prod"
    assert firing["In-Reply-To"] is None
    assert resolved["In-Reply-To"] == firing["Message-ID"] == resolved["References"]
    assert resolved["Message-ID"] != firing["Message-ID"]
    assert smtp.received[0].rcpt_tos == ["mq-oncall@example.com"]

    assert firing.get_content_type() == "multipart/alternative"
    text = firing.get_body(("plain",)).get_content()
    html = firing.get_body(("html",)).get_content()
    assert "stuckGroup: queue broker-a/3 span 1500" in text and "Next steps: 1) Take five jstacks" in text
    assert "broker-a" in html and "<table>" in html
    assert "RESOLVED" in resolved.get_body(("plain",)).get_content()
    assert "resolved at 2026-03-01 12:01:00 UTC" in resolved.get_body(("plain",)).get_content()


def test_message_id_is_the_outbox_idempotency_key(db, smtp):
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span()], at(0))
    (row,) = cycle.outbox.rows()
    asyncio.run(cycle.outbox.deliver_due({"oncall-mail": build_notifier(mail_receiver(smtp))}, at(0)))
    (mail,) = smtp.wait_for(1)
    assert mail["Message-ID"] == f"<{row.idempotency_key}.rocketwatch@example.com>"


def test_html_escapes_values(db, smtp):
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span(group="<script>alert(1)</script>")], at(0))
    asyncio.run(cycle.outbox.deliver_due({"oncall-mail": build_notifier(mail_receiver(smtp))}, at(0)))
    (mail,) = smtp.wait_for(1)
    html = mail.get_body(("html",)).get_content()
    assert "<script>" not in html and "&lt;script&gt;" in html


def _self_signed(tmp_path) -> tuple[str, str]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    return str(cert), str(key)


def test_starttls_with_auth(db, tmp_path):
    cert, key = _self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    with SmtpServer(tls_context=context, credentials=("rw", "s3cret")) as smtp:
        receiver = mail_receiver(smtp, security="starttls", username="rw", password_env="SMTP_PW", ca_file=cert)
        notifier = build_notifier(receiver, env={"SMTP_PW": "s3cret"})
        assert "s3cret" not in repr(notifier)
        cycle = Cycle(db, ["oncall-mail"])
        cycle.run([span()], at(0))
        report = asyncio.run(cycle.outbox.deliver_due({"oncall-mail": notifier}, at(0)))
        assert report.delivered == 1, report
        assert len(smtp.wait_for(1)) == 1

        bad = build_notifier(receiver, env={"SMTP_PW": "wrong"})
        cycle.run([], at(60))
        report = asyncio.run(cycle.outbox.deliver_due({"oncall-mail": bad}, at(60)))
        assert report.failed == 1 and "wrong" not in str(report)


def test_implicit_tls(db, tmp_path):
    cert, key = _self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    with SmtpServer(tls_context=context, implicit_tls=True) as smtp:
        notifier = build_notifier(mail_receiver(smtp, security="tls", ca_file=cert))
        cycle = Cycle(db, ["oncall-mail"])
        cycle.run([span()], at(0))
        report = asyncio.run(cycle.outbox.deliver_due({"oncall-mail": notifier}, at(0)))
        assert report.delivered == 1, report
        assert len(smtp.wait_for(1)) == 1
