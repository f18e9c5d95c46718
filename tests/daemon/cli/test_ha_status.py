"""`rocketwatch ha status` reads the lease and the peers table from PostgreSQL itself (no daemon running):
the holder, its epoch, every peer's last renewal, evaluation and held notifications, a silent peer marked
stale; and it fails with a clear message when there is nothing to read."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from config.ha import HaConfig
from daemon.coordination.factory import service_for
from daemon.coordination.service import CoordinationService
from tests.helpers.clock import ManualClock
from tests.helpers.daemon_proc import REPO, free_port
from tests.helpers.postgres import PASSWORD, PostgresServer

ENV = {"RW_PG_PASSWORD": PASSWORD}


def _config(tmp: Path, connection: str | None) -> Path:
    ha = f'ha: {{connection: "{connection}", password_env: RW_PG_PASSWORD, timeout: 2s}}\n' if connection else ""
    path = tmp / "rocketwatch.yaml"
    path.write_text('clusters: [{name: DefaultCluster, namesrv: ["127.0.0.1:9876"]}]\n'
                    f"state_dir: {tmp / 'state'}\nnotify: {{receivers: [{{type: console, name: console}}]}}\n{ha}")
    return path


def _status(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon.cli", "ha", "status", "--config", str(config), *args],
                          cwd=REPO, env={**os.environ, **ENV}, capture_output=True, text=True, timeout=60)


def _daemons(connection: str) -> None:
    # Three daemons' rows, written as their renewals write them: ops-1 holds the lease and last evaluated 20 s
    # ago; ops-2 stands by holding one notification; ops-3 was last heard of an hour ago (its clock says so).
    async def main() -> None:
        services: list[CoordinationService] = []
        for node, held, clock in (("ops-1", 0, None), ("ops-2", 1, None),
                                  ("ops-3", 4, ManualClock(datetime.now(UTC) - timedelta(hours=1)))):
            ha = HaConfig(connection=connection, password_env="RW_PG_PASSWORD", node=node, timeout=2)
            service = service_for(ha, Path("unused"), clock, env=ENV)
            service.report_peer(lambda: datetime.now(UTC) - timedelta(seconds=20), lambda held=held: held, node)
            await service.coordinator.open()
            await service.keeper.renew()
            assert service.peer_reporter is not None
            await service.peer_reporter.flushed()
            services.append(service)
        for service in services:
            await service.coordinator.close()

    asyncio.run(main())


def test_status_shows_the_holder_and_every_peer_with_the_daemons_down(
        tmp_path: Path, postgres: PostgresServer, postgres_dsn: str) -> None:
    connection = postgres_dsn.replace(f" password={PASSWORD}", "")
    _daemons(connection)
    config = _config(tmp_path, connection)

    text = _status(config)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    lease = next(line for line in lines if line.startswith("lease"))
    assert "held by ops-1/" in lease and "epoch 1" in lease and "expires" in lease, text.stdout
    rows = {line.split()[0]: line for line in lines if line.startswith("  ops-")}
    assert set(rows) == {"ops-1", "ops-2", "ops-3"}, text.stdout
    assert rows["ops-1"].split()[-1] == "holder" and re.search(r"\((2\d|[3-9]\d)s ago\)", rows["ops-1"]), rows["ops-1"]
    assert rows["ops-2"].split()[-2:] == ["1", "-"], rows["ops-2"]  # one held, not the holder
    assert "STALE" in rows["ops-3"] and "(60m ago)" in rows["ops-3"], rows["ops-3"]
    assert "5 notification(s) held" in text.stdout

    as_json = _status(config, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    status = json.loads(as_json.stdout)
    assert status["lease"]["holder"].startswith("ops-1/") and status["lease"]["epoch"] == 1 and status["lease"]["live"]
    peers = {p["node"]: p for p in status["peers"]}
    assert [(n, peers[n]["holds_lease"], peers[n]["held_notifications"], peers[n]["stale"]) for n in sorted(peers)] == [
        ("ops-1", True, 0, False), ("ops-2", False, 1, False), ("ops-3", False, 4, True)]
    assert status["coordinator"] == f"PostgreSQL 127.0.0.1:{postgres.port}/{connection.split('dbname=')[1].split()[0]}"


def test_status_says_why_it_cannot_tell(tmp_path: Path, postgres: PostgresServer, postgres_dsn: str) -> None:
    single = _config(tmp_path, None)
    result = _status(single)
    assert result.returncode == 2 and "has no `ha:` section" in result.stderr, result.stderr

    (tmp_path / "fresh").mkdir()
    fresh = _config(tmp_path / "fresh", postgres_dsn.replace(f" password={PASSWORD}", ""))
    result = _status(fresh)
    assert result.returncode == 1 and "has no rocketwatch table coord_lease" in result.stderr, result.stderr

    port = free_port()
    (tmp_path / "away").mkdir()
    away = _config(tmp_path / "away", f"host=127.0.0.1 port={port} dbname=rocketwatch user=rw connect_timeout=1")
    result = _status(away)
    assert result.returncode == 1 and f"cannot reach the coordinator: PostgreSQL 127.0.0.1:{port}/rocketwatch" \
        in result.stderr, result.stderr
