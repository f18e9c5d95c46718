"""The status page's silences section: those in force or pending (and the last few expired), each with
an expire button, and the form that creates one."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from daemon.alerts.silences import Silence
from daemon.http.relative_time import ago


def _silence_row(silence: Silence, now: datetime, token_field: str) -> str:
    status = silence.state(now)
    expire = ""
    if status != "expired":
        expire = (
            f'<form method="post" action="/silences/{escape(silence.id)}/expire">{token_field}'
            f'<button type="submit">expire</button></form>'
        )
    return (
        f'<tr data-silence="{escape(silence.id)}"><td>{escape(silence.id)}</td><td>{escape(status)}</td>'
        f"<td>{''.join(f'<span class=label>{escape(str(m))}</span>' for m in silence.matchers)}</td>"
        f'<td title="{escape(silence.ends_at.isoformat())}">{ago(now, silence.ends_at)}</td>'
        f"<td>{escape(silence.created_by)}</td><td>{escape(silence.comment)}</td><td>{expire}</td></tr>"
    )


def _token_field(required: bool) -> str:
    # The operator types the token; the page never carries it.
    if not required:
        return '<input type="hidden" name="token" value="">'
    return '<input type="password" name="token" placeholder="http.token" autocomplete="off" required>'


def silences_section(silences: Sequence[Silence], now: datetime, prefill: Sequence[str], token_required: bool) -> str:
    """Silences in force or pending (and the last few expired), with an expire button and a create form;
    `prefill` fills the form's matchers (a silence link followed)."""
    current = [s for s in silences if s.state(now) != "expired"]
    expired = [s for s in silences if s.state(now) == "expired"][:5]
    token_field = _token_field(token_required)
    rows = "".join(_silence_row(s, now, token_field) for s in current + expired)
    table = (
        "<table><tr><th>id</th><th>state</th><th>matchers</th><th>ends</th><th>author</th><th>comment</th>"
        f"<th></th></tr>{rows}</table>" if rows else '<p class="muted">No silences.</p>'
    )
    form = (
        '<form class="silence" id="silence-form" method="post" action="/silences">'
        "<label>matchers, one per line (<code>group=\"orders\"</code>, <code>cluster=~\"prod.*\"</code>)"
        f'<br><textarea name="matchers" rows="3" required>{escape(chr(10).join(prefill))}</textarea></label>'
        '<label>duration <br><input name="duration" value="1h" required></label>'
        '<label>author <br><input name="author" required></label>'
        '<label>comment <br><input name="comment" required></label>'
        f"{_token_field(token_required)}"
        '<button type="submit">create silence</button></form>'
    )
    return f'<h2 id="silences">Silences</h2>{table}<h3>New silence</h3>{form}'
