"""The status page (GET /) and the silence writes: form posts for the page, JSON for scripts."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from daemon.alerts.silences import Silence
from daemon.http.status_render import PageState, render_error, render_page
from daemon.http.view import DaemonView, view_of
from daemon.http.write_guard import WriteRefused, check_write
from rules.durations import parse_duration

log = logging.getLogger("rocketwatch.http")

MAX_SILENCE = timedelta(days=365)


def page_state(view: DaemonView, now: datetime, prefill: Sequence[str] = ()) -> PageState:
    """Read what the page shows from the daemon, once."""
    alerts = view.active_alerts()
    silences = view.silences
    return PageState(
        now=now,
        alerts=alerts,
        muted=view.muted(alerts, now),
        group_by=view.group_by,
        silences=silences.all() if silences is not None else [],
        cycles=view.cycles,
        health=view.collector_health,
        last_cycle_at=view.last_cycle_at,
        token_required=view.http.token is not None,
        prefill=prefill,
        series=view.value_series([a.fingerprint for a in alerts]),
        group_notes=view.group_notes(),
        rules=view.rules_by_alert(),
        incidents=view.incidents(),
        judged=view.judged_on,
        ha=view.ha(),
    )


async def status_page(request: web.Request) -> web.Response:
    """GET /: alerts, silences, cycles and collector health in one server-rendered page."""
    state = page_state(view_of(request), datetime.now(UTC), request.query.getall("m", []))
    return web.Response(text=render_page(state), content_type="text/html", headers=_NO_FRAMES)


# The page holds forms: never let another site frame it (clickjacking).
_NO_FRAMES = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'"}


def _guard(request: web.Request, form_token: str | None) -> None:
    http = view_of(request).http
    check_write(request, http.token, http.listen.rpartition(":")[0], form_token)


def _parse_duration(text: Any) -> timedelta:
    if not isinstance(text, str):
        raise ValueError("duration must be a string such as 1h or 30m")
    stripped = text.strip()
    if stripped.startswith("-"):
        raise ValueError(f"duration {stripped!r} is negative: a silence lasts a positive time, e.g. 1h")
    duration = parse_duration(stripped)
    if duration <= timedelta(0):
        raise ValueError(f"duration {stripped!r} is zero: a silence lasts a positive time, e.g. 1h")
    if duration > MAX_SILENCE:
        raise ValueError(f"duration {stripped!r} is longer than a year: expire and renew instead")
    return duration


def _create(view: DaemonView, matchers: Any, duration: Any, author: Any, comment: Any, via: str) -> Silence:
    """Validate and store one silence; ValueError says what is wrong and nothing is stored."""
    store = view.silences
    if store is None:
        raise ValueError("the daemon's state is not open yet")
    if not isinstance(matchers, list) or not all(isinstance(m, str) for m in matchers):
        raise ValueError('matchers must be a list of strings such as ["group=\\"orders\\""]')
    if not isinstance(author, str) or not isinstance(comment, str):
        raise ValueError("author and comment must be strings")
    length = _parse_duration(duration)
    now = datetime.now(UTC)
    silence = store.add([m.strip() for m in matchers if m.strip()], now, now + length,
                        author.strip(), comment.strip(), now)
    log.info("silence %s created via %s by %s for %s: %s (%s)", silence.id, via, silence.created_by,
             duration, ", ".join(str(m) for m in silence.matchers), silence.comment)
    return silence


def _expire(view: DaemonView, silence_id: str, via: str) -> Silence:
    store = view.silences
    if store is None:
        raise KeyError("the daemon's state is not open yet")
    silence = store.expire(silence_id, datetime.now(UTC))
    log.info("silence %s expired via %s", silence_id, via)
    return silence


def _html_error(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=render_error(status, message), content_type="text/html")


async def form_create(request: web.Request) -> web.Response:
    """POST /silences from the page's form; 303 back to the page, or a 4xx page saying why not."""
    form = await request.post()
    try:
        _guard(request, str(form.get("token", "")))
        matchers = str(form.get("matchers", "")).splitlines()
        _create(view_of(request), matchers, str(form.get("duration", "")), str(form.get("author", "")),
                str(form.get("comment", "")), "status page")
    except WriteRefused as refused:
        log.warning("silence form refused from %s: %s", request.remote, refused.reason)
        return _html_error(refused.status, refused.reason)
    except ValueError as exc:
        return _html_error(400, str(exc))
    raise web.HTTPSeeOther("/#silences")


async def form_expire(request: web.Request) -> web.Response:
    """POST /silences/<id>/expire from the page's expire button."""
    form = await request.post()
    try:
        _guard(request, str(form.get("token", "")))
        _expire(view_of(request), request.match_info["silence_id"], "status page")
    except WriteRefused as refused:
        log.warning("silence expiry refused from %s: %s", request.remote, refused.reason)
        return _html_error(refused.status, refused.reason)
    except KeyError as exc:
        return _html_error(404, str(exc.args[0]))
    raise web.HTTPSeeOther("/#silences")


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def api_create(request: web.Request) -> web.Response:
    """POST /api/silences {matchers, duration, created_by, comment} -> 201 with the silence."""
    try:
        _guard(request, None)
    except WriteRefused as refused:
        log.warning("silence API write refused from %s: %s", request.remote, refused.reason)
        return _json_error(refused.status, refused.reason)
    if request.content_type != "application/json":
        # Browsers cannot send JSON cross-site without a CORS preflight, which we never answer.
        return _json_error(415, "send the silence as application/json")
    try:
        body = await request.json()
    except json.JSONDecodeError as exc:
        return _json_error(400, f"request body is not JSON: {exc}")
    if not isinstance(body, dict):
        return _json_error(400, "request body must be a JSON object")
    try:
        silence = _create(view_of(request), body.get("matchers"), body.get("duration"),
                          body.get("created_by", body.get("author")), body.get("comment"), "API")
    except ValueError as exc:
        return _json_error(400, str(exc))
    return web.json_response(silence.to_json(datetime.now(UTC)), status=201)


async def api_expire(request: web.Request) -> web.Response:
    """DELETE /api/silences/<id> -> 200 with the expired silence, 404 if unknown."""
    try:
        _guard(request, None)
        silence = _expire(view_of(request), request.match_info["silence_id"], "API")
    except WriteRefused as refused:
        log.warning("silence API write refused from %s: %s", request.remote, refused.reason)
        return _json_error(refused.status, refused.reason)
    except KeyError as exc:
        return _json_error(404, str(exc.args[0]))
    return web.json_response(silence.to_json(datetime.now(UTC)))


def add_routes(app: web.Application) -> None:
    """Mount the page and the silence writes on the daemon's app."""
    app.router.add_get("/", status_page)
    app.router.add_post("/silences", form_create)
    app.router.add_post("/silences/{silence_id}/expire", form_expire)
    app.router.add_post("/api/silences", api_create)
    app.router.add_delete("/api/silences/{silence_id}", api_expire)
