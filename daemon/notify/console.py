"""A notifier that prints to a stream: the demo's terminal, or a log captured by systemd."""

from __future__ import annotations

import sys
from typing import TextIO

from daemon.alerts.figures import RuleLookup
from daemon.notify import render
from daemon.notify.model import Notification, ThreadRef

_RULE = "─" * 78


class ConsoleNotifier:
    """Writes each notification as a readable block; the stream is looked up at send time."""

    def __init__(self, name: str, stream: TextIO | None = None, rules: RuleLookup | None = None,
                 external_url: str = "", detail: str = "full") -> None:
        self.name = name
        self.external_url = external_url  # the status page's address: the incident link
        self.detail = detail
        self.rules = rules  # alert name -> rule, so figures read as the rule defines them
        # None means "sys.stdout when sending", so pytest's capsys and the demo's redirection both work.
        self._stream = stream

    async def send(self, notification: Notification, thread: ThreadRef | None) -> ThreadRef | None:
        """Print the notification; a console has no threads, so return the group key as one."""
        stream = self._stream or sys.stdout
        update = "update of an earlier message · " if thread is not None else ""
        stream.write(f"{_RULE}\n{update}{render.text(notification, self.rules, self.external_url, self.detail).rstrip()}\n{_RULE}\n")
        stream.flush()
        return thread or ThreadRef(id=notification.group_key)
