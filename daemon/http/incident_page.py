"""GET /incidents/{id}: one incident on its own page, where every notification links (issue 44).

Any incident the incident book keeps is shown, open or resolved (a day after it resolves,
daemon/alerts/incidents.py KEEP_RESOLVED), not only those the status page lists; once the book has
let it go, the page says so instead of a bare 404.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape

from aiohttp import web

from daemon.alerts.incidents import KEEP_RESOLVED
from daemon.http.status_page import page_state
from daemon.http.status_render import STYLE, incident_block
from daemon.http.view import view_of

_NO_FRAMES = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'"}


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        '<link rel="icon" href="data:,"><meta name="viewport" content="width=device-width">'
        f'<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>{body}'
        '<p><a href="/">the status page</a> · <a href="/#silence-form">silences</a></p></body></html>'
    )


async def incident_page(request: web.Request) -> web.Response:
    """The incident: its alerts in reading order, their figures, diagnoses and next steps, a silence link."""
    view = view_of(request)
    incident_id = request.match_info["incident_id"]
    now = datetime.now(UTC)
    found = next((i for i in view.incidents() if i.id == incident_id), None)
    if found is None:
        days = KEEP_RESOLVED.days
        gone = (f'<p class="muted">No incident <code>{escape(incident_id)}</code> is kept. rocketwatch keeps an '
                f"incident {days} day{'' if days == 1 else 's'} after it resolves; this one resolved earlier, or "
                "never opened on this daemon.</p>")
        return web.Response(status=404, text=_page("rocketwatch: incident gone", gone), content_type="text/html",
                            headers=_NO_FRAMES)
    state = page_state(view, now)
    active = {a.fingerprint: a for a in state.alerts}
    body = (f'<p class="muted">as of {escape(now.strftime("%Y-%m-%d %H:%M:%S UTC"))}</p>'
            f"{incident_block(state, found, active)}")
    return web.Response(text=_page(f"incident {incident_id}", body), content_type="text/html", headers=_NO_FRAMES)


def add_routes(app: web.Application) -> None:
    """Mount the incident page."""
    app.router.add_get("/incidents/{incident_id:.+}", incident_page)
