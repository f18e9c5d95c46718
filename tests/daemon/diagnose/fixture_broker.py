"""The real 4.9.7 captures served back over TCP: a name server and broker-a answering in their original bytes.

Every request is matched on (request code, extFields) against the capture metadata
(`wire/t?_*.json` → `request`), and the captured response frame is sent with only the opaque
rewritten to the request's (the client matches on it). Rounds: the captures of round t1 are
served until the second GET_BROKER_RUNTIME_INFO (28) arrives, then t2 (diagnose asks every broker's
runtime first in each sample, so sample 1 sees t1 and sample 2 sees t2). A request nobody captured
gets SYSTEM_ERROR naming it, as a broker would answer an unexpected call with an error.

The captured cluster info says broker-a is at 127.0.0.1:10911, so the broker must listen exactly
there; a file lock keeps two test runs on this machine from fighting over the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from daemon.collectors.remoting.frame import FLAG_RESPONSE, RemotingCommand, encode, read_command
from tests.fixtures_path import WIRE

BROKER_ADDR = ("127.0.0.1", 10911)
LOCK_FILE = Path("/tmp/rocketwatch-fixture-broker-10911.lock")
SYSTEM_ERROR = 1


def _index(round_: str) -> dict[tuple[int, str, str], bytes]:
    """(code, target role, sorted extFields as JSON) → the captured response frame bytes of `round_`."""
    out: dict[tuple[int, str, str], bytes] = {}
    for meta_path in sorted(WIRE.glob(f"{round_}_*.json")):
        meta = json.loads(meta_path.read_text())
        request = meta.get("request")
        frame = meta_path.with_suffix(".frame")
        if not request or not frame.exists():
            continue
        role = "namesrv" if meta["target"].endswith(":9876") else "broker"
        ext = json.dumps(request.get("extFields") or {}, sort_keys=True)
        # Route captures exist per request version; the first one per key is kept (diagnose never asks 105).
        out.setdefault((int(request["code"]), role, ext), frame.read_bytes())
    return out


def _with_opaque(frame: bytes, opaque: int, serialize_type: int) -> bytes:
    """The captured frame with the request's opaque; everything else byte for byte."""
    if serialize_type == 0:  # JSON header: rewrite the "opaque" field only
        header_len = struct.unpack(">i", frame[4:8])[0] & 0xFFFFFF
        header = json.loads(frame[8:8 + header_len])
        old = f'"opaque":{header["opaque"]}'.encode()
        new_header = frame[8:8 + header_len].replace(old, f'"opaque":{opaque}'.encode(), 1)
        body = frame[8 + header_len:]
        length = 4 + len(new_header) + len(body)
        return struct.pack(">ii", length, len(new_header)) + new_header + body
    raise ValueError("the captures diagnose uses are all JSON-header frames")


class FixtureCluster:
    """Name server (free port) + broker-a (127.0.0.1:10911) replaying the t1, then t2 captures."""

    def __init__(self) -> None:
        self.rounds = [_index("t1"), _index("t2")]
        self.round = 0
        self.runtime_calls = 0
        self.unanswered: list[str] = []
        self.namesrv_addr = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fixture-cluster", daemon=True)
        self._servers: list[asyncio.Server] = []
        self._lock_fd: int | None = None

    def __enter__(self) -> FixtureCluster:
        LOCK_FILE.touch(exist_ok=True)
        fd = open(LOCK_FILE, "w")  # noqa: SIM115 - held for the life of the server
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._lock = fd
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._lock.close()

    async def _start(self) -> None:
        deadline = time.monotonic() + 20
        while True:
            try:
                broker = await asyncio.start_server(
                    lambda r, w: self._serve("broker", r, w), *BROKER_ADDR, reuse_address=True)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"port {BROKER_ADDR[1]} stays busy: the captured cluster info "
                                       "names broker-a at 127.0.0.1:10911, so the fixture broker needs it") from None
                await asyncio.sleep(0.5)
        namesrv = await asyncio.start_server(lambda r, w: self._serve("namesrv", r, w), "127.0.0.1", 0)
        self.namesrv_addr = f"127.0.0.1:{namesrv.sockets[0].getsockname()[1]}"
        self._servers = [broker, namesrv]

    async def _stop(self) -> None:
        for server in self._servers:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()

    def answer(self, role: str, cmd: RemotingCommand) -> bytes:
        """The response frame to `cmd` (see the module docstring)."""
        if role == "broker" and cmd.code == 28:
            self.runtime_calls += 1
            self.round = min(self.runtime_calls - 1, len(self.rounds) - 1)
        ext = json.dumps(cmd.ext_fields or {}, sort_keys=True)
        frame = self.rounds[self.round].get((cmd.code, role, ext))
        if frame is None:
            self.unanswered.append(f"{role} {cmd.code} {ext}")
            return encode(RemotingCommand(code=SYSTEM_ERROR, opaque=cmd.opaque, flag=FLAG_RESPONSE, language="JAVA",
                                          version=407, remark=f"fixture broker: no capture of {cmd.code} {ext}"))
        return _with_opaque(frame, cmd.opaque, cmd.serialize_type)

    async def _serve(self, role: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                cmd = await read_command(reader)
                writer.write(self.answer(role, cmd))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@contextlib.contextmanager
def fixture_cluster() -> Iterator[FixtureCluster]:
    """A running FixtureCluster."""
    with FixtureCluster() as cluster:
        yield cluster
