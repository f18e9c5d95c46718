"""Buttons on Slack messages, clicked over a local Socket Mode websocket: silence, acknowledge, update."""

from __future__ import annotations

import asyncio
import time

import pytest

from config.receivers import SlackReceiver
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.silences import SilenceStore
from daemon.notify import render
from daemon.notify.factory import build_notifiers
from daemon.notify.slack_actions import build_action_listeners
from tests.daemon.notify.conftest import Cycle, at, span
from tests.helpers.slack_server import CHANNEL_ID, SlackServer
from tests.helpers.slack_socket import SlackSocketServer

BOT, APP = "xoxb-bot-token", "xapp-1-app-token"
ENV = {"SLACK_BOT_TOKEN": BOT, "SLACK_APP_TOKEN": APP}


@pytest.fixture
def servers():
    with SlackSocketServer() as socket, SlackServer(token=BOT, app_token=APP, socket_url=socket.url) as slack:
        yield slack, socket


def receiver(slack: SlackServer, app_token_env: str | None = "SLACK_APP_TOKEN") -> SlackReceiver:
    return SlackReceiver(
        type="slack", name="oncall-slack", channel="#rocketmq-alerts", token_env="SLACK_BOT_TOKEN",
        app_token_env=app_token_env, base_url=slack.base_url, timeout=5,
    )


class Harness:
    """The daemon's pieces on one event loop: cycle, outbox delivery, Socket Mode listener."""

    def __init__(self, db, slack: SlackServer, socket: SlackSocketServer) -> None:
        self.slack, self.socket = slack, socket
        self.silences = SilenceStore(db)
        self.actions = GroupActionStore(db)
        self.cycle = Cycle(db, ["oncall-slack"], silences=self.silences)
        self.configs = [receiver(slack)]
        self.notifiers = build_notifiers(self.configs, ENV, group_notes=self.actions.notes)
        self.listeners = build_action_listeners(self.configs, self.notifiers, self.silences, self.actions, ENV)
        self.now = at(0)
        self.handled = 0  # clicks the listeners have finished handling (the message updated, if it is)
        self._progress = asyncio.Event()
        for listener in self.listeners:
            listener.handler.clock = lambda: self.now  # clicks happen on the test's clock, as cycles do
            listener.handler.handle = self._counting(listener.handler.handle)  # type: ignore[method-assign]

    def _counting(self, handle):
        async def counted(payload):
            try:
                return await handle(payload)
            finally:
                self.handled += 1
                self._progress.set()

        return counted

    async def wait_handled(self, count: int, timeout: float = 10.0) -> None:
        """Wait until the listeners have finished handling `count` clicks in all."""

        async def reached() -> None:
            while self.handled < count:
                self._progress.clear()
                await self._progress.wait()

        try:
            await asyncio.wait_for(reached(), timeout)
        except TimeoutError:
            raise AssertionError(f"{count} click(s) not handled within {timeout:.0f}s ({self.handled} were)") from None

    async def __aenter__(self) -> Harness:
        for listener in self.listeners:
            await listener.start()
        await asyncio.to_thread(self.socket.wait_connected)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for listener in self.listeners:
            await listener.stop()

    async def evaluate(self, findings, now) -> list:
        self.now = now
        queued = await self.cycle.arun(findings, now)
        self.actions.close_resolved(self.cycle.tracker.active_alerts(), self.silences, now)
        await self.cycle.outbox.deliver_due(self.notifiers, now)
        return queued

    async def click(self, action_id: str, user: str = "ana", message_ts: str | None = None) -> dict:
        ts = message_ts or next(iter(self.slack.messages))
        message = self.slack.messages[ts]
        button = next(
            e for b in message["blocks"] if b.get("block_id") == render.SLACK_ACTIONS_BLOCK
            for e in b["elements"] if e["action_id"] == action_id
        )
        payload = {
            "type": "block_actions",
            "user": {"id": "U0ANA", "username": user, "name": user},
            "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL_ID},
            "channel": {"id": CHANNEL_ID, "name": "rocketmq-alerts"},
            "message": {"type": "message", "ts": ts, "text": message["text"], "blocks": message["blocks"],
                        "attachments": message["attachments"]},
            "actions": [{"action_id": action_id, "block_id": render.SLACK_ACTIONS_BLOCK, "type": "button",
                         "value": button["value"], "action_ts": str(time.time())}],
        }
        handled = self.handled
        ack = await asyncio.to_thread(self.socket.send_interactive, payload)
        await self.wait_handled(handled + 1)  # the handling (and the message's update) follows the ack
        return ack


def action_ids(message: dict) -> list[str]:
    return [e["action_id"] for b in message["blocks"] if b.get("block_id") == render.SLACK_ACTIONS_BLOCK
            for e in b.get("elements", [])]


def notes(message: dict) -> str:
    return " ".join(e["text"] for b in message["blocks"] if b.get("block_id") == render.SLACK_NOTES_BLOCK
                    for e in b["elements"])


