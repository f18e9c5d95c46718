"""`rocketwatch analyze PATH...`: broker/client logs, store directories and thread dumps, after the fact."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path

from rules.durations import parse_duration


class _BadArgument(Exception):
    """A flag that cannot be used: one line naming it, exit 2, before anything is read."""


def _step(text: str | None) -> timedelta:
    if not text:
        return timedelta(minutes=1)
    try:
        step = parse_duration(text)
    except ValueError as exc:
        raise _BadArgument(f"--step {text!r}: {exc}") from None
    if step < timedelta(seconds=1):
        # Broker-side logs are to the second and samples a minute apart: a finer step only multiplies Spark jobs.
        raise _BadArgument(f"--step {text!r}: give 1s or more")
    return step


def _check(args: argparse.Namespace) -> timedelta:
    """The replay step; every other flag checked, so a typo costs no parsing and no Spark."""
    from config.zones import zone_of

    if args.client_tz is not None:
        try:
            zone_of(args.client_tz)
        except ValueError as exc:
            raise _BadArgument(f"--client-tz {args.client_tz!r}: {exc}") from None
    for flag, value in (("--broker", args.broker), ("--cluster", args.cluster)):
        if value is not None and not value.strip():
            raise _BadArgument(f"{flag}: give a name, not an empty string")
    if args.html and Path(args.html).is_dir():
        raise _BadArgument(f"--html {args.html}: is a directory; give the file to write the report to")
    if args.html and not Path(args.html).resolve().parent.is_dir():
        raise _BadArgument(f"--html {args.html}: no directory {Path(args.html).resolve().parent} to write it in")
    return _step(args.step)


def cmd_analyze(args: argparse.Namespace) -> int:
    """Analyze the paths; print the report; exit 2 when nothing in them could be read or a flag is wrong."""
    from daemon.offline.analyze import render
    from daemon.offline.analyze.report import analyze

    try:
        step = _check(args)
    except _BadArgument as exc:
        print(f"rocketwatch analyze: {exc}", file=sys.stderr)
        return 2
    report = analyze([Path(p) for p in args.paths], cluster=args.cluster, client_tz=args.client_tz,
                     broker=args.broker, step=step)
    if not report.files:
        for path, why in report.skipped:
            print(f"{path}: {why}", file=sys.stderr)
        print("nothing to analyze: give broker/client logs, a store directory or jstack files", file=sys.stderr)
        return 2
    print(render.as_json(report) if args.format == "json" else render.text(report), end="")
    if args.html:
        try:
            Path(args.html).write_text(render.html(report), encoding="utf-8")
        except OSError as exc:
            print(f"rocketwatch analyze: --html {args.html}: cannot write it: {exc.strerror}", file=sys.stderr)
            return 1
        print(f"report written to {args.html}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `analyze` to the command line."""
    parser = sub.add_parser("analyze", help="post-mortem: logs, store dirs and thread dumps as one timeline")
    parser.add_argument("paths", nargs="+", help="files or directories (searched recursively); .gz read too")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--html", help="also write a self-contained HTML report here")
    parser.add_argument("--cluster", help="cluster name to put on the rows (default: as broker.log or the store's "
                                          "topics.json names it)")
    parser.add_argument("--broker", help="broker name for store dirs and broker-side logs (default: as broker.log, "
                                         "the store's topics.json or a <broker>_<id> directory names it)")
    parser.add_argument("--client-tz", help="zone of 4.9.x client log times (default UTC; 5.x logs are GMT+8)")
    parser.add_argument("--step", default="1m", help="time between rule evaluations in the replay")
    parser.set_defaults(func=cmd_analyze)
