"""Stuck consume threads from the thread dumps a client puts into its running info (307 `jstack`).

The client writes `MixAll.jstack` format: per thread a line `%-40sTID: n STATE: s`, then one
`%-40s<frame>` line per frame. A consume thread is stuck when it is inside a ConsumeRequest.run
(handling a message, not waiting for work) with the very same stack in every dump: the frame on
top is where it waits, the first application frame below it is the call to fix.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_HEADER = re.compile(r"^(?P<name>.*?)\s*TID: (?P<tid>\d+) STATE: (?P<state>\S+)\s*$")
_CONSUME_RUN = "ConsumeRequest.run"
# Frames of the JDK and of the client library: the blocking frame to show is the first one after these.
_LIBRARY = re.compile(r"^(?:java\.|javax\.|jdk\.|sun\.|com\.sun\.|org\.apache\.rocketmq\.|io\.netty\.)")


@dataclass(frozen=True)
class Thread:
    """One thread of one dump."""

    name: str
    state: str
    frames: tuple[str, ...]

    @property
    def stack_hash(self) -> str:
        """A short hash of the whole stack (equal stacks across dumps = the thread did not move)."""
        return hashlib.sha1("\n".join(self.frames).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class StuckThread:
    """A consume thread of `client_id` that sat in the same frame in all `dumps` dumps."""

    client_id: str
    thread: str
    state: str
    top_frame: str
    app_frame: str | None
    dumps: int


def _frame_text(line: str) -> str:
    # "java.base@17.0.15/java.lang.Thread.sleep(Native Method)" and "app//com.x.Y.z(Y.java:1)" → bare frame.
    return re.sub(r"^[\w.@-]*/+", "", line.strip())


def parse_dump(text: str) -> dict[str, Thread]:
    """Threads of one running-info jstack text, by thread name."""
    threads: dict[str, Thread] = {}
    name: str | None = None
    state = ""
    frames: list[str] = []

    def flush() -> None:
        if name is not None:
            threads[name] = Thread(name, state, tuple(frames))

    for line in text.splitlines():
        header = _HEADER.match(line)
        if header is not None:
            flush()
            name, state, frames = header["name"].strip(), header["state"], []
        elif name is not None and line.strip():
            frame = line[len(name):] if line.startswith(name) else line
            frames.append(_frame_text(frame))
    flush()
    return threads


_JSTACK_HEADER = re.compile(r'^"(?P<name>[^"]+)"(?: #\d+)?.*$')
_JSTACK_STATE = re.compile(r"^\s+java\.lang\.Thread\.State: (?P<state>\S+)")
_JSTACK_FRAME = re.compile(r"^\s+at (?P<frame>.+)$")


def parse_jstack_file(text: str) -> dict[str, Thread]:
    """Threads of one dump written by the `jstack` tool (`"name" #n ...`, `at frame` lines)."""
    threads: dict[str, Thread] = {}
    name: str | None = None
    state = ""
    frames: list[str] = []
    for line in [*text.splitlines(), '"end-of-dump"']:
        header = _JSTACK_HEADER.match(line)
        if header is not None:
            if name is not None:
                threads[name] = Thread(name, state, tuple(frames))
            name, state, frames = header["name"], "", []
        elif (found := _JSTACK_STATE.match(line)) is not None:
            state = found["state"]
        elif (frame := _JSTACK_FRAME.match(line)) is not None and name is not None:
            frames.append(_frame_text(frame["frame"]))
    return threads


def parse_any(text: str) -> dict[str, Thread]:
    """A dump in either layout: the `jstack` tool's, or the client's own (running info 307)."""
    return parse_jstack_file(text) if re.search(r'^"[^"]+" #\d+', text, re.M) else parse_dump(text)


# What the stuck thread waits on, from its top frames: the first answer an operator wants.
_BLOCKING = (
    ("http", re.compile(r"(?i)http|okhttp|feign|resttemplate|urlconnection|apache\.hc")),
    ("jdbc", re.compile(r"(?i)jdbc|mysql|postgresql|oracle|hikari|druid|mybatis|hibernate")),
    ("lock", re.compile(r"LockSupport\.park|Object\.wait|ReentrantLock|synchronized|Semaphore")),
    ("sleep", re.compile(r"Thread\.sleep")),
    ("io", re.compile(r"socketRead|SocketInputStream|NioSocketImpl|FileInputStream|FileChannel|epollWait")),
)


def blocking_kind(frames: Sequence[str]) -> str:
    """http, jdbc, lock, sleep, io or other: what the top of the stack (up to ConsumeRequest.run) waits on."""
    top = []
    for frame in frames:
        if _CONSUME_RUN in frame:
            break
        top.append(frame)
    text = "\n".join(top)
    for kind in ("http", "jdbc"):  # a client library's frames name the call better than the socket read
        if dict(_BLOCKING)[kind].search(text):
            return kind
    head = "\n".join(top[:2])
    return next((kind for kind, pattern in _BLOCKING if pattern.search(head)), "other")


def _app_frame(frames: Sequence[str]) -> str | None:
    for frame in frames[1:]:
        if _CONSUME_RUN in frame:
            return None
        if not _LIBRARY.match(frame) and "$$Lambda" not in frame:
            return frame
    return None


def stuck_threads(client_id: str, dumps: Sequence[str], group: str | None = None) -> list[StuckThread]:
    """Consume threads busy on a message with an unchanged stack in every dump (needs two dumps or more)."""
    parsed = [parse_any(d) for d in dumps]
    if len(parsed) < 2:
        return []
    prefix = f"ConsumeMessageThread_{group}_" if group else "ConsumeMessageThread_"
    out = []
    for name, first in sorted(parsed[0].items()):
        if not name.startswith(prefix) or not any(_CONSUME_RUN in f for f in first.frames):
            continue
        same = all(name in d and d[name].stack_hash == first.stack_hash for d in parsed[1:])
        if same and first.frames:
            out.append(StuckThread(client_id, name, first.state, first.frames[0], _app_frame(first.frames),
                                   len(parsed)))
    return out


def all_stuck(jstacks: Mapping[str, Sequence[str]], group: str) -> list[StuckThread]:
    """Stuck consume threads of every client, from each client's dumps in sample order."""
    return [t for cid, dumps in sorted(jstacks.items()) for t in stuck_threads(cid, dumps, group)]
