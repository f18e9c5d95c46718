"""The coordinator and lease keeper a daemon runs with: PostgreSQL when the config has an `ha:` section,
else the daemon's own SQLite state file (one node: its lease is private, so no wait at start)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

from config.ha import HaConfig
from daemon.coordination.clock import Clock
from daemon.coordination.lease import LeaseKeeper, LeaseTiming, holder_name
from daemon.coordination.model import Coordinator
from daemon.coordination.postgres import PostgresCoordinator
from daemon.coordination.service import CoordinationService
from daemon.coordination.sqlite import SqliteCoordinator


def lease_timing(ha: HaConfig | None) -> LeaseTiming:
    """The configured ttl, renewal interval and margin (the defaults for one node)."""
    if ha is None:
        return LeaseTiming()
    lease = ha.lease
    return LeaseTiming(lease.ttl.total_seconds(), lease.renew_every.total_seconds(), lease.margin.total_seconds())


def coordinator_for(ha: HaConfig | None, state_file: Path, clock: Clock | None = None,
                    env: Mapping[str, str] = os.environ) -> Coordinator:
    """PostgreSQL for `ha:` (password from the environment or a credential), else the state file."""
    if ha is None:
        return SqliteCoordinator(state_file, clock)
    return PostgresCoordinator(ha.conninfo(env), clock, timeout=ha.timeout.total_seconds(),
                               application_name=f"rocketwatch {ha.node or ''}".strip())


def keeper_for(ha: HaConfig | None, coordinator: Coordinator, clock: Clock | None = None) -> LeaseKeeper:
    """This daemon's lease keeper, named `<node>/<process>`; one node's private lease is `<host>/local`, the
    same after a restart (the state directory's lock makes it the only one)."""
    holder = holder_name(ha.node) if ha is not None else f"{socket.gethostname()}/local"
    return LeaseKeeper(coordinator, holder, lease_timing(ha), clock, private=ha is None)


def service_for(ha: HaConfig | None, state_file: Path, clock: Clock | None = None,
                env: Mapping[str, str] = os.environ) -> CoordinationService:
    """The daemon's coordination service: its coordinator and its lease keeper, not yet started."""
    coordinator = coordinator_for(ha, state_file, clock, env)
    return CoordinationService(coordinator, keeper_for(ha, coordinator, clock))
