"""`rocketwatch diagnose`: one group, live, one verdict; no config file, no daemon."""

from __future__ import annotations

import argparse
import json
import sys

from rules.durations import parse_duration

EXIT_COLLECT_FAILED = 2


def _every(text: str) -> float:
    try:
        return parse_duration(text).total_seconds() if not text.replace(".", "", 1).isdigit() else float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--every: {exc} (e.g. 1s, 500ms, 2)") from None


def _namesrv(text: str) -> str:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not host:port (e.g. 127.0.0.1:9876)")
    return text.strip()


def _group(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("give the consumer group's name")
    return text.strip()


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number, 1 or more")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):  # `not >` also refuses nan
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds, more than 0 (e.g. 3 or 0.5)")
    return value


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Diagnose one consumer group; exit 0 healthy, 1 problem found, 2 could not collect."""
    from daemon.diagnose.render import as_json, as_text
    from daemon.diagnose.run import CollectError, Options, Timings, diagnose

    opts = Options(namesrv=args.namesrv, group=args.group, topic=args.topic, samples=args.samples,
                   every=args.every, jstack=args.jstack, timeout=args.timeout, spark_master=args.spark_master)
    try:
        timings = Timings()
        verdict = diagnose(opts, timings)
    except CollectError as exc:
        if args.format == "json":
            print(json.dumps({"group": args.group, "status": "error", "exit_code": EXIT_COLLECT_FAILED,
                              "headline": f"could not collect: {exc}"}))
        else:
            print(f"ERROR: could not collect group {args.group}: {exc}", file=sys.stderr)
        return EXIT_COLLECT_FAILED
    print(as_json(verdict, timings) if args.format == "json" else as_text(verdict), flush=True)
    if opts.spark_master.startswith("local"):
        from daemon.diagnose.warmup import start_in_background

        start_in_background()  # the first run on a machine: the next ones start Spark faster
    return verdict.exit_code


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `diagnose` subcommand."""
    p = subparsers.add_parser("diagnose", help="one group, live: where the problem is, in seconds")
    p.add_argument("--namesrv", required=True, type=_namesrv, help="name server host:port")
    p.add_argument("--group", "-g", required=True, type=_group, help="consumer group")
    p.add_argument("--topic", "-t", help="only this topic of the group")
    p.add_argument("--samples", type=_count, default=5, help="how many samples (default 5)")
    p.add_argument("--every", type=_every, default=1.0, help="time between samples (default 1s)")
    p.add_argument("--jstack", action="store_true", help="ask each client for a thread dump per sample")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--timeout", type=_seconds, default=3.0, help="seconds per call (default 3)")
    p.add_argument("--spark-master", default="local[2]", help="Spark master for the rule evaluation")
    p.set_defaults(func=cmd_diagnose)
