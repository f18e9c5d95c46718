"""`rocketwatch --help` lists exactly the commands of the one registry, in its order."""

from __future__ import annotations

import argparse

from daemon.cli.command import build_parser
from daemon.cli.registry import COMMAND_GROUPS, SPARK_COMMANDS


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_help_lists_exactly_the_registry_in_its_order() -> None:
    assert list(_subcommands(build_parser())) == [name for group in COMMAND_GROUPS for name in group.commands]


def test_every_command_that_starts_spark_takes_a_log_level() -> None:
    commands = _subcommands(build_parser())
    assert SPARK_COMMANDS, "the registry names the commands that start Spark"
    for name in SPARK_COMMANDS:
        assert "--log-level" in commands[name]._option_string_actions, name
