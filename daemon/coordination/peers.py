"""The peers table: every daemon's row, written right after each of its lease renewals (never inside one), so
`rocketwatch ha status` and every status page see who takes part, when each was last heard of, when it last
evaluated and what it holds; and a read of the lease that claims nothing."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from daemon.coordination.model import (
    Coordinator,
    CoordinatorUnavailable,
    LeaseRecord,
    PeerRecord,
    from_seconds,
    to_seconds,
)

log = logging.getLogger(__name__)


def rocketwatch_version() -> str:
    """The installed distribution's version ('unknown' when run from a tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rocketwatch")
    except PackageNotFoundError:
        return "unknown"


class PeerTable:
    """The peers table and a plain read of the lease, mixed into SqlCoordinator (which supplies
    `transaction()`, `_now` and `_clock()`: one SQL text for PostgreSQL and SQLite, as the rest)."""

    async def record_peer(self: Any, peer: PeerRecord) -> tuple[list[PeerRecord], datetime]:
        """Write this daemon's row (one per node: a restart replaces it), stamped with the coordinator's clock;
        return every row and that clock, read in the same round of statements (the status page shows them)."""
        async with self.transaction() as tx:
            await tx.run(
                "INSERT INTO coord_peers (node, holder, host, version, started_at, renew_at, evaluated_at, held, "
                f"holds_lease) VALUES (:node, :holder, :host, :version, :started, {self._now}, :evaluated, :held, "
                ":holds) ON CONFLICT (node) DO UPDATE SET holder = excluded.holder, host = excluded.host, "
                "version = excluded.version, started_at = excluded.started_at, renew_at = excluded.renew_at, "
                "evaluated_at = excluded.evaluated_at, held = excluded.held, holds_lease = excluded.holds_lease",
                self._clock(node=peer.node, holder=peer.holder, host=peer.host, version=peer.version,
                            started=to_seconds(peer.started_at),
                            evaluated=to_seconds(peer.evaluated_at) if peer.evaluated_at else None,
                            held=peer.held, holds=int(peer.holds_lease)))
            rows = await tx.rows(f"SELECT *, {self._now} AS server_now FROM coord_peers ORDER BY node", self._clock())
        return [_peer(r) for r in rows], from_seconds(rows[0]["server_now"])  # type: ignore[return-value]

    async def peers(self: Any) -> tuple[list[PeerRecord], datetime]:
        """Every daemon's row, by node, and the coordinator's clock now (to judge which are stale)."""
        async with self.transaction() as tx:
            rows = await tx.rows("SELECT * FROM coord_peers ORDER BY node")
            now = (await tx.rows(f"SELECT {self._now} AS server_now", self._clock()))[0]["server_now"]
        return [_peer(r) for r in rows], from_seconds(now)  # type: ignore[return-value]

    async def read_lease(self: Any, name: str) -> LeaseRecord | None:
        """The lease row as it is, claiming nothing (None before any daemon took it)."""
        async with self.transaction() as tx:
            found = await tx.rows(f"SELECT name, holder, epoch, expires_at, acquired_at, {self._now} AS server_now "
                                  "FROM coord_lease WHERE name = :name", self._clock(name=name))
        if not found:
            return None
        row = found[0]
        return LeaseRecord(row["name"], row["holder"], int(row["epoch"]), from_seconds(row["expires_at"]),
                           from_seconds(row["acquired_at"]), from_seconds(row["server_now"]))  # type: ignore[arg-type]


def _peer(row: dict[str, Any]) -> PeerRecord:
    return PeerRecord(row["node"], row["holder"], row["host"], row["version"], from_seconds(row["started_at"]),
                      from_seconds(row["renew_at"]), from_seconds(row["evaluated_at"]), int(row["held"]),
                      bool(row["holds_lease"]))  # type: ignore[arg-type]


@dataclass
class PeerReporter:
    """Writes this daemon's peers row after a renewal, in the background: a slow coordinator delays the row,
    never the renewal, and a second report is not started while one is in flight."""

    table: Coordinator
    node: str
    evaluated: Callable[[], datetime | None]
    held: Callable[[], int]
    timeout: float
    host: str = socket.gethostname()
    version: str = ""
    started_at: datetime | None = None

    def __post_init__(self) -> None:
        self.version = self.version or rocketwatch_version()
        self.started_at = self.started_at or datetime.now(UTC)
        self._task: asyncio.Task[None] | None = None
        self._last_error: str | None = None
        self.seen: tuple[list[PeerRecord], datetime] | None = None  # every row and the coordinator's time, last read

    def after_renewal(self, holder: str, holds_lease: bool) -> None:
        """Start writing the row (returns at once)."""
        if self._task is not None and not self._task.done():
            return
        self._task = asyncio.get_running_loop().create_task(self._write(holder, holds_lease), name="peer-row")

    async def flushed(self) -> None:
        """Wait for the row in flight, if any (tests; shutdown)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def _write(self, holder: str, holds_lease: bool) -> None:
        assert self.started_at is not None
        peer = PeerRecord(self.node, holder, self.host, self.version, self.started_at, None, self.evaluated(),
                          self.held(), holds_lease)
        try:
            self.seen = await asyncio.wait_for(self.table.record_peer(peer), self.timeout)
        except (CoordinatorUnavailable, TimeoutError, OSError) as exc:
            self._note(f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a broken schema must not end renewals; said once per distinct error
            self._note(f"{type(exc).__name__}: {exc}")
        else:
            self._last_error = None

    def _note(self, error: str) -> None:
        if error != self._last_error:
            log.warning("peers table: row of node %s not written (%s); the lease is unaffected", self.node, error)
        self._last_error = error
