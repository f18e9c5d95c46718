"""Every `rocketwatch` command, by group, in --help order: the one list of commands.

Each group module adds its subcommands with `register(subparsers)`; none imports pyspark at
module level, so `rocketwatch check` stays JVM-free."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from daemon.cli.analyze import register as register_analyze
from daemon.cli.check import register as register_check
from daemon.cli.collect import register as register_collect
from daemon.cli.diagnose import register as register_diagnose
from daemon.cli.ha import register as register_ha
from daemon.cli.rules import register as register_rules
from daemon.cli.run import register as register_run
from daemon.cli.silence import register as register_silence
from daemon.cli.simulate import register as register_simulate


@dataclass(frozen=True)
class CommandGroup:
    """The commands one module adds, in the order it adds them (tests/daemon/cli/test_registry.py holds it to that)."""

    commands: tuple[str, ...]
    register: Callable[[argparse._SubParsersAction], None]
    spark: tuple[str, ...] = ()  # the ones that start Spark: --log-level; Spark's own lines only at debug


COMMAND_GROUPS: tuple[CommandGroup, ...] = (
    CommandGroup(("run", "demo"), register_run, spark=("run", "demo")),
    CommandGroup(("check", "tables", "schema"), register_check),
    CommandGroup(("collect",), register_collect),
    CommandGroup(("simulate",), register_simulate),
    CommandGroup(("test-rules", "eval", "replay"), register_rules, spark=("test-rules", "eval", "replay")),
    CommandGroup(("silence",), register_silence),
    CommandGroup(("ha",), register_ha),
    CommandGroup(("diagnose",), register_diagnose, spark=("diagnose",)),
    CommandGroup(("analyze",), register_analyze, spark=("analyze",)),
)
SPARK_COMMANDS: tuple[str, ...] = tuple(name for group in COMMAND_GROUPS for name in group.spark)
