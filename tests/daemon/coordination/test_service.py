"""The coordination service as the daemon runs it: started with its schema, renewing, stopped cleanly;
a single node's coordinator lives in the daemon's own state file beside its tables."""

from __future__ import annotations

import asyncio
from pathlib import Path

from daemon.alerts.db import StateDB
from daemon.coordination.factory import service_for
from tests.helpers.clock import ManualClock


def test_a_single_node_runs_its_lease_in_its_state_file_and_gives_it_up_at_stop(tmp_path: Path) -> None:
    state = StateDB(tmp_path / "state.db")  # the daemon's own tables, opened first as the daemon does

    async def main() -> None:
        clock = ManualClock()
        service = service_for(None, tmp_path / "state.db", clock)
        await service.start()
        while service.keeper.renewals < 1:
            await asyncio.sleep(0)
        status = service.status()
        assert status.holding and status.may_send and status.epoch == 1 and status.holder == status.me
        assert status.last_error is None and status.expires_at is not None
        await service.stop()
        assert not service.status().holding

    asyncio.run(main())
    tables = {r[0] for r in state.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"coord_lease", "coord_log", "coord_sends", "coord_incidents", "outbox", "incidents"} <= tables
    [lease] = state.query("SELECT expires_at, renewed_at FROM coord_lease")
    assert lease["expires_at"] <= lease["renewed_at"] + 1e-6, "given up at stop: a restart takes it at once"
    state.close()
