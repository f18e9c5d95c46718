"""A holder killed between the Slack post and its sent record, and the holder after it: two daemons in one
process on one real coordinator (SQLite or PostgreSQL), the Slack stand-in stamping messages with the world
clock, one group firing. Shared by the protocol test and bench/ha.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from daemon.alerts.db import StateDB
from daemon.alerts.tracker import AlertTracker
from daemon.coordination.lease import LeaseKeeper
from daemon.coordination.model import Coordinator, Fence, GroupRef
from daemon.coordination.service import CoordinationService
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.model import Notification, ThreadRef
from daemon.notify.outbox import Outbox
from daemon.notify.slack import SlackNotifier
from tests.daemon.coordination.ha_world import START, STEP, Node, timeline_at
from tests.helpers.clock import ManualClock
from tests.helpers.slack_server import CHANNEL_ID, SlackServer

TOKEN = "xoxb-mid-send"


class Killed(Exception):
    """The holder died here (kill -9): nothing after this point of its process runs."""


class DiesBeforeSentRecord:
    """A coordinator whose daemon is killed right after a receiver took a send, before its sent record."""

    def __init__(self, inner: Coordinator, on_kill: Callable[[], None]) -> None:
        self.inner = inner
        self.on_kill = on_kill
        self.killed_at: datetime | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def record_sent(self, fence: Fence, ref: GroupRef, seq: int, reply: Mapping[str, Any], at: datetime) -> None:
        """Never recorded: the process is gone."""
        self.on_kill()
        raise Killed(f"{fence.holder} killed after send {seq} of {ref} reached its receiver")


class Timed:
    """A notifier that notes how long each send took on the wall clock (the lookup included)."""

    def __init__(self, inner: SlackNotifier) -> None:
        self.inner = inner
        self.seconds: list[float] = []

    async def send(self, notification: Notification, thread: ThreadRef | None) -> ThreadRef | None:
        """Send through the real notifier, timed."""
        began = time.perf_counter()
        try:
            return await self.inner.send(notification, thread)
        finally:
            self.seconds.append(time.perf_counter() - began)


@dataclass
class Outcome:
    """What the channel shows after the crash and the next holder's send."""

    posts: int  # top-level chat.postMessage calls of the group
    marked: int  # ... of which marked as a possible repeat
    lookups: int  # conversations.history / .replies calls
    keys: list[str]  # the idempotency key each post carried
    killed_at: datetime
    recorded_at: datetime | None  # when the next holder's sent record went in (world clock)
    seq: int | None  # the shared log's number of the send the next holder made (its retry)
    resolve_seconds: float | None  # world seconds from the kill to that record
    send_wall_seconds: list[float] = field(default_factory=list)  # the next holder's sends, lookup included


def node(name: str, tmp_path: Path, coordinator: Coordinator, clock: ManualClock, slack: SlackServer) -> Node:
    """One daemon sending to Slack only, its channel configured by ID (what a history lookup needs)."""
    keeper = LeaseKeeper(coordinator, f"{name}/1", clock=clock)
    db = StateDB(tmp_path / f"{name}.db")
    outbox = Outbox(db, coordination=CoordinationService(coordinator, keeper))
    dispatcher = Dispatcher(outbox, ["slack"], ["alertname", "cluster", "group"])
    notifier = SlackNotifier("slack", TOKEN, CHANNEL_ID, base_url=slack.base_url, timeout=5)
    return Node(name, db, keeper, outbox, dispatcher, AlertTracker(db), {"slack": Timed(notifier)}, groups=1)


async def crash_mid_send(tmp_path: Path, connect: Callable[[ManualClock], Coordinator], slack: SlackServer,
                         clock: ManualClock, until: float = 120.0, chatter: int = 0) -> Outcome:
    """Run A and B until `until` seconds; A dies between its first Slack post and its sent record, and
    `chatter` other messages reach the channel after that post (a busy channel)."""
    a_coordinator = connect(clock)
    a: Node | None = None

    def kill() -> None:
        assert a is not None
        a.running = False
        for i in range(chatter):
            ts = f"{clock.now.timestamp() + 1 + i / 1000:.6f}"
            slack.messages[ts] = {"text": f"someone else's message {i}", "ts": ts}

    dying = DiesBeforeSentRecord(a_coordinator, kill)
    a = node("node-a", tmp_path, dying, clock, slack)  # type: ignore[arg-type]
    b = node("node-b", tmp_path, connect(clock), clock, slack)
    nodes = [a, b]
    for n in nodes:
        await n.outbox.coordination.coordinator.open()
        n.outbox.coordination.opened = True
    try:
        while (clock.now - START).total_seconds() < until:
            for n in nodes:
                if not n.running:
                    continue
                try:
                    await n.step(clock.now)
                except Killed:
                    dying.killed_at = clock.now
            clock.advance(STEP)
        sent = [(r.delivered_at, r.seq) for r in b.outbox.rows() if r.delivered_at is not None]
    finally:
        for n in nodes:
            await n.outbox.coordination.coordinator.close()
            n.db.close()
    assert dying.killed_at is not None, "node-a never reached Slack: nothing was killed mid-send"
    assert timeline_at(dying.killed_at, 1), "the group fired"
    posts = [c for c in slack.calls_to("chat.postMessage") if not c.args.get("thread_ts")]
    recorded_at, seq = min(sent, key=lambda s: s[0]) if sent else (None, None)
    timed = b.notifiers["slack"]
    return Outcome(
        posts=len(posts), marked=sum("(possible repeat)" in c.args.get("text", "") for c in posts),
        lookups=len([c for c in slack.calls if c.method.startswith("conversations.")]),
        keys=[c.args["metadata"]["event_payload"]["idempotency_key"] for c in posts],
        killed_at=dying.killed_at, recorded_at=recorded_at, seq=seq,
        resolve_seconds=(recorded_at - dying.killed_at).total_seconds() if recorded_at else None,
        send_wall_seconds=list(timed.seconds))


def slack_server(clock: ManualClock, scopes: tuple[str, ...] | None = None) -> SlackServer:
    """The stand-in, stamping each message with the world clock (as Slack stamps with its own)."""
    kwargs = {"scopes": scopes} if scopes is not None else {}
    return SlackServer(token=TOKEN, clock=lambda: clock.now.timestamp(), **kwargs)
