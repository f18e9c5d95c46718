"""The coordinator on PostgreSQL through psycopg 3 (async): the shared lease, log and incidents of two or
three daemons.

Every transaction runs with a deadline. A coordinator that does not answer (host down, a network that
drops packets) costs at most `timeout` seconds: the attempt is abandoned, its connection dropped, and
CoordinatorUnavailable raised; the next call connects afresh. The abandoned attempt is left to wind
down on its own, since psycopg's own cancellation of a query waits on that same silent network.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.errors import IdleInTransactionSessionTimeout
from psycopg.rows import dict_row

from daemon.coordination.clock import Clock, SystemClock
from daemon.coordination.model import CoordinatorUnavailable
from daemon.coordination.sql import SqlCoordinator, Tx

log = logging.getLogger(__name__)

T = TypeVar("T")
_PARAM = re.compile(r"(?<![:\w]):(\w+)")
SCHEMA_LOCK = 0x726F636B77617463  # "rockwatc": the advisory lock two daemons migrating at once queue on


def pg_sql(sql: str) -> str:
    """Our `:name` placeholders as psycopg's `%(name)s`."""
    return _PARAM.sub(r"%(\1)s", sql)


def describe(conninfo: str) -> str:
    """host:port/dbname of a connection string, never its password (for errors and logs)."""
    try:
        parts = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "PostgreSQL (unparsable connection string)"
    return f"PostgreSQL {parts.get('host', 'localhost')}:{parts.get('port', 5432)}/{parts.get('dbname', '')}"


class _PgTx:
    """Statements of one transaction on one connection."""

    def __init__(self, conn: psycopg.AsyncConnection[dict[str, Any]]) -> None:
        self.conn = conn

    async def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a statement; its rows as dicts."""
        cur = await self.conn.execute(pg_sql(sql), dict(params or {}))
        return await cur.fetchall() if cur.description is not None else []

    async def run(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run a write; rows touched."""
        cur = await self.conn.execute(pg_sql(sql), dict(params or {}))
        return cur.rowcount


