"""The state file: WAL, a schema version, forward migrations applied once."""

from __future__ import annotations

import threading

import pytest

from daemon.alerts import db as dbmod
from daemon.alerts.db import StateDB


def test_fresh_file_is_migrated_to_the_latest_version(tmp_path):
    db = StateDB(tmp_path / "state.db")
    assert db.schema_version == len(dbmod.MIGRATIONS)
    assert db.query("PRAGMA journal_mode")[0][0] == "wal"
    tables = {r[0] for r in db.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"schema_version", "alerts", "outbox", "notification_threads"} <= tables
    db.close()


def test_new_migration_applies_on_reopen(tmp_path, monkeypatch):
    StateDB(tmp_path / "state.db").close()
    monkeypatch.setattr(dbmod, "MIGRATIONS", [*dbmod.MIGRATIONS, "CREATE TABLE acks (id TEXT PRIMARY KEY);"])
    db = StateDB(tmp_path / "state.db")
    assert db.schema_version == len(dbmod.MIGRATIONS)
    assert db.query("SELECT count(*) FROM acks")[0][0] == 0
    db.close()


def test_failed_migration_rolls_back_whole(tmp_path, monkeypatch):
    StateDB(tmp_path / "state.db").close()
    version = len(dbmod.MIGRATIONS)
    monkeypatch.setattr(dbmod, "MIGRATIONS", [*dbmod.MIGRATIONS, "CREATE TABLE a (x); CREATE TABLE alerts (y);"])
    with pytest.raises(Exception, match="already exists"):
        StateDB(tmp_path / "state.db")
    monkeypatch.undo()
    db = StateDB(tmp_path / "state.db")
    assert db.schema_version == version
    assert not db.query("SELECT name FROM sqlite_master WHERE name = 'a'")
    db.close()


def test_newer_file_is_refused(tmp_path):
    db = StateDB(tmp_path / "state.db")
    with db.transaction() as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    db.close()
    with pytest.raises(RuntimeError, match="newer"):
        StateDB(tmp_path / "state.db")


def test_writes_from_a_worker_thread(tmp_path):
    db = StateDB(tmp_path / "state.db")

    def write(n: int) -> None:
        for i in range(50):
            with db.transaction() as conn:
                conn.execute(
                    "INSERT INTO notification_threads VALUES (?, ?, '{}', '2026-01-01')", (f"r{n}", str(i))
                )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert db.query("SELECT count(*) FROM notification_threads")[0][0] == 200
    db.close()
