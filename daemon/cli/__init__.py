"""`rocketwatch` command line: command.py parses, registry.py lists every command, one module per command group."""

from daemon.cli.command import main

__all__ = ["main"]
