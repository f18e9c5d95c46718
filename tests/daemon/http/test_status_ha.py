"""The status page's HA section: the lease holder, its epoch and since when, this daemon's part, and what it
holds; read from real coordination services (PostgreSQL on loopback, a coordinator nobody answers for)."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path

from config.ha import HaConfig
from daemon.alerts.db import StateDB
from daemon.coordination.factory import service_for
from daemon.http.status_ha import ha_section, ha_view
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.outbox import Outbox
from tests.daemon.notify.conftest import Cycle, at, span
from tests.helpers.clock import ManualClock
from tests.helpers.daemon_proc import free_port
from tests.helpers.postgres import PASSWORD, PostgresServer


def _text(markup: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", markup)).strip()


def test_holder_and_standby_each_show_the_holder_its_epoch_and_their_part(
        tmp_path: Path, postgres: PostgresServer, postgres_dsn: str) -> None:
    connection = postgres_dsn.replace(f" password={PASSWORD}", "")
    env = {"RW_PG_PASSWORD": PASSWORD}

    async def main() -> tuple[str, str]:
        clock = ManualClock()
        outboxes = []
        for node in ("ops-1", "ops-2"):
            ha = HaConfig(connection=connection, password_env="RW_PG_PASSWORD", node=node, timeout=2)
            service = service_for(ha, Path("unused"), clock, env=env)
            outbox = Outbox(StateDB(tmp_path / f"{node}.db"), coordination=service)
            service.report_peer(lambda: clock.now, outbox.held)
            await service.start()
            await service.keeper.renew()  # the first claim, in order: ops-1 takes the lease, ops-2 finds it held
            outboxes.append(outbox)
        reporters = [o.coordination.peer_reporter for o in outboxes]
        for reporter in reporters:  # both rows in (a row still in flight also makes a renewal skip its own)
            assert reporter is not None
            await reporter.flushed()
        for outbox, reporter in zip(outboxes, reporters, strict=True):  # each reads both after its renewal
            await outbox.coordination.keeper.renew()
            await reporter.flushed()  # type: ignore[union-attr]
        try:
            now = datetime.now(UTC)
            return tuple(ha_section(ha_view(o), now) for o in outboxes)  # type: ignore[return-value]
        finally:
            for outbox in outboxes:
                await outbox.coordination.stop()
                outbox.db.close()

    holder, standby = (_text(s) for s in asyncio.run(main()))
    assert re.search(r"This daemon \(ops-1/\S+\) holds the dispatch lease", holder), holder
    assert re.search(r"lease holder ops-1/\S+ epoch 1 held since \d\d:\d\d:\d\d", holder), holder
    assert "held notifications none" in holder
    assert re.search(r"This daemon \(ops-2/\S+\) standby", standby), standby
    assert re.search(r"lease holder ops-1/\S+ epoch 1", standby), standby  # the standby names the holder
    for section in (holder, standby):  # both show the same peers table
        assert re.search(r"Peers as read at 03:00:00 .* node host version last renew last evaluation held lease "
                         r"ops-1 \S+ \S+ 03:00:00 \(0s ago\) 03:00:00 \(0s ago\) 0 holder "
                         r"ops-2 \S+ \S+ 03:00:00 \(0s ago\) 03:00:00 \(0s ago\) 0 standby$", section), section


def test_a_daemon_cut_from_its_coordinator_says_so_and_counts_what_it_holds(tmp_path: Path) -> None:
    ha = HaConfig(connection=f"host=127.0.0.1 port={free_port()} dbname=rocketwatch user=rw connect_timeout=1",
                  timeout="1s", node="ops-3")
    service = service_for(ha, tmp_path / "state.db")
    db = StateDB(tmp_path / "state.db")
    cycle = Cycle(db, ["oncall-mail"])
    cycle.outbox = Outbox(db, coordination=service)
    cycle.dispatcher = Dispatcher(cycle.outbox, ["oncall-mail"], ["alertname", "cluster", "group"])

    async def main() -> str:
        await service.start()
        try:
            await cycle.arun([span()], at(0))
            return ha_section(ha_view(cycle.outbox), datetime.now(UTC))
        finally:
            await service.stop()

    section = _text(asyncio.run(main()))
    db.close()
    assert "cannot reach the coordinator" in section and "1 held" in section, section
    assert re.search(rf"coordinator error .*127\.0\.0\.1:{ha.connection.split('port=')[1].split()[0]}", section), section


def test_a_single_node_has_no_ha_section(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db")
    outbox = Outbox(db)
    assert ha_view(outbox) is None and ha_section(None, datetime.now(UTC)) == ""
    db.close()
