"""The daemon's state file: one SQLite database (WAL) with a schema version and forward migrations."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Forward migrations, applied in order at open; entry i brings the schema to version i + 1.
# Never edit an entry once released: append a new one.
MIGRATIONS: list[str] = [
    """
    -- One row per active alert instance (rule + label set). Resolved instances are deleted:
    -- their last state travels on in the RESOLVED event and the outbox row built from it.
    CREATE TABLE alerts (
        fingerprint  TEXT PRIMARY KEY,
        rule         TEXT NOT NULL,
        labels       TEXT NOT NULL,             -- JSON object
        severity     TEXT,
        value        REAL,
        threshold    REAL,
        annotations  TEXT NOT NULL,             -- JSON object
        state        TEXT NOT NULL CHECK (state IN ('pending', 'firing')),
        no_data      INTEGER NOT NULL DEFAULT 0,
        active_at    TEXT NOT NULL,
        fired_at     TEXT,
        last_seen_at TEXT NOT NULL
    );
    -- Every notification is a row before it is sent; rows of one (receiver, group_key) go out in id order.
    CREATE TABLE outbox (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        receiver        TEXT NOT NULL,
        group_key       TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('firing', 'resolved')),
        idempotency_key TEXT NOT NULL UNIQUE,
        payload         TEXT NOT NULL,          -- Notification JSON
        created_at      TEXT NOT NULL,
        next_attempt_at TEXT NOT NULL,
        attempts        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT,
        delivered_at    TEXT
    );
    CREATE INDEX outbox_undelivered ON outbox (delivered_at, receiver, group_key, id);
    -- The first message of an open alert group per receiver (Slack ts, email Message-ID), so later
    -- notifications of the group update and reply to it instead of starting a new one.
    CREATE TABLE notification_threads (
        receiver   TEXT NOT NULL,
        group_key  TEXT NOT NULL,
        thread_ref TEXT NOT NULL,               -- ThreadRef JSON
        created_at TEXT NOT NULL,
        PRIMARY KEY (receiver, group_key)
    );
    """,
    """
    -- Silences: matchers (JSON list of strings) mute matching alerts between starts_at and ends_at.
    CREATE TABLE silences (
        id         TEXT PRIMARY KEY,
        matchers   TEXT NOT NULL,
        starts_at  TEXT NOT NULL,
        ends_at    TEXT NOT NULL,
        created_by TEXT NOT NULL,
        comment    TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX silences_ends ON silences (ends_at);
    """,
    """
    -- Actions taken on an alert group from its Slack message: acknowledgements (who, when) and
    -- silences that end when the group resolves. A row lives until the group has no active alert.
    CREATE TABLE group_actions (
        group_key   TEXT NOT NULL,
        kind        TEXT NOT NULL CHECK (kind IN ('ack', 'silence_until_resolved')),
        actor       TEXT NOT NULL,
        at          TEXT NOT NULL,
        silence_id  TEXT,
        matchers    TEXT NOT NULL,              -- JSON list: the group's labels as matchers
        PRIMARY KEY (group_key, kind)
    );
    """,
    """
    -- Each active alert's value per evaluation over the last hour or so, for the charts on the
    -- status page and in notifications ("how did it get here").
    CREATE TABLE alert_values (
        fingerprint TEXT NOT NULL,
        at          TEXT NOT NULL,
        value       REAL NOT NULL,
        PRIMARY KEY (fingerprint, at)
    );
    CREATE INDEX alert_values_at ON alert_values (at);
    """,
    """
    -- The notification log: per route, receiver and alert group, what is waiting to be told and
    -- when the group was last told, so group_wait/group_interval/repeat_interval survive reloads
    -- and restarts and nothing already sent is sent again.
    CREATE TABLE notification_groups (
        route           TEXT NOT NULL,
        receiver        TEXT NOT NULL,
        group_key       TEXT NOT NULL,
        group_labels    TEXT NOT NULL,          -- JSON object
        pending         TEXT NOT NULL,          -- JSON list of {change, resolved}
        first_change_at TEXT,                   -- the oldest change not yet sent
        last_sent_at    TEXT,
        last_reason     TEXT,
        PRIMARY KEY (route, receiver, group_key)
    );
    -- Alerts muted (silenced or inhibited) at the last dispatch: one leaving this set while it
    -- fires is announced, also after a restart.
    CREATE TABLE muted_alerts (fingerprint TEXT PRIMARY KEY);
    """,
    """
    -- Incidents (daemon/alerts/incidents.py): the alerts that share a cause, under an id fixed when
    -- the first of them fired. Kept a day after the last alert resolved.
    CREATE TABLE incidents (
        id          TEXT PRIMARY KEY,
        opened_at   TEXT NOT NULL,
        locus       TEXT NOT NULL,              -- JSON object: where it opened (cluster + group or broker)
        root        TEXT NOT NULL,              -- fingerprint of the alert that explains the others
        resolved_at TEXT
    );
    CREATE TABLE incident_members (
        incident    TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        rule        TEXT NOT NULL,
        labels      TEXT NOT NULL,              -- JSON object
        joined_at   TEXT NOT NULL,
        resolved_at TEXT,
        cause       TEXT,                       -- fingerprint of the member that explains this one
        why         TEXT,                       -- the causal link's sentence
        PRIMARY KEY (incident, fingerprint)
    );
    """,
    """
    -- The send protocol (daemon/coordination): the route and the shared log's sequence number of each
    -- row; `held` rows were queued while no coordinator answered (sent or dropped once one does);
    -- `sent_recorded` is 0 while a delivered row's sent record has not reached the coordinator yet.
    ALTER TABLE outbox ADD COLUMN route TEXT;
    ALTER TABLE outbox ADD COLUMN seq INTEGER;
    ALTER TABLE outbox ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE outbox ADD COLUMN sent_recorded INTEGER NOT NULL DEFAULT 1;
    """,
    """
    -- Silences and group actions shared through an HA coordinator (daemon/alerts/action_mirror.py):
    -- `updated_at` orders two versions of one row (the newer wins), `mirrored` is 0 while a local change
    -- has not reached the coordinator. A group action that ended keeps its row, closed, for a day, so
    -- the coordinator's copy of it never comes back as new.
    ALTER TABLE silences ADD COLUMN updated_at TEXT;
    ALTER TABLE silences ADD COLUMN mirrored INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE group_actions ADD COLUMN closed_at TEXT;
    ALTER TABLE group_actions ADD COLUMN mirrored INTEGER NOT NULL DEFAULT 0;
    """,
]


def to_db_time(dt: datetime) -> str:
    """A UTC timestamp as fixed-width ISO text, so SQL string comparison orders it correctly."""
    if dt.tzinfo is None:
        raise ValueError(f"naive datetime {dt!r}: rocketwatch passes UTC-aware times everywhere")
    return dt.astimezone(UTC).isoformat(timespec="microseconds")


def from_db_time(text: str | None) -> datetime | None:
    """Parse a timestamp written by to_db_time."""
    return None if text is None else datetime.fromisoformat(text)


class StateDB:
    """One SQLite connection shared by the event loop and the Spark worker thread, behind a lock."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: we open transactions ourselves (BEGIN IMMEDIATE) so a write never
        # upgrades a read lock halfway through.
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints; WAL keeps it consistent
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._migrate()

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM schema_version").fetchone()
            current = row[0] if row else 0
            if row is None:
                conn.execute("INSERT INTO schema_version (version) VALUES (0)")
            if current > len(MIGRATIONS):
                raise RuntimeError(
                    f"{self.path}: schema version {current} is newer than this rocketwatch knows "
                    f"({len(MIGRATIONS)}); refusing to downgrade the state file"
                )
            for version, script in enumerate(MIGRATIONS[current:], start=current + 1):
                for statement in _split_sql(script):
                    conn.execute(statement)
                conn.execute("UPDATE schema_version SET version = ?", (version,))

    @property
    def schema_version(self) -> int:
        """The version the state file is at."""
        return int(self.query("SELECT version FROM schema_version")[0][0])

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Hold the lock and one write transaction; commit on success, roll back on error."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read and return all rows."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the connection (checkpoints the WAL)."""
        with self._lock:
            self._conn.close()


def _split_sql(script: str) -> list[str]:
    # executescript() would COMMIT our transaction first; run statement by statement instead so a
    # failed migration rolls back whole. complete_statement() knows about ';' inside strings.
    statements, buffer = [], ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            body = "\n".join(ln for ln in buffer.splitlines() if not ln.strip().startswith("--")).strip()
            if body.strip("; \n"):
                statements.append(buffer.strip())
            buffer = ""
    return statements
