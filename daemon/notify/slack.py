"""Slack through the Web API with a bot token: one message per alert group, changes in its thread."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from daemon.alerts.figures import RuleLookup
from daemon.common.charts.png import png_chart
from daemon.common.charts.sparkline import Point
from daemon.notify import render, render_incident
from daemon.notify.errors import DeliveryError
from daemon.notify.model import AlertSnapshot, Notification, ThreadRef
from daemon.notify.slack_lookup import (
    Lookup,
    channel_id_of,
    find_posted,
    is_channel_id,
    marked_message,
    marked_reply,
    message_metadata,
)

log = logging.getLogger(__name__)

# chat.update answers these when the group's original message is gone (deleted, too old to edit):
# the group then starts a new message rather than failing forever in the outbox.
_LOST_MESSAGE = {"message_not_found", "cant_update_message", "edit_window_closed"}
# Errors no retry can fix: the token, the app's scopes or the channel need an operator.
_PERMANENT = {
    "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "no_permission",
    "missing_scope", "channel_not_found", "not_in_channel", "is_archived", "invalid_arguments",
    "invalid_blocks", "msg_too_long", "team_access_not_granted", "ekm_access_denied",
}


class SlackNotifier:
    """Posts a group's first notification, then updates that message and replies in its thread."""

    def __init__(
        self,
        name: str,
        token: str,
        channel: str,
        base_url: str | None = None,
        max_alerts: int = render.SLACK_MAX_ALERTS,
        timeout: float = 10.0,
        rate_limit_retries: int = 3,
        actions: bool = False,
        group_notes: Callable[[str], list[str]] | None = None,
        value_series: Callable[[str], Sequence[Point]] | None = None,
        rules: RuleLookup | None = None,
        external_url: str = "",
        detail: str = "full",
        reply_broadcast: bool = True,
        mention: str = "",
    ) -> None:
        self.name = name
        self.external_url = external_url  # the status page's address: the incident link
        self.detail = detail
        # "Cause found" and "Resolved" reach the channel, not only those who follow the thread.
        self.reply_broadcast = reply_broadcast
        self.mention = mention  # called on a critical incident's first page
        self.channel = channel
        # The channel's ID, which a lookup of Slack's history needs: configured, or learned from Slack's answers.
        self.channel_id = channel if is_channel_id(channel) else None
        self._warned: set[str] = set()  # why a lookup could not rule out a copy, logged once each
        self.max_alerts = max_alerts
        # Buttons only when an app-level token lets a Socket Mode listener receive the clicks.
        self.actions = actions
        self.group_notes = group_notes
        # With a value history, a new group's message gets a chart of how its worst alert got there.
        self.value_series = value_series
        # Alert name -> rule, so figures read as the rule defines them (no "threshold -1").
        self.rules = rules
        # Retries live in slack-sdk: 429 waits for Retry-After, a dropped connection is retried.
        # Anything else fails the send and the outbox retries later with its own backoff.
        handlers = [
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
            AsyncRateLimitErrorRetryHandler(max_retry_count=rate_limit_retries),
        ]
        kwargs = {"base_url": base_url} if base_url else {}
        # slack-sdk annotates timeout as int but hands it to aiohttp.ClientTimeout, which takes seconds as float.
        self.client = AsyncWebClient(token=token, timeout=timeout, retry_handlers=handlers, **kwargs)

    def __repr__(self) -> str:
        return f"SlackNotifier(name={self.name!r}, channel={self.channel!r})"  # never the token

    async def send(self, notification: Notification, thread: ThreadRef | None) -> ThreadRef | None:
        """New group: post a message. Known group: update the message and reply in its thread."""
        try:
            return await self._send(notification, thread)
        except SlackApiError as exc:
            raise classify_slack_error(exc) from None

    async def _send(self, notification: Notification, thread: ThreadRef | None) -> ThreadRef | None:
        notes = self.group_notes(notification.group_key) if self.group_notes is not None else []
        message = render.slack_message(notification, self.max_alerts, actions=self.actions, notes=notes,
                                       rules=self.rules, external_url=self.external_url, detail=self.detail,
                                       mention=self.mention)
        # The idempotency key travels with the message, so a send retried after a crash between "posted" and
        # "recorded" finds it in the channel's history (slack_lookup.py) instead of posting it again.
        metadata = message_metadata(notification, self.name)
        if thread is not None and is_channel_id(thread.channel):
            self.channel_id = self.channel_id or thread.channel
        if thread is not None:
            try:
                await self.client.chat_update(channel=thread.channel or self.channel, ts=thread.id, **message)
            except SlackApiError as exc:
                if exc.response.get("error") not in _LOST_MESSAGE:
                    raise
                log.warning("slack %s: original message of %s is gone (%s); posting a new one",
                            self.name, notification.group_key, exc.response.get("error"))
                thread = None
            else:
                text = render.slack_thread_reply(notification, self.rules, self.external_url)
                if notification.unconfirmed_since is not None:
                    lookup = await self._look_up(notification, thread.channel or self.channel, thread.id)
                    if lookup.found:
                        return thread
                    if lookup.unsure:
                        text = marked_reply(text, lookup.unsure)
                await self.client.chat_postMessage(
                    channel=thread.channel or self.channel, thread_ts=thread.id, text=text, metadata=metadata,
                    reply_broadcast=self.reply_broadcast and broadcast_worthy(notification),
                )
                return thread
        if notification.unconfirmed_since is not None:
            lookup = await self._look_up(notification, self.channel_id or self.channel, None)
            if lookup.found:
                assert lookup.ts is not None and self.channel_id is not None
                # The copy is the group's message: brought up to date (this send may tell more), not posted again.
                await self.client.chat_update(channel=self.channel_id, ts=lookup.ts, **message)
                return ThreadRef(id=lookup.ts, channel=self.channel_id)
            if lookup.unsure:
                message = marked_message(message, lookup.unsure)
        response = await self.client.chat_postMessage(channel=self.channel, metadata=metadata, **message)
        if is_channel_id(response.get("channel")):
            self.channel_id = self.channel_id or response["channel"]
        ref = ThreadRef(id=response["ts"], channel=response.get("channel") or self.channel)
        if notification.status == "firing" and self.value_series is not None:
            await self._upload_chart(notification, ref)
        return ref

    async def _look_up(self, notification: Notification, channel: str | None, thread_ts: str | None) -> Lookup:
        # Only a send recorded and never confirmed comes here: its copy may be in the channel already.
        assert notification.unconfirmed_since is not None
        lookup: Lookup | None = None
        if channel is not None and not is_channel_id(channel):
            # Slack's history takes only IDs: a `#name` is resolved once, then the ID is kept.
            resolved = await channel_id_of(self.client, channel)
            if isinstance(resolved, Lookup):
                lookup = resolved
            else:
                self.channel_id = channel = resolved
        if lookup is None:
            lookup = await find_posted(self.client, channel, notification.idempotency_key,
                                       notification.unconfirmed_since, thread_ts)
        where = f"the thread {thread_ts} of channel {channel}" if thread_ts else f"channel {channel}"
        if lookup.found:
            log.info("slack %s: %s of %s is already in %s (ts %s, found by its metadata in %d call(s)): not "
                     "posted again", self.name, notification.idempotency_key, notification.group_key, where,
                     lookup.ts, lookup.calls)
        elif lookup.unsure:
            kind = "scope" if lookup.missing_scope else lookup.unsure
            advice = (f"grant the app the {' / '.join(lookup.wanted)} scopes and reinstall it (README, upgrade "
                      "notes)" if lookup.missing_scope else "configure the channel by its ID" if
                      self.channel_id is None else "")
            (log.warning if kind not in self._warned else log.info)(
                "slack %s: cannot tell whether %s of %s is already in %s: %s; posting it again, marked as a "
                "possible repeat%s", self.name, notification.idempotency_key, notification.group_key, where,
                lookup.unsure, f"; {advice}" if advice else "")
            self._warned.add(kind)
        return lookup

    async def _upload_chart(self, notification: Notification, ref: ThreadRef) -> None:
        # The message is posted: a chart that fails to upload is logged, never a reason to post again.
        if self.value_series is None:
            return
        worst = max(notification.firing, key=_over_threshold, default=None)
        # An incident's page leads with its cause: its chart too, when the cause has a history to draw.
        lead = notification.alert(notification.incident.root) if notification.incident is not None else None
        for candidate in (lead, worst):
            if candidate is not None and candidate.state == "firing":
                points = self.value_series(candidate.fingerprint)
                if len(points) >= 3:
                    worst = candidate
                    break
        else:
            return
        minutes = max(1, round((points[-1][0] - points[0][0]).total_seconds() / 60))
        where = ", ".join(f"{k}={v}" for k, v in render.where(worst))
        title = f"{worst.rule}: value over the last {minutes} min ({where})"
        colour = render.COLOURS.get(worst.severity, render.COLOURS[None])
        try:
            # The chart draws the threshold the text states: none where the rule's condition is its `where`.
            threshold = render.alert_figures(worst, self.rules).threshold
            chart = png_chart(points, threshold, title=f"{worst.rule} {where}", colour=colour)
            await self.client.files_upload_v2(
                channel=ref.channel, thread_ts=ref.id, content=chart, filename=f"{worst.rule}.png", title=title,
            )
        except Exception as exc:  # noqa: BLE001 (any failure: the chart is a nicety, the alert went out)
            log.warning("slack %s: chart for %s not uploaded: %s", self.name, notification.group_key, exc)


def broadcast_worthy(n: Notification) -> bool:
    """True for the thread replies a channel should see: the cause found, the incident resolved."""
    p = render_incident.page(n)
    if n.status == "resolved":
        return p is None or p.incident.resolved_at is not None
    return p is not None and p.cause_found is not None


def classify_slack_error(exc: SlackApiError) -> DeliveryError:
    """Slack's error code decides: a bad token or channel is permanent, rate limits and outages are not."""
    response = exc.response
    code = str(response.get("error") or "")
    status = getattr(response, "status_code", 200)
    retry_after = None
    if code == "ratelimited" or status == 429:
        header = (getattr(response, "headers", None) or {}).get("Retry-After")
        retry_after = float(header) if header and str(header).isdigit() else None
    permanent = code in _PERMANENT or (400 <= status < 500 and status != 429)
    return DeliveryError(f"slack answered {code or 'HTTP ' + str(status)} (HTTP {status})", not permanent,
                         retry_after)


def _over_threshold(alert: AlertSnapshot) -> float:
    if alert.value is None:
        return float("-inf")
    if not alert.threshold:
        return alert.value
    return alert.value / alert.threshold
