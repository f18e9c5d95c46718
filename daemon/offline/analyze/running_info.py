"""A consumer's running info as `mqadmin consumerStatus -g G -i CLIENT` prints it: the settings the
client really runs with (its `#Consumer Properties#` block), which no log and no store file holds."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from daemon.collectors.logparse.lines import open_text

_HEADER = "#Consumer Properties#"
_PROPERTY = re.compile(r"^(?P<key>[A-Za-z_][\w.]*)\s+: (?P<value>.*)$")


@dataclass(frozen=True)
class ClientSettings:
    """What one client's running info says about retries, and the file it came from."""

    path: str
    group: str
    max_reconsume_times: int  # as set: -1 means RocketMQ's default (16, concurrent; unlimited, orderly)
    orderly: bool

    @property
    def effective_max_reconsume_times(self) -> int | None:
        """Retries before the DLQ as the broker applies them; None for an orderly client left at -1
        (it retries locally without end)."""
        if self.max_reconsume_times >= 0:
            return self.max_reconsume_times
        return None if self.orderly else 16


def is_consumer_status(path: Path) -> bool:
    """True for a saved `mqadmin consumerStatus` output (it starts with `#Consumer Properties#`)."""
    try:
        return next((line for line in open_text(path) if line.strip()), "").strip() == _HEADER
    except (OSError, EOFError):
        return False


def read_consumer_status(path: Path) -> ClientSettings | None:
    """The group and retry settings in one output; None when its properties do not name them."""
    props: dict[str, str] = {}
    for line in open_text(path):
        if line.startswith("#") and line.strip() != _HEADER:
            break  # the properties block ends where the subscription table begins
        if (match := _PROPERTY.match(line)) is not None:
            props[match["key"]] = match["value"].strip()
    try:
        return ClientSettings(str(path), props["consumerGroup"], int(props["maxReconsumeTimes"]),
                              props.get("PROP_CONSUMEORDERLY", "false") == "true")
    except (KeyError, ValueError):
        return None
