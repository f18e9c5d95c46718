"""aiohttp app serving /metrics, /healthz, /readyz, /api/alerts and POST /-/reload in the daemon's loop."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from daemon.common.sdnotify import sd_notify
from daemon.http.incident_page import add_routes as add_incident_routes
from daemon.http.incidents import alert_json, incident_json, placed, shown
from daemon.http.status_page import add_routes as add_status_routes
from daemon.http.view import VIEW_KEY, DaemonView, view_of
from daemon.http.write_guard import WriteRefused, check_write

CONTENT_TYPE_METRICS = "text/plain; version=0.0.4; charset=utf-8"


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition of the daemon's own registry."""
    body = await view_of(request).metrics_text()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_METRICS})


async def healthz(request: web.Request) -> web.Response:
    """Liveness: the event loop answers."""
    return web.json_response({"status": "ok"})


def readiness(last_cycle: datetime | None, evaluate_interval: timedelta, now: datetime) -> tuple[bool, str]:
    """Ready when an evaluation cycle completed within three evaluate intervals; else why not."""
    if last_cycle is None:
        return False, "no evaluation cycle has completed yet"
    age = now - last_cycle
    limit = 3 * evaluate_interval
    if age > limit:
        return False, f"last completed cycle {age.total_seconds():.0f}s ago (limit {limit.total_seconds():.0f}s)"
    return True, f"last completed cycle {age.total_seconds():.0f}s ago"


async def readyz(request: web.Request) -> web.Response:
    """200 while cycles complete on time, 503 with the reason otherwise."""
    view = view_of(request)
    ok, reason = readiness(view.last_cycle_at, view.evaluate_interval, datetime.now(UTC))
    return web.json_response({"ready": ok, "reason": reason}, status=200 if ok else 503)


async def api_alerts(request: web.Request) -> web.Response:
    """The tracker's active alerts (pending and firing), and the incidents they form with their alerts nested.

    `alerts` keeps its shape (each entry gains `fingerprint` and `incident`, the id of the open incident it
    is in, or null); `incidents` lists the open incidents and those resolved within the last hour."""
    view = view_of(request)
    alerts = view.active_alerts()
    incidents = shown(view.incidents(), datetime.now(UTC))
    in_incident = placed(incidents)
    active = {a.fingerprint: a for a in alerts}
    return web.json_response({
        "alerts": [alert_json(a) | {"incident": in_incident[a.fingerprint].id if a.fingerprint in in_incident else None}
                   for a in alerts],
        "incidents": [incident_json(i, active) for i in incidents],
    })


async def api_silences(request: web.Request) -> web.Response:
    """Silences in force or pending (add `?all=1` for expired ones too)."""
    store = view_of(request).silences
    now = datetime.now(UTC)
    silences = store.all() if store is not None else []
    show_all = request.query.get("all") in ("1", "true")
    return web.json_response(
        {"silences": [s.to_json(now) for s in silences if show_all or s.state(now) != "expired"]}
    )


async def reload(request: web.Request) -> web.Response:
    """Same as SIGHUP: swap the whole config only if all of it is valid; answer with what changed or the errors."""
    view = view_of(request)
    http = view.http
    try:
        # A reload is a write: same loopback-or-token rule and cross-site refusal as the silence API.
        check_write(request, http.token, http.listen.rpartition(":")[0], None)
    except WriteRefused as refused:
        return web.json_response({"reloaded": False, "message": refused.reason}, status=refused.status)
    outcome = view.reload()
    body: dict[str, Any] = {"reloaded": outcome.ok, "message": outcome.message}
    if outcome.changes is not None:
        body["changes"] = outcome.changes  # the same changes as the message, for scripts
    return web.json_response(body, status=200 if outcome.ok else 400)


async def block_loop(request: web.Request) -> web.Response:
    """Test hook (only with ROCKETWATCH_TEST_HOOKS=1): block the event loop, as a runaway call would."""
    seconds = min(float(request.query.get("seconds", "1")), 60.0)
    # Marks on the notify socket around the block: the test checks no WATCHDOG=1 falls between them.
    sd_notify("STATUS=test hook: event loop blocked")
    time.sleep(seconds)  # deliberately blocking: the watchdog test needs a stuck loop
    sd_notify("STATUS=test hook: event loop running again")
    return web.json_response({"blocked_s": seconds})


def build_app(view: DaemonView) -> web.Application:
    """The daemon's web application, reading the daemon through `view`."""
    app = web.Application()
    app[VIEW_KEY] = view
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/api/alerts", api_alerts)
    app.router.add_get("/api/silences", api_silences)
    app.router.add_post("/-/reload", reload)
    add_status_routes(app)
    add_incident_routes(app)
    if os.environ.get("ROCKETWATCH_TEST_HOOKS") == "1":
        app.router.add_post("/-/test/block-loop", block_loop)
    return app


async def start_http(view: DaemonView, listen: str) -> web.AppRunner:
    """Serve the app on `listen` (host:port); the caller cleans the runner up on shutdown."""
    host, _, port = listen.rpartition(":")
    runner = web.AppRunner(build_app(view), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, host or "127.0.0.1", int(port)).start()
    return runner
