"""Before Slack is sent again what may already be there: find the message by the idempotency key it carries
in its metadata, in the channel's recent history or the group's thread.

Every message rocketwatch posts carries `metadata` {event_type: rocketwatch_notification, event_payload:
{idempotency_key, group, receiver}}. A send recorded and never confirmed (a holder killed between Slack's
answer and its sent record) is looked up here before it is posted again; only such sends are, so a first
send costs no extra call. Reading history needs the channels:history (public) or groups:history (private)
scope; without it, or when the search cannot be complete, the caller posts once more, marked. A channel
configured as `#name` is first resolved to its ID (history takes only IDs) with conversations.list, which
needs channels:read (public) or groups:read (private channels the app is in).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from daemon.notify.model import Notification

EVENT_TYPE = "rocketwatch_notification"
HISTORY_SCOPES = ("channels:history", "groups:history")
LIST_SCOPES = ("channels:read", "groups:read")
LIST_PAGE_SIZE = 1000  # conversations.list's largest page
MAX_LIST_PAGES = 20  # a workspace of up to 20,000 channels the app can see
PAGE_SIZE = 200  # Slack's advice for cursor pages
MAX_PAGES = 5  # at most 1,000 messages read per lookup: a busy channel's last hours, not its archive
# Slack stamps a message with its own clock, the intent carries the daemon's: allow for them to differ.
CLOCK_MARGIN = timedelta(minutes=5)
# A conversation ID (public C…, private G…): conversations.* take only these, never a #name.
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{4,}$")


def message_metadata(notification: Notification, receiver: str) -> dict[str, Any]:
    """The chat.postMessage `metadata` of a notification: its idempotency key, group and receiver."""
    return {"event_type": EVENT_TYPE, "event_payload": {
        "idempotency_key": notification.idempotency_key, "group": notification.group_key, "receiver": receiver}}


def is_channel_id(channel: str | None) -> bool:
    """Whether `channel` is a conversation ID (what conversations.history takes), not a name."""
    return bool(channel) and bool(_CHANNEL_ID.match(channel or ""))


@dataclass(frozen=True)
class Lookup:
    """What a search for a possibly posted message found: its ts, or why no copy can be ruled out."""

    ts: str | None = None  # the message carrying the key
    unsure: str | None = None  # not found, and not ruled out: why (the mark's and the log's reason)
    missing_scope: str | None = None  # Slack's `needed` scopes, when it refused for want of them
    calls: int = 0  # API calls the search made
    wanted: tuple[str, ...] = HISTORY_SCOPES  # the scopes the refused call needs (history, or the channel list)

    @property
    def found(self) -> bool:
        """The message is there: do not post it again."""
        return self.ts is not None


async def find_posted(client: AsyncWebClient, channel: str | None, key: str, since: datetime,
                      thread_ts: str | None = None) -> Lookup:
    """Search the channel's messages since `since` (or the replies of `thread_ts`) for the one carrying `key`.

    At most MAX_PAGES pages are read; a SlackApiError other than missing_scope propagates (the outbox
    retries later rather than post a copy it could not rule out)."""
    if not is_channel_id(channel):
        return Lookup(unsure=f"channel {channel!r} is a name, and Slack's history wants its ID (C…/G…)")
    assert channel is not None
    oldest = f"{(since - CLOCK_MARGIN).timestamp():.6f}"
    cursor: str | None = None
    for page in range(1, MAX_PAGES + 1):
        args: dict[str, Any] = {"channel": channel, "oldest": oldest, "limit": PAGE_SIZE, "include_all_metadata": True}
        if cursor:
            args["cursor"] = cursor
        try:
            if thread_ts is None:
                response = await client.conversations_history(**args)
            else:
                response = await client.conversations_replies(ts=thread_ts, **args)
        except SlackApiError as exc:
            if exc.response.get("error") != "missing_scope":
                raise
            needed = str(exc.response.get("needed") or ", ".join(HISTORY_SCOPES))
            return Lookup(unsure=f"the app lacks the {needed} scope", missing_scope=needed, calls=page)
        for message in response.get("messages") or []:
            if carries(message, key):
                return Lookup(ts=message["ts"], calls=page)
        cursor = (response.get("response_metadata") or {}).get("next_cursor")
        if not response.get("has_more") or not cursor:
            return Lookup(calls=page)
    return Lookup(unsure=f"more than {MAX_PAGES * PAGE_SIZE} messages since {since.isoformat()} to search",
                  calls=MAX_PAGES)


async def channel_id_of(client: AsyncWebClient, channel: str) -> str | Lookup:
    """The ID of the channel configured as `#name`, from conversations.list (public channels, and the
    private ones the app is in), or the Lookup that says why no copy can be ruled out; at most
    MAX_LIST_PAGES pages are read."""
    wanted = channel.removeprefix("#")
    cursor: str | None = None
    for page in range(1, MAX_LIST_PAGES + 1):
        args: dict[str, Any] = {"types": "public_channel,private_channel", "exclude_archived": True,
                                "limit": LIST_PAGE_SIZE}
        if cursor:
            args["cursor"] = cursor
        try:
            response = await client.conversations_list(**args)
        except SlackApiError as exc:
            if exc.response.get("error") != "missing_scope":
                raise
            needed = str(exc.response.get("needed") or ", ".join(LIST_SCOPES))
            return Lookup(unsure=f"channel {channel!r} is a name, its ID cannot be listed: the app lacks the "
                                 f"{needed} scope", missing_scope=needed, calls=page, wanted=LIST_SCOPES)
        for found in response.get("channels") or []:
            if found.get("name") == wanted and is_channel_id(found.get("id")):
                return str(found["id"])
        cursor = (response.get("response_metadata") or {}).get("next_cursor")
        if not response.get("has_more") and not cursor:
            break
    return Lookup(unsure=f"no channel named {channel!r} among those the app can list", calls=page, wanted=LIST_SCOPES)


def carries(message: dict[str, Any], key: str) -> bool:
    """Whether a history message is rocketwatch's notification under this idempotency key."""
    metadata = message.get("metadata") or {}
    payload = metadata.get("event_payload") or {}
    return metadata.get("event_type") == EVENT_TYPE and payload.get("idempotency_key") == key


def repeat_note(why: str) -> str:
    """The visible mark of a message posted again without ruling out an earlier copy."""
    return (f":repeat: *Possible repeat*: a daemon stopped while sending this, and rocketwatch could not check "
            f"the channel for it ({why}); the same message may be above.")


def marked_message(message: dict[str, Any], why: str) -> dict[str, Any]:
    """A chat.postMessage payload with the possible-repeat mark in its text and its first context block
    (a context block takes ten elements: no block is added, so the page stays within Slack's 50)."""
    marked = {**message, "text": f"{message.get('text', '')} (possible repeat)"}
    blocks = [dict(b) for b in message.get("blocks") or []]
    element = {"type": "mrkdwn", "text": repeat_note(why)}
    context = next((b for b in blocks if b.get("type") == "context" and len(b.get("elements", [])) < 10), None)
    if context is not None:
        context["elements"] = [*context["elements"], element]
    else:
        blocks.insert(1 if blocks else 0, {"type": "context", "elements": [element]})
    marked["blocks"] = blocks
    return marked


def marked_reply(text: str, why: str) -> str:
    """A thread reply's text with the possible-repeat mark."""
    return f"{text}\n{repeat_note(why)}"
