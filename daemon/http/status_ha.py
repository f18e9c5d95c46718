"""The status page's HA section: who holds the dispatch lease, at which epoch and since when, whether this
daemon reaches the coordinator, and how many notifications it holds. Shown only with an `ha:` section: a
single node's private lease has nothing to tell."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Protocol

from daemon.coordination.model import PeerRecord
from daemon.coordination.service import CoordinationService, LeaseStatus


class _Outbox(Protocol):
    coordination: CoordinationService

    def held(self) -> int: ...


@dataclass(frozen=True)
class HaView:
    """The lease as this daemon sees it, what it holds unsent, and the peers table as it last read it."""

    lease: LeaseStatus
    held: int
    peers: tuple[list[PeerRecord], datetime] | None = None  # the rows, and the coordinator's time of the read
    ttl: float = 15.0  # a peer not heard of for this long is stale


def ha_view(outbox: _Outbox | None) -> HaView | None:
    """What the HA section shows; None for a single node (its lease is its own state file's)."""
    if outbox is None or outbox.coordination.keeper.private:
        return None
    service = outbox.coordination
    return HaView(service.status(), outbox.held(), service.peers(), service.keeper.timing.ttl)


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
        f"<tr><th>held notifications</th><td>{held}</td></tr>{error}</table>{_peers(view)}"
    )


def _peers(view: HaView) -> str:
    # As `rocketwatch ha status` shows them, read right after this daemon's last renewal: times compared with
    # the coordinator's clock of that read (a row written since then is not here yet).
    if view.peers is None:
        return '<p class="muted">Peers: not read yet (each renewal writes this daemon\'s row and reads all).</p>'
    rows, read_at = view.peers
    body = "".join(
        f"<tr><td>{escape(p.node)}</td><td>{escape(p.host)}</td><td>{escape(p.version)}</td>"
        f"<td>{_when(read_at, p.renew_at)}</td><td>{_when(read_at, p.evaluated_at)}</td>"
        f"<td>{_held(p.held)}</td>"
        f"<td>{_peer_state(p, read_at, view.ttl)}</td></tr>"
        for p in rows)
    return (f"<h3>Peers</h3><p class=\"muted\">as read at {escape(read_at.strftime('%H:%M:%S'))} "
            f"(coordinator's clock); stale: not heard of for over {view.ttl:g}s</p>"
            "<table><tr><th>node</th><th>host</th><th>version</th><th>last renew</th><th>last evaluation</th>"
            f"<th>held</th><th>lease</th></tr>{body}</table>")


def _held(count: int) -> str:
    return f'<span class="bad">{count}</span>' if count else "0"


def _peer_state(peer: PeerRecord, now: datetime, ttl: float) -> str:
    if peer.stale(now, ttl):
        return '<span class="bad">stale</span>'
    return '<span class="ok">holder</span>' if peer.holds_lease else "standby"
