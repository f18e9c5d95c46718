"""`rocketwatch` command line: run, demo, check, tables."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from rules.tables import TABLES


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # py4j and APScheduler are chatty at INFO; their news is rarely an operator's.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def _is_config_file(path: Path) -> bool:
    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except (OSError, YAMLError):
        return False
    return isinstance(data, dict) and "clusters" in data


def cmd_check(args: argparse.Namespace) -> int:
    """Validate config and rule files without starting Spark; print every error with its position."""
    from config.loader import ConfigLoadError, load_config
    from rules.loader import check_rule_files
    from rules.overrides import apply_overrides

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
                _, override_errors = apply_overrides(ruleset, config.rule_overrides)
                problems.extend(f"{path}: rule_overrides: {e}" for e in override_errors)
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

    _setup_logging(args.log_level)
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


def cmd_tables(args: argparse.Namespace) -> int:
    """Print the sample tables rules can read."""
    for table in TABLES.values():
        print(f"{table.name}: {table.description}")
        print(f"  key: {', '.join(table.key)}    source: {table.source}")
        for col in table.columns:
            unit = f" [{col.unit}]" if col.unit else ""
            extra = f"  = {col.derived}" if col.derived else ("  (nullable)" if col.nullable else "")
            print(f"  {col.name:<26} {col.type:<9}{unit:<12} {col.description}{extra}")
        print()
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `rocketwatch` command."""
    parser = argparse.ArgumentParser(prog="rocketwatch", description="Alerting daemon for Apache RocketMQ")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the daemon")
    run.add_argument("--config", "-c", required=True, help="configuration file (YAML)")
    run.add_argument("--log-level", default="info")
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser("demo", help="simulated cluster + stuck consumer, alerts in this terminal")
    demo.add_argument("--timeout", type=float, default=240.0, help="give up after this many seconds")
    demo.add_argument("--log-level", default="warning")
    demo.set_defaults(func=cmd_demo)

    check = sub.add_parser("check", help="validate config and rule files (no Spark)")
    check.add_argument("files", nargs="+", help="config files and/or rule files")
    check.set_defaults(func=cmd_check)

    tables = sub.add_parser("tables", help="print the sample tables and their columns")
    tables.set_defaults(func=cmd_tables)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rocketwatch` console script."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
