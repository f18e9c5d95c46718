"""What each path given to `analyze` is: a store directory, a log of some kind, or a thread dump;
and, for every file not read, what kind of file it is and why (one reason per kind)."""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from daemon.collectors.logparse import detect_log_kind, detect_other_log
from daemon.collectors.logparse.lines import open_text
from daemon.offline.analyze.running_info import is_consumer_status
from daemon.offline.storedir import is_store_dir

_DUMP = re.compile(r'^(?:Full thread dump|"[^"]+" #\d+)', re.M)
# RocketMQ's own logs that hold nothing analyze reads: named, and set aside as not used (not as errors).
_NOT_USED = {
    "watermark": "RocketMQ broker watermark.log (thread-pool queue sizes each second): not used",
    "namesrv": "RocketMQ name server log: not used (analyze reads brokers and clients)",
    "remoting": "RocketMQ remoting.log (one line per connection): not used",
}
# Reasons start with the kind, so the report can print one line per folder and kind.
OTHER = "not a RocketMQ log, store directory, thread dump or mqadmin consumerStatus output"
CAPTURE = ("remoting captures (RocketMQ request/response frames with their .body and .json), not read: "
           "analyze does not decode captured frames")
MQADMIN = ("mqadmin output other than consumerStatus, not read: the only mqadmin output analyze reads is "
           "`mqadmin consumerStatus` (a client's running info)")
ARCHIVE = "archive, not read: analyze does not unpack archives; unpack it and give the folder"
_CQ_ARCHIVE = "consume-queue archive, not read: analyze reads consume queues only unpacked in a store directory; "
# A store's own files: what read_store_dir and the broker-name lookup read, and why the rest is not used.
_STORE_READ = {"checkpoint", "abort", "consumequeue", "config/consumerOffset.json", "config/consumerOffset.json.bak",
               "config/topics.json", "config/topics.json.bak"}
_STORE_UNUSED = {
    "commitlog": "RocketMQ commitlog (the messages themselves): not used; analyze reads consume queues and offsets",
    "index": "RocketMQ index files (message keys): not used",
    "config": "RocketMQ store config files: not used (analyze reads config/consumerOffset.json and config/topics.json)",
}
_STORE_OWN = {"lock", "timerwheel", "timerlog", "timercheck", "timermetrics", "compaction", "rocksdb"}
_STORE_FILE = "RocketMQ store files: not used"
# First line of an mqadmin table (`#Topic  #Broker Name ...`), updateTopic's answer, brokerStatus' keys.
_MQADMIN_HEAD = re.compile(r"^(?:#[A-Z][A-Za-z ]*?\s{2,}#|create topic to \S+ success)")
_BROKER_STATUS = re.compile(r"^(?:brokerVersionDesc|msgPutTotalTodayNow|bootTimestamp)\s*: ", re.M)
_ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")


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
            _store_files(path, found)  # some operators copy logs and captures beside the store
        elif path.is_dir():
            stores = [p for p in sorted(path.rglob("*")) if p.is_dir() and is_store_dir(p)]
            found.stores += [s for s in stores if not any(s != o and o in s.parents for o in stores)]
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                if not any(s in file.parents for s in found.stores):
                    _classify(file, found)
            for store in found.stores:
                if path in store.parents:
                    _store_files(store, found)
        else:
            _classify(path, found)
    return found


def _store_files(store: Path, found: Inputs) -> None:
    # consumequeue/ is read whole and can hold tens of thousands of files: not walked here.
    tops = [p for p in sorted(store.iterdir()) if p.name not in ("consumequeue", "checkpoint", "abort")]
    files = [p for top in tops for p in ([top] if top.is_file() else sorted(top.rglob("*"))) if p.is_file()]
    for file in files:
        rel = file.relative_to(store)
        top = rel.parts[0]
        if top in _STORE_READ or rel.as_posix() in _STORE_READ:
            continue
        if top in _STORE_UNUSED and len(rel.parts) > 1:
            found.unused.append((file, _STORE_UNUSED[top]))  # told by name: a commitlog file is 1 GiB
        elif top in _STORE_OWN:
            found.unused.append((file, _STORE_FILE))
        else:
            _classify(file, found, store)


def _classify(path: Path, found: Inputs, store: Path | None = None) -> None:
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
        found.skipped.append((path, unread_kind(path, store)))


def unread_kind(path: Path, store: Path | None = None) -> str:
    """Why a file that is no input of analyze is not read, starting with what kind of file it is."""
    name = path.name.lower()
    if _is_capture(path):
        return CAPTURE
    if name.endswith(_ARCHIVES):
        top = _consume_queue_archive(path)
        if top is None:
            return ARCHIVE
        if store is None:
            return _CQ_ARCHIVE + "unpack it into the broker's store directory and give that directory"
        # Its entries must land at <store>/consumequeue/<topic>/<queue>/, where the store reader looks.
        target = store if top == "consumequeue" else store / "consumequeue"
        return _CQ_ARCHIVE + f"`tar xf {path} -C {target}` puts them where it reads them"
    if "mqadmin" in name or _looks_like_mqadmin(path):
        return MQADMIN
    return OTHER


def _is_capture(path: Path) -> bool:
    # The capture tool writes NAME.frame (the response), NAME.req.frame, NAME.body and NAME.json.
    name = path.name
    for ext in (".req.frame", ".frame", ".body", ".json"):
        if name.endswith(ext):
            return _is_frame(path.with_name(name[: -len(ext)] + ".frame"))
    return False


def _is_frame(path: Path) -> bool:
    """A remoting frame: 4-byte big-endian length of what follows, then a header length that fits."""
    try:
        with path.open("rb") as handle:
            head = handle.read(8)
        size = path.stat().st_size
    except OSError:
        return False
    return (len(head) == 8 and int.from_bytes(head[:4], "big") == size - 4
            and (int.from_bytes(head[4:], "big") & 0xFFFFFF) <= size - 8)


def _consume_queue_archive(path: Path) -> str | None:
    """The top folder of a tar of consume queues (`consumequeue` or a topic), None for any other archive."""
    try:
        with tarfile.open(path) as tar:
            for member in tar:
                parts = Path(member.name).parts
                if parts and parts[0] == "consumequeue":
                    return "consumequeue"
                # consumequeue/ itself left out: <topic>/<queueId>/<20-digit file offset>
                if len(parts) == 3 and parts[1].isdigit() and len(parts[2]) == 20 and parts[2].isdigit():
                    return parts[0]
    except (OSError, tarfile.TarError, EOFError):
        return None
    return None


def _looks_like_mqadmin(path: Path) -> bool:
    try:
        head = [line for _, line in zip(range(40), open_text(path), strict=False)]
    except (OSError, EOFError, UnicodeDecodeError):
        return False
    first = next((line for line in head if line.strip()), "")
    return bool(_MQADMIN_HEAD.match(first) or _BROKER_STATUS.search("\n".join(head)))
