"""The `ha:` section: absent means one node; present, `check` validates it and the password never sits in it."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import psycopg
import pytest
from pydantic import ValidationError

from config.ha import HaConfig
from config.loader import ConfigLoadError, load_config
from daemon.cli import main
from daemon.cli.check import schema_of
from tests.helpers.postgres import PASSWORD, PostgresServer

BASE = """\
clusters:
  - name: prod
    namesrv: ["10.0.0.1:9876"]
"""


def _write(tmp_path: Path, ha: str) -> Path:
    path = tmp_path / "rocketwatch.yaml"
    path.write_text(BASE + textwrap.dedent(ha))
    return path


def test_without_the_section_a_daemon_is_a_single_node(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, "")).ha is None


def test_a_two_host_section_loads_with_its_durations(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, """\
        ha:
          connection: "host=pg.internal port=5432 dbname=rocketwatch user=rocketwatch sslmode=verify-full"
          password_env: ROCKETWATCH_PG_PASSWORD
          node: ops-1
          lease: {ttl: 30s, renew_every: 10s, margin: 5s}
          on_coordinator_loss: {fail_open_after: 5m}
        """))
    assert config.ha is not None and config.ha.node == "ops-1"
    assert config.ha.on_coordinator_loss.fail_open_after.total_seconds() == 300
    assert HaConfig(connection="dbname=rw").on_coordinator_loss.fail_open_after is None, "held by default"
    assert [d.total_seconds() for d in (config.ha.lease.ttl, config.ha.lease.renew_every, config.ha.lease.margin)] == [
        30, 10, 5]
    defaults = HaConfig(connection="postgresql://rw@pg/rocketwatch").lease
    assert [d.total_seconds() for d in (defaults.ttl, defaults.renew_every, defaults.margin)] == [15, 5, 3]


@pytest.mark.parametrize("connection", [
    "host=pg dbname=rocketwatch user=rw password=hunter2",
    "postgresql://rw:hunter2@pg/rocketwatch",
])
def test_a_password_in_the_connection_string_is_refused_at_its_line(tmp_path: Path, connection: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, f"""\
        ha:
          connection: "{connection}"
        """)
    with pytest.raises(ConfigLoadError) as err:
        load_config(path)
    [error] = err.value.errors
    assert str(error).startswith(f"{path}:5:") and "ha.connection" in str(error) and "password_env" in str(error)
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "ha.connection" in out and "hunter2" not in out


@pytest.mark.parametrize(("ha", "said"), [
    ("connection: 'host=pg user=rw'", "names no database"),
    ("connection: 'host=pg dbname=rw sslmod=require'", 'invalid connection option "sslmod"'),
    ("connection: 'dbname=rw'\n  lease: {ttl: 15s, renew_every: 12s, margin: 3s}", "renew_every (12s) must be below"),
    ("connection: 'dbname=rw'\n  lease: {ttl: 15s, renew_every: 5s, margin: 15s}", "margin (15s)"),
    ("connection: 'dbname=rw'\n  timeout: 6s", "timeout (6s) must not exceed lease.renew_every (5s)"),
    ("connection: 'dbname=rw'\n  lease: {ttl: 15s, renw_every: 5s}", "unknown field"),
    ("connection: 'dbname=rw'\n  on_coordinator_loss: {fail_open_after: 10s}",
     "fail_open_after (10s) must be at least lease.ttl (15s)"),
])
def test_check_names_what_is_wrong_with_the_section(tmp_path: Path, ha: str, said: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "ha:\n  " + ha + "\n")
    assert main(["check", str(path)]) == 1
    assert said in capsys.readouterr().out


def test_the_password_comes_from_the_environment_or_a_credential_and_connects(
        postgres: PostgresServer, postgres_dsn: str, tmp_path: Path) -> None:
    ha = HaConfig(connection=postgres_dsn.replace(f" password={PASSWORD}", ""), password_env="RW_PG_PASSWORD")
    with pytest.raises(ValueError, match="RW_PG_PASSWORD is not set"):
        ha.conninfo({})
    (tmp_path / "RW_PG_PASSWORD").write_text(PASSWORD + "\n")
    for env in ({"RW_PG_PASSWORD": PASSWORD}, {"CREDENTIALS_DIRECTORY": str(tmp_path)}):
        with psycopg.connect(ha.conninfo(env)) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("rocketwatch",)
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(ha.connection)


def test_the_json_schema_describes_the_section() -> None:
    schema = schema_of("config")
    assert "ha" in schema["properties"]
    ha = schema["$defs"]["HaConfig"]
    assert {"connection", "password_env", "node", "lease", "timeout"} <= set(ha["properties"])
    assert set(schema["$defs"]["LeaseConfig"]["properties"]) == {"ttl", "renew_every", "margin"}
    with pytest.raises(ValidationError):
        HaConfig(connection="dbname=rw", extra_field=1)


def test_check_validates_the_section_without_connecting_to_postgresql(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # `check` runs in CI and on a laptop without the coordinator: it parses, it never connects. A listener
    # stands where the server would be and counts who knocks.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        path = _write(tmp_path, f"""\
            ha:
              connection: "host=127.0.0.1 port={port} dbname=rocketwatch user=rocketwatch connect_timeout=2"
              password_env: RW_CHECK_UNSET_PASSWORD
            """)
        assert main(["check", str(path)]) == 0, capsys.readouterr().out
        with pytest.raises(TimeoutError):
            listener.accept()
    assert capsys.readouterr().out.startswith("OK: 1 file(s)")
