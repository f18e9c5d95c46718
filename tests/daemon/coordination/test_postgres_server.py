"""The test PostgreSQL itself: a password is needed, and data outlives a stop and a start on the same port."""

from __future__ import annotations

import psycopg
import pytest

from tests.helpers import postgres as pg
from tests.helpers.postgres import PostgresServer


def test_the_server_wants_the_password_and_keeps_its_data_across_a_restart(postgres: PostgresServer,
                                                                           postgres_dsn: str) -> None:
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (42)")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(postgres_dsn.replace(pg.PASSWORD, "wrong"))
    postgres.stop()
    assert not postgres.running
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(postgres_dsn)
    postgres.start()
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT n FROM kept").fetchall() == [(42,)]
        assert conn.execute("SELECT inet_server_port()").fetchone() == (postgres.port,)


def test_missing_binaries_skip_outside_ci_and_fail_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    assert pg.find_bindir(tmp_path) is None  # no /usr/lib/postgresql/<version>/bin here
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        pg._missing("no server")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no server"):
        pg._missing("no server")
