"""A real PostgreSQL server on loopback for the HA tests: Debian's binaries, our own port and data directory.

    def test_x(postgres: PostgresServer, postgres_dsn: str) -> None:
        ...                       # postgres_dsn: a fresh database of its own for this test
        postgres.stop()           # the coordinator's server goes away mid-test ...
        postgres.start()          # ... and comes back on the same port with the same data

The server is started once per test session, on first use by a test that asks for it (so `pytest -k`
runs that need none start none), and stopped at the end. initdb refuses to run as root, and CI runs
as root: then initdb, pg_ctl and the server run as the `postgres` user (Debian's package creates it),
from the newest version's bin directory (/usr/lib/postgresql/<version>/bin: pg_ctl is not on PATH).
When the binaries are missing the tests that need them are skipped with the reason, except under
CI=true, where they fail: CI's Makefile installs the package, so a missing server is a broken setup.
"""

from __future__ import annotations

import getpass
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import pytest

PG_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "rocketwatch"
PASSWORD = "rw-test-password"  # scram over loopback: the tests connect as a deployment would, with a password
_databases = count(1)


def find_bindir(root: Path = PG_ROOT) -> Path | None:
    """The newest installed version's bin directory that has initdb, pg_ctl and postgres."""
    versions = sorted((p for p in root.glob("*/bin") if re.fullmatch(r"\d+", p.parent.name)),
                      key=lambda p: int(p.parent.name), reverse=True) if root.is_dir() else []
    return next((p for p in versions if all((p / b).is_file() for b in ("initdb", "pg_ctl", "postgres"))), None)


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory, owned by `postgres` when we run as root."""

    def __init__(self, bindir: Path, port: int | None = None) -> None:
        self.bindir = bindir
        self.port = port or free_port()
        self.root = Path(tempfile.mkdtemp(prefix="rw-postgres-"))
        self.data = self.root / "data"
        self.logfile = self.root / "server.log"
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user is not None:
            # The server runs as postgres: it must own its directory (mkdtemp made it root's, mode 0700).
            entry = pwd.getpwnam(self._user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)

    @property
    def os_user(self) -> str:
        """The operating-system user the server runs as."""
        return self._user or getpass.getuser()

    def dsn(self, dbname: str = "postgres", password: str | None = PASSWORD) -> str:
        """A libpq connection string to one database, over TCP on loopback."""
        secret = f" password={password}" if password is not None else ""
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={SUPERUSER}{secret} connect_timeout=5"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([str(self.bindir / args[0]), *args[1:]], user=self._user, cwd=self.root,
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            log = self.logfile.read_text(errors="replace")[-3000:] if self.logfile.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({result.returncode}) as {self.os_user} in {self.root}:\n"
                               f"{result.stdout}{result.stderr}{log}")
        return result

    def init(self) -> None:
        """initdb: a superuser with a password, scram on loopback, no fsync (a test server)."""
        pwfile = self.root / "pwfile"
        pwfile.write_text(PASSWORD + "\n")
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, f"--pwfile={pwfile}", "--auth=scram-sha-256",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        pwfile.unlink()

    def start(self) -> None:
        """pg_ctl start and wait until it accepts connections (same port, same data after a stop)."""
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.logfile), "-w", "-t", "60", "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        """pg_ctl stop (`fast` ends sessions; `immediate` is a crash) and wait until it is gone."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    @property
    def running(self) -> bool:
        """Whether the server process is up (pg_ctl status)."""
        return subprocess.run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "status"], user=self._user,
                              cwd=self.root, capture_output=True).returncode == 0

    def create_database(self) -> str:
        """A new empty database; its name."""
        import psycopg

        name = f"rw_test_{os.getpid()}_{next(_databases)}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def remove(self) -> None:
        """Stop if running and delete the directory."""
        if self.data.exists() and self.running:
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the Makefile's `postgresql` target installs it; a missing server fails CI)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server, started on first use and removed at the end of the run."""
    bindir = find_bindir()
    if bindir is None:
        _missing(f"no PostgreSQL server binaries under {PG_ROOT}/<version>/bin: apt-get install postgresql "
                 "(`make test` does)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            _missing("running as root and no `postgres` user to run initdb as (Debian's postgresql package creates it)")
    server = PostgresServer(bindir)
    server.init()
    server.start()
    yield server
    server.remove()


@pytest.fixture
def postgres(postgres_server: PostgresServer) -> PostgresServer:
    """The session's server, running (a test before may have stopped it and failed before starting it)."""
    if not postgres_server.running:
        postgres_server.start()
    return postgres_server


@pytest.fixture
def postgres_dsn(postgres: PostgresServer) -> str:
    """A connection string to a fresh database of this test's own."""
    return postgres.dsn(postgres.create_database())
