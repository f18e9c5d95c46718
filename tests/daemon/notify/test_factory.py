"""Receiver configs: validated at the edge, secrets from the environment and never shown."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from config.receivers import ReceiverConfig
from daemon.notify.console import ConsoleNotifier
from daemon.notify.email import EmailNotifier
from daemon.notify.factory import build_notifiers
from daemon.notify.slack import SlackNotifier

RECEIVERS = TypeAdapter(list[ReceiverConfig])


def test_builds_one_notifier_per_receiver():
    configs = RECEIVERS.validate_python([
        {"type": "console", "name": "term"},
        {"type": "slack", "name": "chat", "channel": "#a", "token_env": "TOK"},
        {"type": "email", "name": "mail", "host": "smtp.example.com", "from_addr": "rw@example.com",
         "to": ["oncall@example.com"], "username": "rw", "password_env": "PW"},
    ])
    notifiers = build_notifiers(configs, env={"TOK": "xoxb-1", "PW": "hunter2"})
    assert isinstance(notifiers["term"], ConsoleNotifier)
    assert isinstance(notifiers["chat"], SlackNotifier)
    assert isinstance(notifiers["mail"], EmailNotifier) and notifiers["mail"].security == "starttls"
    assert "hunter2" not in repr(notifiers["mail"]) and "xoxb-1" not in repr(notifiers["chat"])


def test_missing_secret_names_the_variable_not_a_value():
    configs = RECEIVERS.validate_python([{"type": "slack", "name": "chat", "channel": "#a", "token_env": "TOK"}])
    with pytest.raises(ValueError, match="receiver 'chat': environment variable TOK is not set"):
        build_notifiers(configs, env={})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "slack", "name": "s", "channel": "#a"}, "exactly one of token or token_env"),
        ({"type": "slack", "name": "s", "channel": "#a", "token_env": "T", "colour": "red"}, "Extra inputs"),
        ({"type": "email", "name": "m", "host": "h", "from_addr": "a@b", "to": ["c@d"], "security": "ssl"},
         "'none', 'starttls' or 'tls'"),
        ({"type": "email", "name": "m", "host": "h", "from_addr": "a@b", "to": ["c@d"], "username": "u"},
         "username and password_env go together"),
        ({"type": "pager", "name": "p"}, "does not match any of the expected tags"),
    ],
)
def test_invalid_receivers_are_rejected(entry, message):
    with pytest.raises(ValidationError, match=message):
        RECEIVERS.validate_python([entry])
