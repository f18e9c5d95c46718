"""`rocketwatch ha status`: who holds the dispatch lease, at which epoch and since when, and every daemon's last
renewal, evaluation and held notifications, read from the coordinator itself (works with every daemon down)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

DEFAULT_CONFIG = "/etc/rocketwatch/rocketwatch.yaml"  # where systemd/rocketwatch.service reads it


@dataclass(frozen=True)
class HaSnapshot:
    """The coordinator's lease and peers rows, read in one go, and its clock then."""

    where: str
    ttl: float
    lease: Any  # LeaseRecord | None
    peers: list[Any]  # list[PeerRecord]
    now: datetime


def _fail(message: str, code: int) -> int:
    print(f"rocketwatch ha status: {message}", file=sys.stderr)
    return code


def cmd_ha(args: argparse.Namespace) -> int:
    """Print the lease and the peers table of the config's coordinator; 1 when it cannot be read, 2 without `ha:`."""
    from config.loader import ConfigLoadError, load_config

    try:
        config = load_config(args.config)
    except ConfigLoadError as exc:
        return _fail(f"{args.config}: the config is not valid:\n{exc}", 2)
    if config.ha is None:
        return _fail(f"{args.config} has no `ha:` section: this daemon runs as a single node (no shared lease, "
                     "no peers). README: \"Two daemons, one notification\"", 2)
    try:
        snapshot = asyncio.run(_read(config.ha))
    except ValueError as exc:  # the password's variable unset
        return _fail(f"{exc}; export it (or run under the unit's credentials) to read the coordinator", 2)
    except _Unreadable as exc:
        return _fail(str(exc), 1)
    print(json.dumps(_json(snapshot), indent=2) if args.format == "json" else _text(snapshot))
    return 0


class _Unreadable(Exception):
    """The coordinator did not answer, or has no rocketwatch tables (yet)."""


async def _read(ha: Any) -> HaSnapshot:
    import psycopg

    from daemon.coordination.factory import coordinator_for
    from daemon.coordination.lease import DISPATCH_LEASE
    from daemon.coordination.model import CoordinatorUnavailable

    coordinator = coordinator_for(ha, Path("unused"), env=os.environ)  # no open(): a read migrates nothing
    where = getattr(coordinator, "where", "coordinator")
    try:
        lease = await coordinator.read_lease(DISPATCH_LEASE)
        peers, now = await coordinator.peers()
    except CoordinatorUnavailable as exc:
        raise _Unreadable(f"cannot reach the coordinator: {exc}") from None
    except psycopg.errors.UndefinedTable as exc:
        raise _Unreadable(f"{where} has no rocketwatch table {_table(exc)}: no daemon of this version has "
                          "started against it yet (each creates and migrates the shared tables at start)") from None
    except psycopg.Error as exc:
        raise _Unreadable(f"{where}: {type(exc).__name__}: {str(exc).strip().splitlines()[0]}") from None
    finally:
        await coordinator.close()
    return HaSnapshot(where, ha.lease.ttl.total_seconds(), lease, peers, now)


def _table(exc: Exception) -> str:
    text = str(exc).splitlines()[0]
    return text.split('"')[1] if text.count('"') >= 2 else "(coord_*)"


def _at(then: datetime | None, now: datetime) -> str:
    if then is None:
        return "never"
    seconds = round((now - then).total_seconds())
    span = f"{abs(seconds)}s" if abs(seconds) < 120 else f"{abs(seconds) // 60}m"
    return f"{then:%H:%M:%S}Z ({span} ago)" if seconds >= 0 else f"{then:%H:%M:%S}Z (in {span})"


def _iso(then: datetime | None) -> str | None:
    return then.isoformat() if then is not None else None


def _json(s: HaSnapshot) -> dict[str, Any]:
    lease = s.lease
    return {
        "coordinator": s.where, "now": s.now.isoformat(),
        "lease": None if lease is None else {
            "name": lease.name, "holder": lease.holder, "epoch": lease.epoch, "since": _iso(lease.acquired_at),
            "expires_at": _iso(lease.expires_at), "live": lease.expires_at > s.now},
        "peers": [{"node": p.node, "holder": p.holder, "host": p.host, "version": p.version,
                   "started_at": _iso(p.started_at), "last_renew": _iso(p.renew_at),
                   "last_evaluation": _iso(p.evaluated_at), "held_notifications": p.held,
                   "holds_lease": p.holds_lease, "stale": p.stale(s.now, s.ttl)} for p in s.peers],
    }


def _text(s: HaSnapshot) -> str:
    lines = [f"coordinator  {s.where} (its clock {s.now:%Y-%m-%d %H:%M:%S}Z)"]
    lease = s.lease
    if lease is None:
        lines.append("lease        dispatch: never taken (no daemon has claimed it yet)")
    elif lease.expires_at > s.now:
        lines.append(f"lease        dispatch: held by {lease.holder}, epoch {lease.epoch}, since "
                     f"{_at(lease.acquired_at, s.now)}, expires {_at(lease.expires_at, s.now)}")
    else:
        lines.append(f"lease        dispatch: FREE: {lease.holder}'s claim (epoch {lease.epoch}) expired "
                     f"{_at(lease.expires_at, s.now)}; nobody sends until a daemon takes it")
    if not s.peers:
        lines.append("peers        none has written its row yet")
        return "\n".join(lines)
    header = ("node", "host", "version", "last renew", "last evaluation", "held", "lease", "")
    rows = [(p.node, p.host, p.version, _at(p.renew_at, s.now), _at(p.evaluated_at, s.now), str(p.held),
             "holder" if p.holds_lease and not p.stale(s.now, s.ttl) else "-",
             f"STALE: not heard of for over {s.ttl:g}s (lease ttl)" if p.stale(s.now, s.ttl) else "")
            for p in s.peers]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines.append("peers")
    for row in [header, *rows]:
        lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    held = sum(p.held for p in s.peers)
    if held:
        lines.append(f"{held} notification(s) held: sent (or dropped as already told) once their daemon reaches "
                     "the coordinator" + ("" if any(p.holds_lease for p in s.peers) else "; nobody holds the lease"))
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction) -> None:
    """Add `ha` to the rocketwatch command."""
    ha = sub.add_parser("ha", help="high availability: the lease holder and its peers")
    actions = ha.add_subparsers(dest="action", required=True)
    status = actions.add_parser("status", help="lease holder, epoch, peers' last renewal and evaluation, held "
                                "notifications (read from the coordinator; works with the daemons down)")
    status.add_argument("--config", "-c", default=DEFAULT_CONFIG, help=f"config file with an `ha:` section "
                        f"(default {DEFAULT_CONFIG})")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.set_defaults(func=cmd_ha)
