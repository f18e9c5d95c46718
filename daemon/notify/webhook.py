"""A generic webhook: Alertmanager's JSON (version 4) POSTed to a URL, for anything that reads it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp

from daemon.alerts.figures import RuleLookup
from daemon.notify import render, render_common, render_incident, render_text
from daemon.notify.errors import DeliveryError
from daemon.notify.model import AlertSnapshot, Notification, ThreadRef

log = logging.getLogger(__name__)

# A Retry-After longer than this is handed back to the outbox instead of holding the send open.
MAX_INLINE_WAIT_S = 30.0


def alertmanager_payload(receiver: str, n: Notification, external_url: str = "",
                         rules: RuleLookup | None = None) -> dict[str, Any]:
    """The body Alertmanager's webhook receiver sends, so existing consumers parse it unchanged."""
    lead = render_common.lead(n, rules, external_url)
    # generatorURL: where the alert can be looked at, the incident's page (else the status page).
    source = lead.incident_url or external_url.rstrip("/")
    alerts = [_alert(a, source) for a in n.alerts]
    common_labels = _common([a["labels"] for a in alerts])
    common_annotations = _common([a["annotations"] for a in alerts])
    if len(n.alerts) > 1 or render_incident.page(n) is not None:
        # What a pager shows of the group: the page's two lead lines (what, where, how long, how bad,
        # what first), where Alertmanager would put the alerts' one common summary.
        common_annotations["summary"] = "\n".join(render_text.summary_lines(lead))
    return {
        "version": "4",
        "groupKey": n.group_key,
        # The same on every daemon for the same send (derived from the shared log): a receiver that sees
        # a key twice got one notification twice (a retry after a crash or a failover).
        "idempotencyKey": n.idempotency_key,
        "truncatedAlerts": 0,
        "status": n.status,
        "receiver": receiver,
        "groupLabels": dict(n.group_labels),
        "commonLabels": common_labels,
        "commonAnnotations": common_annotations,
        "externalURL": external_url,
        "alerts": alerts,
        "rocketwatch": _extension(n) | {"lead": render_text.lead_lines(lead), "links": dict(lead.links())},
    }


def _extension(n: Notification) -> dict[str, Any]:
    """rocketwatch's own object beside Alertmanager's fields: the subject, the changes, and the incident."""
    extension: dict[str, Any] = {"subject": render.subject(n), "is_update": n.is_update,
                                 "changes": [c.model_dump(mode="json") for c in n.changes]}
    p = render_incident.page(n)
    if p is None:
        return extension
    incident = p.incident
    extension["incident"] = {
        "id": incident.id,
        "opened_at": incident.opened_at.isoformat(),
        "resolved_at": incident.resolved_at.isoformat() if incident.resolved_at else None,
        # The root: the alert that explains the others once cause_known, the earliest until then.
        "root": {"fingerprint": incident.root, "rule": p.lead.rule},
        "cause_known": incident.cause_known,
        "ended_by": incident.ended_by,
        "alerts": [
            {"fingerprint": m.fingerprint, "rule": m.rule, "cause": m.cause, "why": m.why or None,
             "joined_at": m.joined_at.isoformat(), "resolved_at": m.resolved_at.isoformat() if m.resolved_at else None}
            for m in incident.members
        ],
        "cause_found": p.cause_found_why,
        "ended": p.ended,
    }
    return extension


def _alert(a: AlertSnapshot, generator_url: str) -> dict[str, Any]:
    labels = {**a.labels, "alertname": a.rule, **({"severity": a.severity} if a.severity else {})}
    annotations = dict(a.annotations)
    if a.value is not None:
        annotations.setdefault("value", f"{a.value:g}")
    if a.threshold is not None:
        annotations.setdefault("threshold", f"{a.threshold:g}")
    return {
        "status": a.state,
        "labels": labels,
        "annotations": annotations,
        "startsAt": (a.fired_at or a.active_at).isoformat(),
        "endsAt": a.resolved_at.isoformat() if a.resolved_at else "0001-01-01T00:00:00Z",
        "generatorURL": generator_url,
        "fingerprint": a.fingerprint,
    }


def _common(dicts: list[dict[str, str]]) -> dict[str, str]:
    if not dicts:
        return {}
    first = dicts[0]
    return {k: v for k, v in first.items() if all(d.get(k) == v for d in dicts[1:])}


class WebhookNotifier:
    """POSTs each notification; 2xx is delivered, 429/5xx/connection errors retryable, other 4xx permanent."""

    def __init__(
        self, name: str, url: str, bearer_token: str | None = None, timeout: float = 10.0, external_url: str = "",
        rules: RuleLookup | None = None,
    ) -> None:
        self.rules = rules  # alert name -> rule, so the lead's figure reads as the rule defines it
        self.name = name
        self.url = url
        self._bearer = bearer_token
        self.timeout = timeout
        self.external_url = external_url

    def __repr__(self) -> str:
        return f"WebhookNotifier(name={self.name!r}, url={self.url!r})"  # never the token

    async def send(self, notification: Notification, thread: ThreadRef | None) -> ThreadRef | None:
        """POST the Alertmanager-shaped JSON; waits out one short Retry-After itself."""
        body = alertmanager_payload(self.name, notification, self.external_url, self.rules)
        headers = {"User-Agent": "rocketwatch", "Idempotency-Key": notification.idempotency_key}
        if self._bearer:
            headers["Authorization"] = f"Bearer {self._bearer}"
        for attempt in (1, 2):
            status, retry_after, text = await self._post(body, headers)
            if 200 <= status < 300:
                return thread
            if status == 429 and attempt == 1 and retry_after is not None and retry_after <= MAX_INLINE_WAIT_S:
                log.info("webhook %s: 429, waiting %.0fs as Retry-After asks", self.name, retry_after)
                await asyncio.sleep(retry_after)
                continue
            retryable = status == 429 or status >= 500 or status in (408, 0)
            raise DeliveryError(f"webhook {self.url} answered HTTP {status}: {text[:200]}", retryable, retry_after)
        raise AssertionError("unreachable")

    async def _post(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, float | None, str]:
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session,
                session.post(self.url, json=body, headers=headers) as response,
            ):
                text = await response.text()
                return response.status, _seconds(response.headers.get("Retry-After")), text
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise DeliveryError(f"webhook {self.url}: {type(exc).__name__}: {exc}", retryable=True) from None


def _seconds(value: str | None) -> float | None:
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None  # an HTTP date: let the outbox's backoff decide
