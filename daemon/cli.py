"""`rocketwatch` command line: run, demo, check, tables."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import sys
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from rules.tables import TABLES, VIEWS


def _setup_logging(level: str, fmt: str = "text") -> None:
    from daemon.logformat import setup_logging

    setup_logging(level, fmt)


def _is_config_file(path: Path) -> bool:
    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except (OSError, YAMLError):
        return False
    return isinstance(data, dict) and "clusters" in data


def cmd_check(args: argparse.Namespace) -> int:
    """Validate config and rule files without starting Spark; print every error with its position."""
    from config.loader import ConfigLoadError, load_config, positioned_override_errors
    from rules.loader import check_rule_files
    from rules.overrides import apply_overrides_checked

    problems: list[str] = []
    checked_rules = 0
    for raw in args.files:
        path = Path(raw)
        if _is_config_file(path):
            try:
                config = load_config(path)
            except ConfigLoadError as exc:
                problems.extend(str(e) for e in exc.errors)
                continue
            errors = check_rule_files(config.rules)
            problems.extend(str(e) for e in errors)
            if not errors:
                from rules.loader import load_rule_files

                ruleset = load_rule_files(config.rules)
                _, override_errors = apply_overrides_checked(ruleset, config.rule_overrides)
                problems.extend(str(e) for e in positioned_override_errors(path, override_errors))
                checked_rules += len(ruleset.rules)
        else:
            errors = check_rule_files([str(path)])
            problems.extend(str(e) for e in errors)
            if not errors:
                from rules.loader import load_rule_files

                checked_rules += len(load_rule_files([str(path)]).rules)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} error(s)", file=sys.stderr)
        return 1
    print(f"OK: {len(args.files)} file(s), {checked_rules} rule(s)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Run the daemon until SIGTERM."""
    from config.loader import ConfigLoadError, load_config
    from daemon.statedir import StateDirLocked
    from rules.loader import RuleLoadError

    _setup_logging(args.log_level, args.log_format)
    try:
        config = load_config(args.config)
        from daemon.app import Daemon

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
    from daemon.demo import run_demo

    _setup_logging(args.log_level)
    return asyncio.run(run_demo(timeout_s=args.timeout))


def cmd_collect(args: argparse.Namespace) -> int:
    """Run one collection cycle against a live cluster and write it to a store."""
    from config.loader import ConfigLoadError, load_config
    from daemon.collectors.remoting.errors import RemotingError
    from daemon.oneshot import ClusterTarget, collect_once

    _setup_logging(args.log_level)
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
        targets = [ClusterTarget(c.name, c.namesrv, c.selection()) for c in config.clusters]
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
        results = asyncio.run(collect_once(store, targets, namesrv, timeout=timeout, concurrency=concurrency))
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


