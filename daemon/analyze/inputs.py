"""What each path given to `analyze` is: a store directory, a log of some kind, or a thread dump."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from daemon.analyze.running_info import is_consumer_status
from daemon.logparse import detect_log_kind, detect_other_log
from daemon.logparse.lines import open_text
from daemon.storedir import is_store_dir

_DUMP = re.compile(r'^(?:Full thread dump|"[^"]+" #\d+)', re.M)
# RocketMQ's own logs that hold nothing analyze reads: named, and set aside as not used (not as errors).
_NOT_USED = {
    "watermark": "RocketMQ broker watermark.log (thread-pool queue sizes each second): not used",
    "namesrv": "RocketMQ name server log: not used (analyze reads brokers and clients)",
    "remoting": "RocketMQ remoting.log (one line per connection): not used",
}


@dataclass
class Inputs:
    """The paths sorted by what they are; `unused` names RocketMQ files analyze has no use for,
    `skipped` says why any other path was not read."""

    logs: list[tuple[Path, str]] = field(default_factory=list)  # (path, kind)
    stores: list[Path] = field(default_factory=list)
    dumps: list[Path] = field(default_factory=list)
    consumer_status: list[Path] = field(default_factory=list)  # `mqadmin consumerStatus` outputs
    unused: list[tuple[Path, str]] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def is_thread_dump(path: Path) -> bool:
    """True for a file written by `jstack` (or kill -3): 'Full thread dump' and "name" #n headers."""
    try:
        head = "\n".join(line for _, line in zip(range(60), open_text(path), strict=False))
    except (OSError, EOFError):
        return False
    return bool(_DUMP.search(head))


def discover(paths: list[Path]) -> Inputs:
    """Walk the paths (directories recursively) and sort what is found."""
    found = Inputs()
    for path in paths:
        if not path.exists():
            found.skipped.append((path, "does not exist"))
        elif is_store_dir(path):
            found.stores.append(path)
            _logs_in(path / "logs", found)  # some operators copy logs beside the store
        elif path.is_dir():
            stores = [p for p in sorted(path.rglob("*")) if p.is_dir() and is_store_dir(p)]
            found.stores += [s for s in stores if not any(s != o and o in s.parents for o in stores)]
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                if not any(s in file.parents for s in found.stores):
                    _classify(file, found)
        else:
            _classify(path, found)
    return found


def _logs_in(directory: Path, found: Inputs) -> None:
    if directory.is_dir():
        for file in sorted(p for p in directory.rglob("*") if p.is_file()):
            _classify(file, found)


def _classify(path: Path, found: Inputs) -> None:
    if is_thread_dump(path):
        found.dumps.append(path)
    elif is_consumer_status(path):
        found.consumer_status.append(path)
    elif (other := detect_other_log(path)) is not None:
        # Told before detect_log_kind: name server and remoting lines share the broker log's layout.
        if other in _NOT_USED:
            found.unused.append((path, _NOT_USED[other]))
        else:
            found.logs.append((path, other))
    elif (kind := detect_log_kind(path)) is not None:
        found.logs.append((path, kind))
    else:
        found.skipped.append((path, "not a RocketMQ log, store directory, thread dump or mqadmin consumerStatus output"))
