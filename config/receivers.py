"""Receivers: where notifications go (console, Slack, email, webhook).

Secrets are named, never written in the file: `token_env: SLACK_BOT_TOKEN` reads the environment
variable, or else the systemd credential of that name ($CREDENTIALS_DIRECTORY/SLACK_BOT_TOKEN,
from `LoadCredential=SLACK_BOT_TOKEN:/etc/rocketwatch/credentials/slack-bot-token`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

_UNSET = "is not set (nor a systemd credential of that name)"


def secret_value(name: str, env: Mapping[str, str] = os.environ) -> str | None:
    """The secret called `name`: its environment variable, else systemd's credential file of that name."""
    value = env.get(name)
    if value:
        return value
    directory = env.get("CREDENTIALS_DIRECTORY")
    if not directory:
        return None
    try:
        # Credential files are often written with a trailing newline; a token never ends in one.
        return (Path(directory) / name).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


class _Receiver(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="unique name, used in logs and the outbox")


Detail = Literal["full", "compact"]
_DETAIL = "full: the lead, the diagnosis and next steps, what followed; compact: summaries, figures and the link"


class ConsoleReceiver(_Receiver):
    """Print notifications to the daemon's standard output (the demo's terminal)."""

    type: Literal["console"]
    detail: Detail = Field(default="full", description=_DETAIL)


class SlackReceiver(_Receiver):
    """A Slack channel, posted to by a bot token (xoxb-...) with chat:write."""

    type: Literal["slack"]
    channel: str = Field(min_length=1, description="channel name (#alerts) or id (C0123...)")
    token: SecretStr | None = Field(default=None, description="bot token inline; prefer token_env")
    token_env: str | None = Field(default=None, description="environment variable holding the bot token")
    base_url: str | None = Field(default=None, description="Web API base, for Enterprise Grid or tests")
    max_alerts: int = Field(default=10, ge=1, le=20, description="alerts shown per message; the rest are counted")
    detail: Detail = Field(default="full", description=_DETAIL)
    reply_broadcast: bool = Field(default=True, description="'Cause found' and 'Resolved' thread replies are also "
                                  "shown in the channel, not only to the thread's followers")
    mention: str | None = Field(default=None, pattern=r"^(here|channel|S[A-Z0-9]+)$",
                                description="who a critical incident's first page calls: a user group's id "
                                "(S0123ABC, sent as <!subteam^S0123ABC>), here or channel")
    timeout: float = Field(default=10.0, gt=0, description="seconds per API call")
    app_token_env: str | None = Field(
        default=None,
        description="environment variable holding an app-level token (xapp-..., connections:write); "
        "with it messages carry Silence/Acknowledge buttons, received over Socket Mode",
    )
    silence_button: str = Field(
        default="1h", pattern=r"^\d+[mh]$", description="how long the 'Silence' button silences, e.g. 1h or 30m"
    )

    @model_validator(mode="after")
    def _one_token_source(self) -> SlackReceiver:
        if (self.token is None) == (self.token_env is None):
            raise ValueError("give exactly one of token or token_env")
        return self

    def resolve_app_token(self, env: Mapping[str, str] = os.environ) -> str | None:
        """The app-level token for Socket Mode, or None when buttons are not configured."""
        if self.app_token_env is None:
            return None
        value = secret_value(self.app_token_env, env)
        if not value:
            raise ValueError(f"receiver {self.name!r}: environment variable {self.app_token_env} {_UNSET}")
        return value

    def resolve_token(self, env: Mapping[str, str] = os.environ) -> str:
        """The bot token; raises naming the variable (never the value) when it is unset."""
        if self.token is not None:
            return self.token.get_secret_value()
        value = secret_value(self.token_env or "", env)
        if not value:
            raise ValueError(f"receiver {self.name!r}: environment variable {self.token_env} {_UNSET}")
        return value


class EmailReceiver(_Receiver):
    """Mail through an SMTP server: one mail per group change, threaded per group."""

    type: Literal["email"]
    host: str = Field(min_length=1)
    port: int = Field(default=587, ge=1, le=65535)
    from_addr: str = Field(min_length=3)
    to: list[str] = Field(min_length=1)
    detail: Detail = Field(default="full", description=_DETAIL)
    security: Literal["none", "starttls", "tls"] = Field(
        default="starttls", description="starttls (usually 587), tls = implicit TLS (465), none (local relay)"
    )
    username: str | None = None
    password_env: str | None = Field(default=None, description="environment variable holding the password")
    timeout: float = Field(default=30.0, gt=0, description="seconds per SMTP session")
    ca_file: str | None = Field(default=None, description="PEM bundle to verify the server with (internal CA)")

    @model_validator(mode="after")
    def _auth_pairs(self) -> EmailReceiver:
        if (self.username is None) != (self.password_env is None):
            raise ValueError("username and password_env go together")
        return self

    def resolve_password(self, env: Mapping[str, str] = os.environ) -> str | None:
        """The SMTP password, or None without auth; raises naming the variable when it is unset."""
        if self.password_env is None:
            return None
        value = secret_value(self.password_env, env)
        if not value:
            raise ValueError(f"receiver {self.name!r}: environment variable {self.password_env} {_UNSET}")
        return value


class WebhookReceiver(_Receiver):
    """POST Alertmanager-compatible JSON (version 4) to a URL: chat bridges, incident tools, scripts."""

    type: Literal["webhook"]
    url: str = Field(pattern=r"^https?://", description="http(s) URL to POST to")
    bearer_token_env: str | None = Field(default=None, description="environment variable with a bearer token")
    timeout: float = Field(default=10.0, gt=0, description="seconds per request")
    external_url: str = Field(default="", description="sent as externalURL, e.g. the status page's address")

    def resolve_bearer(self, env: Mapping[str, str] = os.environ) -> str | None:
        """The bearer token, or None without one; raises naming the variable when it is unset."""
        if self.bearer_token_env is None:
            return None
        value = secret_value(self.bearer_token_env, env)
        if not value:
            raise ValueError(f"receiver {self.name!r}: environment variable {self.bearer_token_env} {_UNSET}")
        return value


ReceiverConfig = Annotated[
    ConsoleReceiver | SlackReceiver | EmailReceiver | WebhookReceiver, Field(discriminator="type")
]
