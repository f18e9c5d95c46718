"""The coordinator over a local SQLite file: a single node's lease and notification log, same semantics as
PostgreSQL's (one dispatch path). The lease is trivially ours, yet fenced and numbered like in HA."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from daemon.coordination.clock import Clock, SystemClock
from daemon.coordination.sql import SqlCoordinator, Tx


class _SqliteTx:
    """A transaction on the connection (BEGIN IMMEDIATE: writers queue, none upgrades a read halfway)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a statement; its rows as dicts."""
        return [dict(r) for r in self.conn.execute(sql, dict(params or {})).fetchall()]

    async def run(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run a write; rows touched."""
        return self.conn.execute(sql, dict(params or {})).rowcount


class SqliteCoordinator(SqlCoordinator):
    """The Coordinator interface on a SQLite file (the daemon's state.db: its tables are prefixed coord_)."""

    server_now_sql = "((julianday('now') - 2440587.5) * 86400.0)"
    where = "SQLite coordinator"

    def __init__(self, path: Path | str, clock: Clock | None = None) -> None:
        super().__init__(clock or SystemClock())
        self.path = Path(path)
        self.where = f"SQLite coordinator {self.path}"
        self._conn: sqlite3.Connection | None = None
        # The statements of one transaction never await anything else, yet two coroutines of this
        # process must not interleave BEGINs on one connection.
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        """Open the file (WAL, as the state database) and migrate the coord_ tables."""
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        await self.close()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=5000")
        await self.migrate()

    async def close(self) -> None:
        """Close the file."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def lock_schema(self, tx: Tx) -> None:
        """Nothing to take: BEGIN IMMEDIATE already serialises writers of one SQLite file."""

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_SqliteTx]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error."""
        if self._conn is None:
            await self.open()  # a local file: opened (and migrated) on first use, as the state file is
        assert self._conn is not None
        async with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield _SqliteTx(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