def cmd_simulate(args: argparse.Namespace) -> int:
    """Run the simulated cluster alone in the foreground, so any tool can be pointed at it."""
    from daemon.simulator import list_scenarios, start_simulator

    if args.list:
        print("times are at --time-scale 1 from when serving starts; `From the start` means already there")
        for name, description in list_scenarios().items():
            print(f"{name:<18} {description}")
        return 0
    if args.time_scale <= 0:
        print("rocketwatch simulate: --time-scale must be more than 0", file=sys.stderr)
        return 2
    host, _, port = args.listen.rpartition(":")

    async def serve() -> None:
        sim = await start_simulator(args.scenario, host=host or "127.0.0.1", namesrv_port=int(port or 0),
                                    server_version=args.broker_version, time_scale=args.time_scale)
        print(f"scenario {args.scenario}: namesrv {sim.namesrv_addr}", flush=True)
        for name, addr in sorted(sim.broker_addrs.items()):
            print(f"  broker {name} {addr}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await sim.stop()

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve())
    except (KeyError, ValueError) as exc:  # an unknown scenario or broker version
        print(f"rocketwatch simulate: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    """Print the sample tables and views rules can read."""
    for table in (*TABLES.values(), *VIEWS.values()):
        print(f"{table.name}: {table.description}")
        print(f"  key: {', '.join(table.key)}    source: {table.source}")
        for col in table.columns:
            unit = f" [{col.unit}]" if col.unit else ""
            extra = f"  = {col.derived}" if col.derived else ("  (nullable)" if col.nullable else "")
            print(f"  {col.name:<26} {col.type:<9}{unit:<12} {col.description}{extra}")
        print()
    return 0


# Further subcommands live in modules of their own, each with `register(subparsers)`; they must
# import nothing heavy at module level (no pyspark), so `rocketwatch check` stays JVM-free.
COMMAND_MODULES: list[str] = ["daemon.cli_rules", "daemon.cli_silence", "daemon.cli_diagnose", "daemon.cli_analyze"]
# Commands that start Spark: each takes --log-level, Spark's own lines reach the terminal only at debug.
SPARK_COMMANDS = ("run", "demo", "diagnose", "analyze", "eval", "replay", "test-rules")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `rocketwatch` command."""
    parser = argparse.ArgumentParser(prog="rocketwatch", description="Alerting daemon for Apache RocketMQ")
    sub = parser.add_subparsers(dest="command", required=True)

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

    check = sub.add_parser("check", help="validate config and rule files (no Spark)")
    check.add_argument("files", nargs="+", help="config files and/or rule files")
    check.set_defaults(func=cmd_check)

    collect = sub.add_parser("collect", help="collect once from a live cluster into a store")
    collect.add_argument("--namesrv", help="name server(s), host:port[;host:port]")
    collect.add_argument("--config", "-c", help="use the clusters and store of this config file")
    collect.add_argument("--store", help="Parquet store directory")
    collect.add_argument("--once", action="store_true", help="one cycle, then exit")
    collect.add_argument("--timeout", type=float, default=5.0, help="seconds per call")
    collect.add_argument("--log-level", default="warning")
    collect.set_defaults(func=cmd_collect)

    simulate = sub.add_parser("simulate", help="run the simulated cluster in the foreground")
    simulate.add_argument("--scenario", default="healthy")
    simulate.add_argument("--listen", default="127.0.0.1:9876", help="namesrv address (brokers get free ports)")
    simulate.add_argument("--list", action="store_true", help="list the scenarios")
    simulate.add_argument("--broker-version", type=int, default=407,
                          help="MQVersion ordinal the brokers answer with: 407 = 4.9.7 (default), 479 = 5.3.3")
    simulate.add_argument("--time-scale", type=float, default=1.0,
                          help="multiply the scenario's event times by this (0.1: ten times sooner)")
    simulate.set_defaults(func=cmd_simulate)

    tables = sub.add_parser("tables", help="print the sample tables and their columns")
    tables.set_defaults(func=cmd_tables)

    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    for name in SPARK_COMMANDS:
        command = sub.choices.get(name)
        if command is not None and "--log-level" not in command._option_string_actions:
            command.add_argument("--log-level", default="warning",
                                 help="debug also shows Spark's own lines and where its log file is")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rocketwatch` console script."""
    args = build_parser().parse_args(argv)
    if getattr(args, "log_level", None) is not None:
        _setup_logging(args.log_level)  # before Spark starts: debug decides where its lines go
    try:
        return args.func(args)
    except BrokenPipeError:
        # `rocketwatch tables | head`: the reader left; that is not an error.
        sys.stderr.close()
        return 0
    except Exception as exc:
        line = _spark_failure(exc)
        if line is None:
            raise
        print(f"rocketwatch {args.command}: {line}", file=sys.stderr)
        return 1


def _spark_failure(exc: Exception) -> str | None:
    # Spark's stack traces are in its log file; the terminal gets one line that names it.
    if "spark.output" not in sys.modules:
        return None  # no Spark was started: the error is rocketwatch's own
    from spark.output import failure_line

    return failure_line(exc)


if __name__ == "__main__":
    sys.exit(main())
