"""Two (or more) daemons in one process, one PostgreSQL, real receivers on loopback, one clock the test
moves: each daemon its own state file, tracker, outbox and dispatcher, fed the same findings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from config.receivers import SlackReceiver, WebhookReceiver
from daemon.alerts.db import StateDB
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.tracker import AlertTracker
from daemon.coordination.incident_ids import IncidentIds
from daemon.coordination.lease import LeaseKeeper
from daemon.coordination.postgres import PostgresCoordinator
from daemon.coordination.service import CoordinationService
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.factory import build_notifier
from daemon.notify.outbox import Outbox
from rules.findings import Finding
from rules.links import CausalLinks
from tests.daemon.notify.conftest import TIMINGS, span
from tests.helpers.clock import ManualClock
from tests.helpers.slack_server import SlackServer
from tests.helpers.webhook_server import WebhookServer

STEP = 5.0  # seconds between two evaluations (and lease renewals) of every daemon
GROUPS = 6


def timeline(t: float, groups: int = GROUPS) -> list[Finding]:
    """What the cluster shows at second t: each consumer group stuck twice, resolving in between (8 alert
    changes per group: two queues firing and resolving, twice)."""
    findings = []
    for i in range(groups):
        start = 15 * i
        if start <= t < start + 400 or start + 900 <= t < start + 1300:
            # queue 4 joins each incident a while after it opened: an update of an open thread
            findings.append(span(group=f"group-{i}", queue=3))
            if start + 120 <= t < start + 400 or start + 1020 <= t < start + 1300:
                findings.append(span(group=f"group-{i}", queue=4))
    return findings


def end(groups: int = GROUPS) -> float:
    """The second by which every incident was told and resolved (group_wait and group_interval 0)."""
    return 15 * groups + 1300 + 30


END = end()


@dataclass
class Node:
    """One daemon: its own state, its own connection to the coordinator (maybe through a proxy)."""

    name: str
    db: StateDB
    keeper: LeaseKeeper
    outbox: Outbox
    dispatcher: Dispatcher
    tracker: AlertTracker
    notifiers: dict
    incidents: IncidentBook | None = None
    groups: int = GROUPS
    running: bool = True  # False: killed or paused (it does nothing)

    async def step(self, now, renew_first: bool = True) -> None:
        """One cycle: renew the lease, evaluate, dispatch, deliver (a woken daemon may deliver before renewing)."""
        if renew_first:
            await self.keeper.renew()
        events = self.tracker.update(TIMINGS, timeline_at(now, self.groups), now)
        if self.incidents is not None:
            await self.incidents.advance(events, self.tracker.active_alerts(), now)
        await self.dispatcher.dispatch(events, self.tracker.active_alerts(), now)
        await self.outbox.deliver_due(self.notifiers, now)
        if not renew_first:
            await self.keeper.renew()


_T0 = START = ManualClock().now  # where every world's clock starts (the timeline's second 0)


def timeline_at(now, groups: int = GROUPS) -> list[Finding]:
    """The timeline at a clock time."""
    return timeline((now - _T0).total_seconds(), groups)


@dataclass
class World:
    """The receivers, the clock and the daemons."""

    clock: ManualClock
    slack: SlackServer
    hook: WebhookServer
    nodes: list[Node] = field(default_factory=list)
    groups: int = GROUPS

    def add(self, name: str, tmp_path: Path, dsn: str, by_incident: bool = False) -> Node:
        """A daemon named `name` whose coordinator is reached at `dsn`; `by_incident`: grouped by incident
        (the default config), its ids from the shared incident table."""
        coordinator = PostgresCoordinator(dsn, self.clock, timeout=0.5)
        keeper = LeaseKeeper(coordinator, f"{name}/1", clock=self.clock)
        db = StateDB(tmp_path / f"{name}.db")
        outbox = Outbox(db, coordination=CoordinationService(coordinator, keeper))
        incidents = IncidentBook(db, lambda: CausalLinks([]), IncidentIds(coordinator, keeper.holder)) \
            if by_incident else None
        dispatcher = Dispatcher(outbox, ["slack", "hook"], ["incident"] if by_incident else ["alertname", "cluster", "group"],
                                incidents=incidents)
        env = {"T": "xoxb-ha", "H": "hook-ha"}
        notifiers = {
            "slack": build_notifier(SlackReceiver(type="slack", name="slack", channel="#mq", token_env="T",
                                                  base_url=self.slack.base_url, timeout=5), env),
            "hook": build_notifier(WebhookReceiver(type="webhook", name="hook", url=self.hook.url,
                                                   bearer_token_env="H", timeout=5), env),
        }
        node = Node(name, db, keeper, outbox, dispatcher, AlertTracker(db), notifiers, incidents, self.groups)
        self.nodes.append(node)
        return node

    async def open(self) -> None:
        """Open every daemon's coordinator (migrating the shared schema once)."""
        for node in self.nodes:
            await node.outbox.coordination.coordinator.open()
            node.outbox.coordination.opened = True

    async def run_until(self, seconds: float, during: Callable[[float], object] | None = None) -> None:
        """Step every running daemon each STEP until `seconds` on the timeline; `during(t)` before each step."""
        while (t := (self.clock.now - _T0).total_seconds()) < seconds:
            if during is not None:
                await _maybe_await(during(t))
            for node in self.nodes:
                if node.running:
                    await node.step(self.clock.now)
            self.clock.advance(STEP)

    async def close(self) -> None:
        """Close every coordinator and state file."""
        for node in self.nodes:
            await node.outbox.coordination.coordinator.close()
            node.db.close()

    # ---- what the receivers got -----------------------------------------------------------------

    def webhook_sends(self) -> dict[str, list[str]]:
        """Per group, the statuses the webhook receiver got, in order."""
        told: dict[str, list[str]] = {}
        for body in self.hook.bodies:
            group = body["commonLabels"].get("group") or body["groupLabels"]["group"]
            told.setdefault(group, []).append(body["status"])
        return told

    def duplicate_keys(self) -> dict[str, list[str]]:
        """Per receiver, the idempotency keys it got more than once (the same send told twice)."""
        slack_keys = [c.args["metadata"]["event_payload"]["idempotency_key"]
                      for c in self.slack.calls_to("chat.postMessage") if isinstance(c.args.get("metadata"), dict)]
        return {name: sorted(k for k, n in Counter(keys).items() if n > 1)
                for name, keys in (("slack", slack_keys), ("hook", [k or "" for k in self.hook.keys]))}

    def slack_threads(self) -> dict[str, int]:
        """Per group, how many top-level Slack messages (threads) were opened."""
        opened: Counter[str] = Counter()
        for call in self.slack.calls_to("chat.postMessage"):
            if call.args.get("thread_ts") is None and isinstance(call.args.get("metadata"), dict):
                opened[call.args["metadata"]["event_payload"]["group"]] += 1
        return dict(opened)


async def _maybe_await(value: object) -> None:
    if hasattr(value, "__await__"):
        await value  # type: ignore[misc]


def expected_webhook(groups: int = GROUPS) -> dict[str, list[str]]:
    """Every incident of every group told firing (with its update) and resolved, once."""
    return {f"group-{i}": ["firing", "firing", "resolved", "firing", "firing", "resolved"] for i in range(groups)}


def world(stack: ExitStack, groups: int = GROUPS) -> World:
    """Receivers started on loopback and a fresh clock."""
    return World(ManualClock(), stack.enter_context(SlackServer(token="xoxb-ha")),
                 stack.enter_context(WebhookServer(token="hook-ha")), groups=groups)


