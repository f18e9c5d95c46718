"""The coordinator's interface and the records it trades in; no I/O here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol


class CoordinatorUnavailable(Exception):
    """The coordinator could not be reached or did not answer in time (nothing was written)."""


class Fenced(Exception):
    """A write refused: the writer's epoch is no longer the lease's (another daemon holds it, or it expired)."""


@dataclass(frozen=True)
class Fence:
    """Who writes: the lease, its holder and the epoch it holds. Every write of the shared log carries it."""

    lease: str
    holder: str
    epoch: int

    def __str__(self) -> str:
        return f"lease {self.lease!r} epoch {self.epoch} held by {self.holder}"


@dataclass(frozen=True)
class LeaseRecord:
    """The lease row as the coordinator has it after a claim: ours when `holder` is us."""

    name: str
    holder: str
    epoch: int
    expires_at: datetime  # on the coordinator's clock
    acquired_at: datetime  # when this holder took it (the epoch began)
    server_now: datetime  # the coordinator's clock when it answered


@dataclass(frozen=True)
class GroupRef:
    """One alert group as one route's receiver sees it: the key of the shared log."""

    route: str
    receiver: str
    group_key: str

    def __str__(self) -> str:
        return f"group {self.group_key} of receiver {self.receiver!r} (route {self.route})"


@dataclass(frozen=True)
class Told:
    """What one notification tells its receiver: the alerts firing (with severity) and the resolves."""

    firing: Mapping[str, str | None] = field(default_factory=dict)  # fingerprint -> severity
    resolved: tuple[str, ...] = ()  # fingerprints


@dataclass(frozen=True)
class Intent:
    """A send about to happen: fenced, numbered, with the idempotency key every receiver uses for it."""

    ref: GroupRef
    seq: int  # the shared log's sequence number for this send (allocated once, never reused)
    key: str  # idempotency key: derived from (receiver, group key, seq)
    epoch: int
    told: Told
    reason: str
    # A send a holder before us recorded and never confirmed: we retry it under the same key, and a
    # receiver that can look for it (Slack's metadata, issue 47) should before posting again.
    retry: bool = False
    recorded_at: datetime | None = None  # when a holder first recorded this send (a retry keeps that time)


@dataclass
class LogGroup:
    """The shared notification log's record of one group: what its receiver was told, and when."""

    ref: GroupRef
    group_labels: dict[str, str]
    told_firing: dict[str, str | None]  # fingerprint -> severity it was told firing with
    told_resolved: dict[str, datetime]  # fingerprint -> when its resolve was told
    first_pending_at: datetime | None  # when something first waited to be told (group_wait counts from it)
    last_sent_at: datetime | None
    last_reason: str | None
    seq: int  # the latest send's sequence number, 0 before the first
    receiver_data: dict[str, Any]  # the receiver's reply: Slack channel/ts, email Message-ID/thread
    closed: bool  # nothing firing and nothing pending: a new firing starts a new message
    open_intent: Intent | None = None  # the latest intent without a sent record


@dataclass(frozen=True)
class IncidentClaim:
    """An incident id every daemon agrees on: adopted when one was open at the locus, else just opened."""

    id: str
    opened_at: datetime
    adopted: bool


@dataclass(frozen=True)
class PeerRecord:
    """One daemon as the peers table has it (`renew_at` on the coordinator's clock, the others on its own)."""

    node: str
    holder: str
    host: str
    version: str
    started_at: datetime
    renew_at: datetime | None  # None before it is written (the coordinator stamps it)
    evaluated_at: datetime | None
    held: int
    holds_lease: bool

    def stale(self, now: datetime, ttl: float) -> bool:
        """Not heard of for one lease ttl: stopped, paused, or cut from the coordinator."""
        return self.renew_at is None or (now - self.renew_at).total_seconds() > ttl


class Coordinator(Protocol):
    """What the daemon needs of a coordinator; PostgresCoordinator and SqliteCoordinator implement it."""

    async def open(self) -> None:
        """Connect and bring the shared schema to this version (safe when several daemons start at once)."""
        ...

    async def close(self) -> None:
        """Disconnect."""
        ...

    async def claim_lease(self, name: str, holder: str, ttl: float, now: datetime | None = None) -> LeaseRecord:
        """Take the lease if free or expired, renew it if ours (compare-and-set); return the row as it is now.

        `now` is the coordinator's clock (None: the server's own; tests inject one)."""
        ...

    async def release_lease(self, fence: Fence) -> None:
        """Give the lease up (a clean shutdown), so a standby need not wait for it to expire."""
        ...

    async def log_groups(self) -> list[LogGroup]:
        """Every group of the shared log that is open (something told firing, or pending)."""
        ...

    async def log_group(self, ref: GroupRef) -> LogGroup | None:
        """One group of the shared log, open or closed."""
        ...

    async def note_pending(self, fence: Fence, ref: GroupRef, labels: Mapping[str, str], at: datetime) -> None:
        """Something of the group waits to be told: create or reopen it, start its group_wait at `at` if not started."""
        ...

    async def record_intent(self, fence: Fence, ref: GroupRef, labels: Mapping[str, str], told: Told,
                            reason: str, at: datetime) -> Intent:
        """Before a send: allocate its sequence number and key (or take over an unconfirmed one) and record it."""
        ...

    async def record_sent(self, fence: Fence, ref: GroupRef, seq: int, reply: Mapping[str, Any], at: datetime) -> None:
        """After the receiver accepted send `seq` (an outbox row holds ref and seq): the log now records what its
        intent told, and the receiver's reply (a repeat is a no-op)."""
        ...

    async def seed_group(self, fence: Fence, ref: GroupRef, labels: Mapping[str, str], told: Told,
                         receiver_data: Mapping[str, Any], last_sent_at: datetime) -> bool:
        """Record a group told before HA was on (its local thread), unless the log has it; True when seeded."""
        ...

    async def close_group(self, fence: Fence, ref: GroupRef, at: datetime) -> None:
        """Nothing fires and nothing waits: forget what was told (its sequence numbers stay used)."""
        ...

    async def claim_incident(self, locus: Mapping[str, str], proposed_id: str, at: datetime,
                             opened_by: str = "") -> IncidentClaim:
        """The open incident at this locus, or a new one under `proposed_id` (any daemon, not fenced)."""
        ...

    async def resolve_incident(self, incident_id: str, at: datetime) -> None:
        """Every alert of the incident resolved: the next alert at its locus opens a new one."""
        ...

    async def record_peer(self, peer: PeerRecord) -> tuple[list[PeerRecord], datetime]:
        """Write this daemon's peers row (stamped with the coordinator's clock); every row and that clock."""
        ...

    async def peers(self) -> tuple[list[PeerRecord], datetime]:
        """Every daemon's peers row and the coordinator's clock now."""
        ...

    async def read_lease(self, name: str) -> LeaseRecord | None:
        """The lease row as it is, claiming nothing (None before any daemon took it)."""
        ...


def to_seconds(at: datetime) -> float:
    """A UTC-aware time as seconds since the epoch (how the shared tables store time, in both databases)."""
    if at.tzinfo is None:
        raise ValueError(f"naive datetime {at!r}: rocketwatch passes UTC-aware times everywhere")
    return at.timestamp()


def from_seconds(seconds: float | None) -> datetime | None:
    """Seconds since the epoch as a UTC-aware time."""
    return None if seconds is None else datetime.fromtimestamp(float(seconds), UTC)
