"""`rocketwatch collect --once`: one collection cycle from a live cluster into a store."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path


def cmd_collect(args: argparse.Namespace) -> int:
    """Run one collection cycle against a live cluster and write it to a store."""
    from config.loader import ConfigLoadError, load_config
    from config.native_metrics import NativeMetricsConfig
    from daemon.app.oneshot import ClusterTarget, collect_once
    from daemon.cli.logformat import setup_logging
    from daemon.collectors.remoting.errors import RemotingError

    setup_logging(args.log_level)
    if not args.once:
        print("rocketwatch collect: only --once is supported; `rocketwatch run` collects on a schedule", file=sys.stderr)
        return 2
    timeout, concurrency, targets = args.timeout, 8, None
    store = Path(args.store) if args.store else None
    if args.config:
        try:
            config = load_config(args.config)
        except ConfigLoadError as exc:
            print(exc, file=sys.stderr)
            return 1
        targets = [ClusterTarget(c.name, c.namesrv, c.selection(), c.native_metrics) for c in config.clusters]
        timeout, concurrency = config.collect.timeout.total_seconds(), config.collect.concurrency
        store = store or config.store
    elif not args.namesrv:
        print("rocketwatch collect: give --namesrv HOST:PORT or --config FILE", file=sys.stderr)
        return 2
    if store is None:
        print("rocketwatch collect: give --store DIR (or a --config with a state_dir)", file=sys.stderr)
        return 2
    namesrv = [a.strip() for a in (args.namesrv or "").split(";") if a.strip()]
    try:
        native = NativeMetricsConfig(port=args.metrics_port) if args.metrics_port else None
        results = asyncio.run(collect_once(store, targets, namesrv, timeout=timeout, concurrency=concurrency,
                                           native=native))
    except RemotingError as exc:
        print(f"rocketwatch collect: no name server answered: {exc}", file=sys.stderr)
        return 1
    if not results:
        print(f"the name server at {args.namesrv} knows no cluster", file=sys.stderr)
        return 1
    for _target, result, written in results:
        print(result.summary)
        print(f"  wrote to {store}: " + ", ".join(f"{name} {count} row(s)" for name, count in sorted(written.items())))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `collect` to the rocketwatch command."""
    collect = sub.add_parser("collect", help="collect once from a live cluster into a store")
    collect.add_argument("--namesrv", help="name server(s), host:port[;host:port]")
    collect.add_argument("--config", "-c", help="use the clusters and store of this config file")
    collect.add_argument("--store", help="Parquet store directory")
    collect.add_argument("--once", action="store_true", help="one cycle, then exit")
    collect.add_argument("--timeout", type=float, default=5.0, help="seconds per call")
    collect.add_argument("--metrics-port", type=int, default=None,
                         help="the 5.1+ brokers' metricsPromExporterPort (default 5557) when not given by --config")
    collect.add_argument("--log-level", default="warning")
    collect.set_defaults(func=cmd_collect)
