"""Buttons on Slack alert messages: clicks arrive over Socket Mode (no public endpoint needed),
become a silence or an acknowledgement in the state file, and the message is updated to say so."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from config.receivers import ReceiverConfig, SlackReceiver
from daemon.alerts.group_actions import ACK, SILENCE_UNTIL_RESOLVED, GroupActionStore, group_matchers
from daemon.alerts.silences import SilenceStore
from daemon.notify import render
from daemon.notify.model import Notifier
from daemon.notify.slack import SlackNotifier
from rules.durations import parse_duration

log = logging.getLogger(__name__)

# "Until resolved" has no natural end: the silence is expired when the group resolves
# (GroupActionStore.close_resolved); this bound only keeps a forgotten one from living forever.
UNTIL_RESOLVED_LIMIT = timedelta(days=7)


@dataclass(frozen=True)
class ActionOutcome:
    """What one click did."""

    action: str  # the button's action_id
    group_key: str
    actor: str
    note: str
    silence_id: str | None = None


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SlackActionHandler:
    """Turns block_actions payloads into silences and acknowledgements, and updates the message."""

    def __init__(
        self,
        receiver: str,
        silences: SilenceStore,
        group_actions: GroupActionStore,
        web: AsyncWebClient,
        silence_for: timedelta = timedelta(hours=1),
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.receiver = receiver
        self.silences = silences
        self.group_actions = group_actions
        self.web = web
        self.silence_for = silence_for
        self.clock = clock

    async def handle(self, payload: dict[str, Any]) -> list[ActionOutcome]:
        """Carry out every rocketwatch button in a block_actions payload; ignore anything else."""
        if payload.get("type") != "block_actions":
            return []
        outcomes = []
        for action in payload.get("actions") or []:
            outcome = self._apply(action, _actor(payload))
            if outcome is not None:
                outcomes.append(outcome)
                log.info("slack %s: %s (%s) on alert group %s", self.receiver, outcome.note, outcome.action,
                         outcome.group_key)
        if outcomes:
            await self._update_message(payload, outcomes)
        return outcomes

    def _apply(self, action: dict[str, Any], actor: str) -> ActionOutcome | None:
        action_id = action.get("action_id")
        if action_id not in (render.SLACK_ACTION_SILENCE_1H, render.SLACK_ACTION_SILENCE_UNTIL_RESOLVED,
                             render.SLACK_ACTION_ACK):
            return None
        try:
            target = json.loads(action.get("value") or "")
            group_key, labels = str(target["group_key"]), {str(k): str(v) for k, v in target["labels"].items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("slack %s: button %s from %s carries no alert group (value %r); ignored",
                        self.receiver, action_id, actor, (action.get("value") or "")[:200])
            return None
        now = self.clock()
        matchers = group_matchers(labels)
        if action_id == render.SLACK_ACTION_ACK:
            self.group_actions.record(group_key, ACK, actor, matchers, now)
            return ActionOutcome(action_id, group_key, actor, f"Acknowledged by {actor} at {now:%H:%M} UTC")
        if action_id == render.SLACK_ACTION_SILENCE_1H:
            silence = self.silences.add(matchers, now, now + self.silence_for, f"{actor} (Slack)",
                                        f"Silence {_duration(self.silence_for)} from Slack", now)
            note = f"Silenced for {_duration(self.silence_for)} by {actor} (until {silence.ends_at:%H:%M} UTC)"
            return ActionOutcome(action_id, group_key, actor, note, silence.id)
        silence = self.silences.add(matchers, now, now + UNTIL_RESOLVED_LIMIT, f"{actor} (Slack)",
                                    "Silenced from Slack until the alert group resolves", now)
        self.group_actions.record(group_key, SILENCE_UNTIL_RESOLVED, actor, matchers, now, silence.id)
        return ActionOutcome(action_id, group_key, actor, f"Silenced until resolved by {actor} at {now:%H:%M} UTC",
                             silence.id)

    async def _update_message(self, payload: dict[str, Any], outcomes: list[ActionOutcome]) -> None:
        container = payload.get("container") or {}
        message = payload.get("message") or {}
        channel = container.get("channel_id") or (payload.get("channel") or {}).get("id")
        ts = container.get("message_ts") or message.get("ts")
        if not channel or not ts:
            log.warning("slack %s: click without channel or message ts; the message is not updated", self.receiver)
            return
        group_key = outcomes[-1].group_key
        notes = [o.note for o in outcomes if o.action != render.SLACK_ACTION_ACK] + self.group_actions.notes(group_key)
        silenced = any(o.silence_id for o in outcomes)
        blocks = []
        for block in message.get("blocks") or []:
            if block.get("block_id") == render.SLACK_NOTES_BLOCK:
                continue
            if block.get("block_id") == render.SLACK_ACTIONS_BLOCK:
                if silenced:
                    continue  # nothing left to click: the group is muted
                block = _without_ack(block)
            blocks.append(block)
        blocks.insert(min(2, len(blocks)), render.slack_note_block(list(dict.fromkeys(notes))))
        kwargs: dict[str, Any] = {"channel": channel, "ts": ts, "text": message.get("text") or "", "blocks": blocks}
        if message.get("attachments"):
            kwargs["attachments"] = message["attachments"]
        await self.web.chat_update(**kwargs)


class SlackActionListener:
    """One Socket Mode connection per Slack receiver with an app-level token."""

    def __init__(self, app_token: str, handler: SlackActionHandler, base_url: str | None = None) -> None:
        self._app_token = app_token
        self.handler = handler
        self.base_url = base_url
        self.client: SocketModeClient | None = None

    def __repr__(self) -> str:
        return f"SlackActionListener(receiver={self.handler.receiver!r})"  # never the token

    async def start(self) -> None:
        """Open the Socket Mode connection (slack-sdk reconnects by itself after drops)."""
        # apps.connections.open authenticates with the app-level token, which SocketModeClient passes itself.
        web = AsyncWebClient(base_url=self.base_url) if self.base_url else AsyncWebClient()
        self.client = SocketModeClient(app_token=self._app_token, web_client=web, logger=log)
        self.client.socket_mode_request_listeners.append(self._on_request)
        await self.client.connect()
        log.info("slack %s: listening for button clicks over Socket Mode", self.handler.receiver)

    async def stop(self) -> None:
        """Close the connection."""
        if self.client is not None:
            await self.client.close()
            self.client = None

    async def _on_request(self, client: SocketModeClient, request: SocketModeRequest) -> None:
        # Slack wants the envelope acknowledged within 3 s, whatever the handling does after.
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
        if request.type != "interactive":
            return
        try:
            await self.handler.handle(request.payload)
        except Exception:
            log.exception("slack %s: could not carry out a button click", self.handler.receiver)


def _actor(payload: dict[str, Any]) -> str:
    user = payload.get("user") or {}
    return str(user.get("username") or user.get("name") or user.get("id") or "someone on Slack")


def _without_ack(block: dict[str, Any]) -> dict[str, Any]:
    elements = [e for e in block.get("elements") or [] if e.get("action_id") != render.SLACK_ACTION_ACK]
    return {**block, "elements": elements}


def _duration(d: timedelta) -> str:
    minutes = int(d.total_seconds() // 60)
    return f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"


def build_action_listeners(
    configs: Sequence[ReceiverConfig],
    notifiers: Mapping[str, Notifier],
    silences: SilenceStore,
    group_actions: GroupActionStore,
    env: Mapping[str, str] = os.environ,
) -> list[SlackActionListener]:
    """A listener for every Slack receiver that has an app-level token; none without one."""
    listeners = []
    for config in configs:
        if not isinstance(config, SlackReceiver):
            continue
        app_token = config.resolve_app_token(env)
        notifier = notifiers.get(config.name)
        if app_token is None or not isinstance(notifier, SlackNotifier):
            continue
        handler = SlackActionHandler(config.name, silences, group_actions, notifier.client,
                                     silence_for=parse_duration(config.silence_button))
        listeners.append(SlackActionListener(app_token, handler, base_url=config.base_url))
    return listeners
