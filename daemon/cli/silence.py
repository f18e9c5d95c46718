"""`rocketwatch silence add|list|expire`: mute alerts for a maintenance or while someone works on it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from rules.durations import parse_duration


def _state_db(args: argparse.Namespace):
    from config.loader import load_config
    from daemon.alerts.db import StateDB

    args.shared_note = ""
    if args.state_dir:
        state_dir = Path(args.state_dir)
    elif args.config:
        config = load_config(args.config)
        state_dir = config.state_dir
        if config.ha is not None:
            # The state file, not PostgreSQL: works while it is away and needs none of its credentials.
            args.shared_note = (f" (the daemon on this host shares it with the other HA daemons within "
                                f"{config.ha.lease.renew_every.total_seconds():g}s)")
    else:
        raise SystemExit("give --config FILE or --state-dir DIR (the daemon's state directory)")
    path = state_dir / "state.db"
    if not path.exists():
        raise SystemExit(f"{path}: no state file; is the daemon's state_dir right?")
    return StateDB(path)


def cmd_silence(args: argparse.Namespace) -> int:
    """Add, list or expire silences in the daemon's state file (safe while the daemon runs)."""
    from daemon.alerts.silences import SilenceStore

    now = datetime.now(UTC)
    db = _state_db(args)
    try:
        store = SilenceStore(db)
        if args.action == "add":
            starts = now if args.start is None else datetime.fromisoformat(args.start).astimezone(UTC)
            ends = starts + parse_duration(args.duration)
            try:
                silence = store.add(args.matchers, starts, ends, args.author, args.comment, now)
            except ValueError as exc:
                print(f"silence not added: {exc}", file=sys.stderr)
                return 2
            print(f"silence {silence.id} until {silence.ends_at.isoformat()}: {', '.join(map(str, silence.matchers))}"
                  f"{args.shared_note}")
        elif args.action == "expire":
            try:
                silence = store.expire(args.id, now)
            except KeyError as exc:
                print(exc.args[0], file=sys.stderr)
                return 1
            print(f"silence {silence.id} expired{args.shared_note}")
        else:
            silences = [s for s in store.all() if args.all or s.state(now) != "expired"]
            if args.format == "json":
                print(json.dumps([s.to_json(now) for s in silences], indent=2))
            for s in silences if args.format == "text" else []:
                print(f"{s.id}  {s.state(now):<8} until {s.ends_at:%Y-%m-%d %H:%M}Z  by {s.created_by}: "
                      f"{', '.join(map(str, s.matchers))}  # {s.comment}")
    finally:
        db.close()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `silence` to the rocketwatch command."""
    silence = sub.add_parser("silence", help="add, list or expire silences")
    silence.add_argument("--config", "-c", help="the daemon's config file (for its state_dir)")
    silence.add_argument("--state-dir", help="the daemon's state directory")
    actions = silence.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help='mute alerts matching every matcher, e.g. group="orders"')
    add.add_argument("matchers", nargs="+", help='name="value", name!="value", name=~"regex", name!~"regex"')
    add.add_argument("--duration", "-d", default="2h", help="how long, e.g. 30m, 2h (default 2h)")
    add.add_argument("--start", help="ISO time; default now")
    add.add_argument("--author", "-a", default=os.environ.get("USER", ""), help="who (default $USER)")
    add.add_argument("--comment", "-m", required=True, help="why: the next on-call reads it")
    ls = actions.add_parser("list", help="silences in force or pending")
    ls.add_argument("--all", action="store_true", help="include expired ones")
    ls.add_argument("--format", choices=("text", "json"), default="text")
    expire = actions.add_parser("expire", help="end a silence now")
    expire.add_argument("id")
    silence.set_defaults(func=cmd_silence)