def test_silence_1h_click_mutes_the_group_and_updates_the_message(db, servers):
    slack, socket = servers
    h = Harness(db, slack, socket)

    async def scenario():
        async with h:
            await h.evaluate([span(queue=3)], at(0))
            (message,) = slack.messages.values()
            assert action_ids(message) == [
                render.SLACK_ACTION_SILENCE_1H, render.SLACK_ACTION_SILENCE_UNTIL_RESOLVED, render.SLACK_ACTION_ACK,
            ]
            ack = await h.click(render.SLACK_ACTION_SILENCE_1H)
            assert ack["envelope_id"]

            (silence,) = h.silences.all()
            assert {str(m) for m in silence.matchers} == {
                'alertname="ProcessQueueSpanTooLong"', 'cluster="prod"', 'group="stuckGroup"'}
            assert silence.created_by == "ana (Slack)"
            assert silence.ends_at - silence.starts_at == at(3600) - at(0)

            (update,) = slack.calls_to("chat.update")
            assert update.authorization == f"Bearer {BOT}"  # the bot edits its own message
            updated = slack.messages[update.args["ts"]]
            assert "Silenced for 1h by ana" in notes(updated)
            assert action_ids(updated) == []  # nothing left to click on a muted group
            assert "stuckGroup" in str(updated["attachments"])  # the alerts are still shown

            # Next cycle: the alert still fires and another queue of the group joins: nothing is sent.
            posts = len(slack.calls_to("chat.postMessage"))
            queued = await h.evaluate([span(queue=3), span(queue=5)], at(30))
            assert queued == []
            assert len(slack.calls_to("chat.postMessage")) == posts

    asyncio.run(scenario())


def test_acknowledge_records_who_keeps_the_silence_buttons_and_ends_with_the_group(db, servers):
    slack, socket = servers
    h = Harness(db, slack, socket)
    key = '{alertname="ProcessQueueSpanTooLong",cluster="prod",group="stuckGroup"}'

    async def scenario():
        async with h:
            await h.evaluate([span(queue=3)], at(0))
            await h.click(render.SLACK_ACTION_ACK, user="bob")
            ack = h.actions.acknowledged(key)
            assert ack is not None and ack.actor == "bob"
            updated = next(iter(slack.messages.values()))
            assert "Acknowledged by bob" in notes(updated)
            assert action_ids(updated) == [render.SLACK_ACTION_SILENCE_1H, render.SLACK_ACTION_SILENCE_UNTIL_RESOLVED]
            assert h.silences.all() == []  # acknowledging is not muting

            # A new alert of the group still goes out, and the re-rendered message keeps the note.
            await h.evaluate([span(queue=3), span(queue=5)], at(30))
            assert len(slack.replies) == 1
            assert "Acknowledged by bob" in notes(next(iter(slack.messages.values())))

            # Resolved: the message is updated to RESOLVED and the acknowledgement ends with the group.
            await h.evaluate([], at(60))
            assert h.actions.acknowledged(key) is None
            assert "RESOLVED" in next(iter(slack.messages.values()))["blocks"][0]["text"]["text"]

    asyncio.run(scenario())


def test_silence_until_resolved_expires_when_the_group_resolves(db, servers):
    slack, socket = servers
    h = Harness(db, slack, socket)

    async def scenario():
        async with h:
            await h.evaluate([span(queue=3)], at(0))
            await h.click(render.SLACK_ACTION_SILENCE_UNTIL_RESOLVED, user="carla")
            (silence,) = h.silences.active(at(1))
            assert "Silenced until resolved by carla" in notes(next(iter(slack.messages.values())))

            await h.evaluate([span(queue=3)], at(30))
            assert h.silences.active(at(30)) == [silence]  # still firing: still silenced
            await h.evaluate([], at(60))
            assert h.silences.active(at(61)) == []  # resolved: the silence ended with it
            assert h.actions.all() == []

    asyncio.run(scenario())


def test_a_button_without_a_readable_group_changes_nothing(db, servers):
    slack, socket = servers
    h = Harness(db, slack, socket)

    async def scenario():
        async with h:
            await h.evaluate([span(queue=3)], at(0))
            ts = next(iter(slack.messages))
            payload = {
                "type": "block_actions", "user": {"id": "U0MALLORY"},
                "container": {"message_ts": ts, "channel_id": CHANNEL_ID},
                "actions": [{"action_id": render.SLACK_ACTION_SILENCE_1H, "value": "{not json"}],
            }
            ack = await asyncio.to_thread(socket.send_interactive, payload)
            assert ack["envelope_id"]  # acknowledged all the same, so Slack does not retry it
            await h.wait_handled(1)
            assert h.silences.all() == [] and slack.calls_to("chat.update") == []

    asyncio.run(scenario())


def test_without_an_app_token_there_are_no_buttons_and_no_listener(db):
    with SlackServer(token=BOT) as slack:
        config = receiver(slack, app_token_env=None)
        notifiers = build_notifiers([config], ENV)
        silences, actions = SilenceStore(db), GroupActionStore(db)
        assert build_action_listeners([config], notifiers, silences, actions, ENV) == []
        cycle = Cycle(db, ["oncall-slack"])
        cycle.run([span()], at(0))
        asyncio.run(cycle.outbox.deliver_due(notifiers, at(0)))
        (message,) = slack.messages.values()
        assert action_ids(message) == []


def test_a_missing_app_token_variable_is_named_not_printed():
    with SlackServer(token=BOT) as slack:
        config = receiver(slack)
        with pytest.raises(ValueError, match="SLACK_APP_TOKEN is not set"):
            build_notifiers([config], {"SLACK_BOT_TOKEN": BOT})
