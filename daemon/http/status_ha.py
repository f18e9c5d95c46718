"""The status page's HA section: who holds the dispatch lease, at which epoch and since when, whether this
daemon reaches the coordinator, and how many notifications it holds. Shown only with an `ha:` section: a
single node's private lease has nothing to tell."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Protocol

from daemon.coordination.service import CoordinationService, LeaseStatus


class _Outbox(Protocol):
    coordination: CoordinationService

    def held(self) -> int: ...


@dataclass(frozen=True)
class HaView:
    """The lease as this daemon sees it, and what it holds unsent."""

    lease: LeaseStatus
    held: int


def ha_view(outbox: _Outbox | None) -> HaView | None:
    """What the HA section shows; None for a single node (its lease is its own state file's)."""
    if outbox is None or outbox.coordination.keeper.private:
        return None
    return HaView(outbox.coordination.status(), outbox.held())


def _when(now: datetime, then: datetime | None) -> str:
    if then is None:
        return '<span class="muted">unknown</span>'
    seconds = int((now - then).total_seconds())
    span = f"{abs(seconds)}s" if abs(seconds) < 120 else f"{abs(seconds) // 60} min"
    ago = f"{span} ago" if seconds >= 0 else f"in {span}"
    return f'<span title="{escape(then.isoformat())}">{escape(then.strftime("%H:%M:%S"))} ({ago})</span>'


def _role(lease: LeaseStatus) -> str:
    if lease.holding and lease.may_send:
        return '<span class="ok">holds the dispatch lease and sends</span>'
    if lease.holding:
        return '<span class="ok">holds the dispatch lease</span> (waiting one ttl before its first send)'
    if lease.last_error is not None:
        return '<span class="bad">cannot reach the coordinator</span>: sends nothing; what it would send is held'
    return "standby: collects and evaluates; the holder sends"


def ha_section(view: HaView | None, now: datetime) -> str:
    """The HA section of the status page ("" for a single node)."""
    if view is None:
        return ""
    lease = view.lease
    holder = escape(lease.holder) if lease.holder else '<span class="muted">nobody yet</span>'
    held = (f'<span class="bad">{view.held} held</span>: sent or dropped once a coordinator answers'
            if view.held else '<span class="ok">none</span>')
    error = (f'<tr><th>coordinator error</th><td class="bad">{escape(lease.last_error)}</td></tr>'
             if lease.last_error else "")
    return (
        f'<h2 id="ha">High availability</h2><p>This daemon ({escape(lease.me)}) {_role(lease)}.</p>'
        f"<table><tr><th>lease holder</th><td>{holder}</td></tr>"
        f"<tr><th>epoch</th><td>{lease.epoch if lease.epoch is not None else '–'}</td></tr>"
        f"<tr><th>held since</th><td>{_when(now, lease.holder_since)}</td></tr>"
        f"<tr><th>claim expires</th><td>{_when(now, lease.expires_at)} (coordinator's clock)</td></tr>"
        f"<tr><th>held notifications</th><td>{held}</td></tr>{error}</table>"
    )
