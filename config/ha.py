"""The `ha:` section: two or three daemons share one PostgreSQL coordinator and only the lease holder
dispatches (DESIGN §11). Without the section a daemon is a single node (its own SQLite coordinates it).

    ha:
      connection: "host=pg.internal port=5432 dbname=rocketwatch user=rocketwatch sslmode=verify-full"
      password_env: ROCKETWATCH_PG_PASSWORD   # environment variable, or systemd credential of that name
      node: ops-host-1                        # default: the host name
      lease: {ttl: 15s, renew_every: 5s, margin: 3s}
      on_coordinator_loss: {fail_open_after: 5m}  # default: hold notifications until a coordinator answers

The password never sits in the file: a connection string with one is refused (logs and `check` output
show connection strings; a secret belongs in the environment or in `LoadCredential=`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from config.durations import Duration
from config.receivers import secret_value


def conninfo_fields(connection: str) -> dict[str, str]:
    """The keywords of a libpq connection string (`key=value ...` or a postgresql:// URI), parsed by libpq."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        return {k: str(v) for k, v in conninfo_to_dict(connection).items()}
    except ProgrammingError as exc:
        raise ValueError(f"not a PostgreSQL connection string: {str(exc).strip()}") from None


class LeaseConfig(BaseModel):
    """The dispatch lease's timing: a holder unheard of for `ttl` loses it; it stops `margin` before."""

    model_config = ConfigDict(extra="forbid")

    ttl: Duration = Field(default=timedelta(seconds=15), description="how long a claim lasts on the coordinator")
    renew_every: Duration = Field(default=timedelta(seconds=5), description="how often the holder renews (ttl/3)")
    margin: Duration = Field(default=timedelta(seconds=3),
                            description="the holder stops dispatching this long before its ttl runs out")

    @model_validator(mode="after")
    def _renewed_in_time(self) -> LeaseConfig:
        ttl, renew, margin = (d.total_seconds() for d in (self.ttl, self.renew_every, self.margin))
        if not 0 < margin < ttl:
            raise ValueError(f"margin ({margin:g}s) must be above 0 and below ttl ({ttl:g}s)")
        if not 0 < renew < ttl - margin:
            raise ValueError(f"renew_every ({renew:g}s) must be below ttl - margin ({ttl - margin:g}s): "
                             "otherwise the holder's deadline passes between two renewals")
        return self


class CoordinatorLossConfig(BaseModel):
    """What a daemon does with notifications while no coordinator answers it: hold them (the default: delayed,
    sent once by the next holder), or, after `fail_open_after`, send them itself (no delay beyond that, but
    every daemon cut off does the same: duplicates)."""

    model_config = ConfigDict(extra="forbid")

    fail_open_after: Duration | None = Field(
        default=None, description="send held notifications from this daemon after this long without the "
        "coordinator, accepting duplicates (e.g. 5m); unset: hold them until a coordinator answers")


class HaConfig(BaseModel):
    """Hot standby: every daemon collects and evaluates; the lease holder alone sends."""

    model_config = ConfigDict(extra="forbid")

    connection: str = Field(min_length=1, description="libpq connection string or postgresql:// URI, no password")
    password_env: str | None = Field(
        default=None, description="environment variable (or systemd credential) holding the PostgreSQL password")
    node: str | None = Field(default=None, min_length=1, max_length=100,
                             description="this daemon's name in the lease and on status pages; default the host name")
    lease: LeaseConfig = Field(default_factory=LeaseConfig)
    timeout: Duration = Field(default=timedelta(seconds=5),
                             description="a coordinator call unanswered this long counts as the coordinator away")
    on_coordinator_loss: CoordinatorLossConfig = Field(default_factory=CoordinatorLossConfig)

    @field_validator("connection")
    @classmethod
    def _no_password_inside(cls, value: str) -> str:
        fields = conninfo_fields(value)
        url = urlsplit(value) if "://" in value else None
        if "password" in fields or (url is not None and url.password):
            raise ValueError("the connection string holds a password: name it with password_env instead "
                             "(an environment variable or a systemd credential)")
        if "dbname" not in fields and not (url is not None and url.path.strip("/")):
            raise ValueError("the connection string names no database (dbname=...): the shared tables need one")
        return value

    @model_validator(mode="after")
    def _timeout_within_renewal(self) -> HaConfig:
        if self.timeout > self.lease.renew_every:
            raise ValueError(f"timeout ({self.timeout.total_seconds():g}s) must not exceed lease.renew_every "
                             f"({self.lease.renew_every.total_seconds():g}s): one renewal ends before the next")
        return self

    @model_validator(mode="after")
    def _fail_open_after_a_failover(self) -> HaConfig:
        after = self.on_coordinator_loss.fail_open_after
        if after is not None and after < self.lease.ttl:
            raise ValueError(f"on_coordinator_loss.fail_open_after ({after.total_seconds():g}s) must be at least "
                             f"lease.ttl ({self.lease.ttl.total_seconds():g}s): shorter, a routine failover would "
                             "already send duplicates")
        return self

    def conninfo(self, env: Mapping[str, str] = os.environ) -> str:
        """The connection string with the password added; raises naming the variable when it is unset."""
        if self.password_env is None:
            return self.connection
        password = secret_value(self.password_env, env)
        if not password:
            raise ValueError(f"ha.password_env: environment variable {self.password_env} is not set "
                             "(nor a systemd credential of that name)")
        from psycopg.conninfo import make_conninfo

        return make_conninfo(self.connection, password=password)
