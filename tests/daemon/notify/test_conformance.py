"""Every receiver kind passes the same checks against a real server on loopback: it delivers, it
says whether a failure is worth retrying, it never shows a secret, and it does not hold up others."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest

from config.receivers import EmailReceiver, SlackReceiver, WebhookReceiver
from daemon.notify.errors import DeliveryError
from daemon.notify.factory import build_notifier
from daemon.notify.model import Notification, Notifier
from tests.daemon.notify.conftest import Cycle, at, span
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer
from tests.helpers.webhook_server import WebhookServer

SLACK_TOKEN = "xoxb-conformance-5ecret"
SMTP_PASSWORD = "smtp-conformance-5ecret"
HOOK_TOKEN = "hook-conformance-5ecret"


@dataclass
class Kit:
    """One receiver kind wired to its local server, with ways to break it."""

    notifier: Notifier
    secrets: tuple[str, ...]
    delivered: Callable[[], list[str]]  # what the server received, as text
    break_for_now: Callable[[], None]
    heal: Callable[[], None]
    refusing_for_good: Callable[[], Notifier]  # a notifier the server will refuse whatever happens


def slack_kit(stack: ExitStack) -> Kit:
    slack = stack.enter_context(SlackServer(token=SLACK_TOKEN))
    config = SlackReceiver(type="slack", name="slack", channel="#mq", token_env="T", base_url=slack.base_url, timeout=5)

    def refusing() -> Notifier:
        slack.fail_next(1, error="invalid_auth")
        return build_notifier(config, {"T": SLACK_TOKEN})

    return Kit(
        build_notifier(config, {"T": SLACK_TOKEN}), (SLACK_TOKEN,),
        lambda: [str(m) for m in slack.messages.values()],
        lambda: slack.fail_next(1, error="internal_error", status=500), lambda: slack.fail_next(0), refusing,
    )


def email_kit(stack: ExitStack) -> Kit:
    smtp = stack.enter_context(SmtpServer(credentials=("rocketwatch", SMTP_PASSWORD)))

    def config(password_env: str) -> EmailReceiver:
        return EmailReceiver(type="email", name="mail", host=smtp.host, port=smtp.port, security="none",
                             from_addr="rw@example.com", to=["oncall@example.com"], username="rocketwatch",
                             password_env=password_env, timeout=5)

    env = {"GOOD": SMTP_PASSWORD, "BAD": "wrong-" + SMTP_PASSWORD}
    return Kit(
        build_notifier(config("GOOD"), env), (SMTP_PASSWORD,),
        lambda: [m.as_string() for m in smtp.messages],
        smtp.stop, smtp.start,
        lambda: build_notifier(config("BAD"), env),  # 535: authentication failed
    )


def webhook_kit(stack: ExitStack) -> Kit:
    hook = stack.enter_context(WebhookServer(token=HOOK_TOKEN))
    config = WebhookReceiver(type="webhook", name="hook", url=hook.url, bearer_token_env="H", timeout=5)

    def refusing() -> Notifier:
        hook.fail_next(1, status=400)
        return build_notifier(config, {"H": HOOK_TOKEN})

    return Kit(
        build_notifier(config, {"H": HOOK_TOKEN}), (HOOK_TOKEN,),
        lambda: [str(b) for b in hook.bodies],
        lambda: hook.fail_next(1, status=503), lambda: hook.fail_next(0), refusing,
    )


KITS = {"slack": slack_kit, "email": email_kit, "webhook": webhook_kit}


@pytest.fixture(params=sorted(KITS))
def kit(request) -> Iterator[Kit]:
    with ExitStack() as stack:
        yield KITS[request.param](stack)


@pytest.fixture
def notification(db) -> Notification:
    ((_, n),) = Cycle(db, ["any"]).run([span(group="stuckGroup", queue=3, value=3626)], at(0))
    return n


def send(notifier: Notifier, n: Notification):
    return asyncio.run(notifier.send(n, None))


def assert_no_secret(kit: Kit, *texts: str) -> None:
    for text in (*texts, repr(kit.notifier)):
        for secret in kit.secrets:
            assert secret not in text


def test_delivers_for_real(kit, notification):
    send(kit.notifier, notification)
    (received,) = kit.delivered()
    assert "stuckGroup" in received and "3626" in received


def test_an_outage_is_retryable_and_the_next_try_goes_through(kit, notification):
    kit.break_for_now()
    with pytest.raises(DeliveryError) as caught:
        send(kit.notifier, notification)
    assert caught.value.retryable, str(caught.value)
    assert_no_secret(kit, str(caught.value))
    kit.heal()
    send(kit.notifier, notification)
    assert len(kit.delivered()) == 1


def test_a_refusal_for_good_is_permanent_and_names_no_secret(kit, notification):
    with pytest.raises(DeliveryError) as caught:
        send(kit.refusing_for_good(), notification)
    assert not caught.value.retryable, str(caught.value)
    assert_no_secret(kit, str(caught.value))
    assert "wrong-" + SMTP_PASSWORD not in str(caught.value)  # nor the wrong one
    assert kit.delivered() == []


def test_one_receiver_refusing_does_not_hold_up_the_others(db):
    with ExitStack() as stack:
        kits = {name: make(stack) for name, make in KITS.items()}
        notifiers = {name: k.notifier for name, k in kits.items()}
        notifiers["slack"] = kits["slack"].refusing_for_good()  # e.g. a revoked bot token
        cycle = Cycle(db, list(notifiers))
        cycle.run([span()], at(0))
        report = asyncio.run(cycle.outbox.deliver_due(notifiers, at(0)))
        assert (report.delivered, report.failed) == (2, 1), report
        assert len(kits["email"].delivered()) == 1 and len(kits["webhook"].delivered()) == 1
        assert "(permanent)" in report.errors[0]


def test_webhook_waits_out_a_short_retry_after_and_sends_alertmanager_json(notification):
    with WebhookServer() as hook:
        config = WebhookReceiver(type="webhook", name="hook", url=hook.url, timeout=5)
        hook.fail_next(1, status=429, retry_after=1)
        send(build_notifier(config, {}), notification)
        assert hook.statuses == [429, 200]
        (body,) = hook.bodies
        assert body["version"] == "4" and body["status"] == "firing" and body["receiver"] == "hook"
        assert body["groupLabels"] == {"alertname": "ProcessQueueSpanTooLong", "cluster": "prod", "group": "stuckGroup"}
        (alert,) = body["alerts"]
        assert alert["labels"]["queue_id"] == "3" and alert["labels"]["severity"] == "warning"
        assert alert["annotations"]["value"] == "3626" and alert["endsAt"] == "0001-01-01T00:00:00Z"
