"""`rocketwatch run` and `rocketwatch demo`: the daemon, for real or against the simulated incident."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path


def cmd_run(args: argparse.Namespace) -> int:
    """Run the daemon until SIGTERM."""
    from config.loader import ConfigLoadError, load_config
    from daemon.app.statedir import StateDirLocked
    from daemon.cli.logformat import setup_logging
    from rules.loader import RuleLoadError

    setup_logging(args.log_level, args.log_format)
    try:
        config = load_config(args.config)
        from daemon.app.daemon import Daemon

        daemon = Daemon(config, Path(args.config))
    except (ConfigLoadError, RuleLoadError) as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        asyncio.run(daemon.run())
    except StateDirLocked as exc:
        print(f"rocketwatch: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the simulated stuck-consumer incident end to end in this terminal."""
    from daemon.app.demo import run_demo
    from daemon.cli.logformat import setup_logging

    setup_logging(args.log_level)
    return asyncio.run(run_demo(timeout_s=args.timeout))


def register(sub: argparse._SubParsersAction) -> None:
    """Add `run` and `demo` to the rocketwatch command."""
    run = sub.add_parser("run", help="run the daemon")
    run.add_argument("--config", "-c", required=True, help="configuration file (YAML)")
    run.add_argument("--log-level", default="info")
    run.add_argument("--log-format", choices=("text", "json"), default="text",
                     help="json: one object per line (ts, level, logger, msg, cluster/broker/group...)")
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser("demo", help="simulated cluster + stuck consumer, alerts in this terminal")
    demo.add_argument("--timeout", type=float, default=240.0, help="give up after this many seconds")
    demo.add_argument("--log-level", default="warning")
    demo.set_defaults(func=cmd_demo)
