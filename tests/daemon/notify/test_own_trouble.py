"""A daemon cut from its coordinator still tells that it is: its alerts about its own coordination go out
outside the lease (as its heartbeat), while what it would tell about the cluster is held."""

from __future__ import annotations

import asyncio
from pathlib import Path

from config.ha import HaConfig
from config.receivers import WebhookReceiver
from daemon.alerts.db import StateDB
from daemon.coordination.factory import service_for
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.factory import build_notifier
from daemon.notify.outbox import Outbox
from rules.findings import Finding, RuleTiming
from tests.daemon.notify.conftest import TIMINGS, Cycle, at, span
from tests.helpers.daemon_proc import free_port
from tests.helpers.webhook_server import WebhookServer

UNREACHABLE = "RocketwatchCoordinatorUnreachable"


def _unreachable(up: bool = False) -> list[Finding]:
    if up:
        return []
    return [Finding(UNREACHABLE, {"cluster": "rocketwatch", "host": "ops-1"}, "warning", 0, 1,
                    {"summary": "rocketwatch on ops-1: the HA coordinator does not answer"})]


def test_a_daemon_cut_from_its_coordinator_tells_so_itself_and_holds_the_rest(tmp_path: Path) -> None:
    ha = HaConfig(connection=f"host=127.0.0.1 port={free_port()} dbname=rocketwatch user=rw connect_timeout=1",
                  timeout="1s", node="ops-1")
    service = service_for(ha, tmp_path / "state.db")
    db = StateDB(tmp_path / "state.db")
    cycle = Cycle(db, ["hook"])
    cycle.outbox = Outbox(db, coordination=service)
    cycle.dispatcher = Dispatcher(cycle.outbox, ["hook"], ["alertname", "cluster", "group"])
    timings = {**TIMINGS, UNREACHABLE: RuleTiming(UNREACHABLE)}

    with WebhookServer() as hook:
        notifiers = {"hook": build_notifier(WebhookReceiver(type="webhook", name="hook", url=hook.url, timeout=5), {})}

        async def main() -> None:
            await service.start()
            try:
                for t, findings in ((0, [span(), *_unreachable()]), (60, [span()])):
                    events = cycle.tracker.update(timings, findings, at(t))
                    await cycle.arun(findings, at(t), events)
                    await cycle.outbox.deliver_due(notifiers, at(t))
            finally:
                await service.stop()

        asyncio.run(main())

    told = [(b["status"], [a["labels"]["alertname"] for a in b["alerts"]]) for b in hook.bodies]
    assert told == [("firing", [UNREACHABLE]), ("resolved", [UNREACHABLE])], told
    assert {r.notification.alerts[0].rule for r in cycle.outbox.rows(undelivered_only=True) if r.held} == \
        {"ProcessQueueSpanTooLong"}
    db.close()
