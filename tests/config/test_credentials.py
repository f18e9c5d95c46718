"""Secrets from systemd credentials (LoadCredential=): read by the name the config gives, never printed."""

from __future__ import annotations

import pytest

from config.receivers import EmailReceiver, SlackReceiver, secret_value


def _slack():
    return SlackReceiver(type="slack", name="oncall", channel="#mq", token_env="SLACK_BOT_TOKEN")


def test_a_credential_file_stands_in_for_the_environment_variable(tmp_path):
    (tmp_path / "SLACK_BOT_TOKEN").write_text("xoxb-from-credential\n")
    env = {"CREDENTIALS_DIRECTORY": str(tmp_path)}
    assert _slack().resolve_token(env) == "xoxb-from-credential"  # trailing newline dropped
    # An explicit environment variable still wins (e.g. an override in a drop-in).
    assert _slack().resolve_token({**env, "SLACK_BOT_TOKEN": "xoxb-env"}) == "xoxb-env"


def test_email_password_from_a_credential(tmp_path):
    (tmp_path / "SMTP_PASSWORD").write_text("s3cret")
    mail = EmailReceiver(type="email", name="m", host="smtp", from_addr="a@b.c", to=["x@y.z"],
                         username="rw", password_env="SMTP_PASSWORD")
    assert mail.resolve_password({"CREDENTIALS_DIRECTORY": str(tmp_path)}) == "s3cret"


def test_missing_everywhere_names_the_variable_and_the_credential(tmp_path):
    with pytest.raises(ValueError, match="SLACK_BOT_TOKEN is not set \\(nor a systemd credential"):
        _slack().resolve_token({"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert secret_value("SLACK_BOT_TOKEN", {}) is None
    (tmp_path / "EMPTY").write_text("\n")
    assert secret_value("EMPTY", {"CREDENTIALS_DIRECTORY": str(tmp_path)}) is None