class PostgresCoordinator(SqlCoordinator):
    """The Coordinator interface on PostgreSQL."""

    server_now_sql = "CAST(extract(epoch FROM statement_timestamp()) AS DOUBLE PRECISION)"
    row_lock = " FOR UPDATE"

    def __init__(self, conninfo: str, clock: Clock | None = None, timeout: float = 5.0,
                 application_name: str = "rocketwatch") -> None:
        super().__init__(clock or SystemClock())
        self.conninfo = conninfo
        self.timeout = timeout
        self.application_name = application_name
        self.where = describe(conninfo)
        self._conn: psycopg.AsyncConnection[dict[str, Any]] | None = None
        self._lock = asyncio.Lock()  # one transaction at a time on the one connection
        self._abandoned: set[asyncio.Task[Any]] = set()

    async def open(self) -> None:
        """Connect and migrate the shared schema (under an advisory lock: daemons may start together)."""
        await self.migrate()

    async def close(self) -> None:
        """Disconnect; attempts abandoned earlier get a moment to wind down."""
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        if self._abandoned:
            await asyncio.wait(self._abandoned, timeout=1.0)
            for task in self._abandoned:
                task.cancel()

    async def lock_schema(self, tx: Tx) -> None:
        """pg_advisory_xact_lock: the second daemon to start migrates after the first, finding nothing to do."""
        await tx.rows("SELECT pg_advisory_xact_lock(:key)", {"key": SCHEMA_LOCK})

    async def _bounded(self, what: str, work: Callable[[], Awaitable[T]]) -> T:
        # Run `work` as its own task and stop waiting at the deadline, without cancelling into psycopg.
        task = asyncio.ensure_future(work())
        try:
            done, _ = await asyncio.wait({task}, timeout=self.timeout)
        except asyncio.CancelledError:  # our caller gave up (its own deadline): the connection goes too
            self._abandon(task)
            raise
        if task in done:
            return task.result()
        self._abandon(task)
        raise CoordinatorUnavailable(f"{self.where}: no answer to {what} within {self.timeout:g}s")

    def _abandon(self, task: asyncio.Task[Any]) -> None:
        conn, self._conn = self._conn, None
        log.warning("%s: dropping the connection that did not answer; the next call connects afresh", self.where)

        async def wind_down() -> None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            if conn is not None:
                await conn.close()

        winding = asyncio.ensure_future(wind_down())
        self._abandoned.add(winding)
        winding.add_done_callback(self._abandoned.discard)

    async def _connection(self) -> psycopg.AsyncConnection[dict[str, Any]]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        self._conn = None
        try:
            self._conn = await self._bounded("connect", lambda: psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, row_factory=dict_row, application_name=self.application_name,
                connect_timeout=max(1, int(self.timeout))))
        except psycopg.OperationalError as exc:
            raise CoordinatorUnavailable(f"{self.where}: cannot connect: {_first_line(exc)}") from exc
        # A daemon paused between BEGIN and COMMIT (SIGSTOP, a long GC or swap storm, a VM frozen) would
        # hold its row locks on the lease and the log, and every other daemon's claim would wait on them:
        # the server ends such a session once it has sat idle in a transaction longer than one call may take.
        idle_ms = max(1000, int(self.timeout * 1000))
        conn = self._conn
        try:
            await self._bounded("SET", lambda: conn.execute(f"SET idle_in_transaction_session_timeout = {idle_ms}"))
        except psycopg.OperationalError as exc:
            self._conn = None
            await conn.close()
            raise CoordinatorUnavailable(f"{self.where}: cannot connect: {_first_line(exc)}") from exc
        return self._conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_PgTx]:
        """BEGIN ... COMMIT on the connection, each statement bounded by `timeout`; a lost connection raises
        CoordinatorUnavailable (after a failed COMMIT whether it happened is unknown: our writes repeat safely)."""
        async with self._lock:
            conn = await self._begin()
            try:
                yield _BoundedTx(self, _PgTx(conn))
                await self._bounded("COMMIT", lambda: conn.execute("COMMIT"))
            except (psycopg.OperationalError, IdleInTransactionSessionTimeout) as exc:
                # The session is gone (the network, the server, or the server ended it while we were paused).
                self._conn = None
                await conn.close()
                raise CoordinatorUnavailable(f"{self.where}: {_first_line(exc)}") from exc
            except BaseException:
                if self._conn is conn and not conn.broken:
                    await self._bounded("ROLLBACK", lambda: conn.execute("ROLLBACK"))
                raise

    async def _begin(self) -> psycopg.AsyncConnection[dict[str, Any]]:
        # A connection the server closed while it sat idle (a restart, an idle timeout) fails at BEGIN,
        # before anything happened: one fresh connection is tried before calling the coordinator away.
        conn = await self._connection()
        try:
            await self._bounded("BEGIN", lambda: conn.execute("BEGIN"))
            return conn
        except psycopg.OperationalError:
            self._conn = None
            await conn.close()
        fresh = await self._connection()
        try:
            await self._bounded("BEGIN", lambda: fresh.execute("BEGIN"))
        except psycopg.OperationalError as exc:
            self._conn = None
            await fresh.close()
            raise CoordinatorUnavailable(f"{self.where}: {_first_line(exc)}") from exc
        return fresh

class _BoundedTx:
    """A _PgTx whose every statement is bounded by the coordinator's timeout."""

    def __init__(self, owner: PostgresCoordinator, tx: _PgTx) -> None:
        self.owner = owner
        self.tx = tx

    async def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a statement; its rows."""
        return await self.owner._bounded(sql.split(None, 1)[0], lambda: self.tx.rows(sql, params))

    async def run(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run a write; rows touched."""
        return await self.owner._bounded(sql.split(None, 1)[0], lambda: self.tx.run(sql, params))


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
