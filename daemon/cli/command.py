"""`rocketwatch` command line: the parser from the registry's command groups, and the entry point."""

from __future__ import annotations

import argparse
import sys

from daemon.cli.registry import COMMAND_GROUPS, SPARK_COMMANDS


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `rocketwatch` command."""
    parser = argparse.ArgumentParser(prog="rocketwatch", description="Alerting daemon for Apache RocketMQ")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in COMMAND_GROUPS:
        group.register(sub)
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
        from daemon.cli.logformat import setup_logging

        setup_logging(args.log_level)  # before Spark starts: debug decides where its lines go
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
