"""A served stuck-consumer cluster shared by the wire tests, plus a tiny blocking client."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest

from daemon.collectors.remoting.frame import JSON, RemotingCommand, decode_payload, encode
from daemon.simulator import SimulatorThread

GROUP_A, GROUP_B = "orderConsumerA", "orderConsumerB"


def read_frame(sock: socket.socket) -> RemotingCommand:
    """Read one response frame from a blocking socket."""

    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("peer closed")
            buf += chunk
        return buf

    (length,) = struct.unpack(">i", exactly(4))
    return decode_payload(exactly(length))


def call(
    addr: str,
    code: int,
    ext: dict[str, str] | None = None,
    version: int = 401,
    serialize_type: int = JSON,
    opaque: int = 7,
) -> RemotingCommand:
    """Send one request on a fresh connection and return the decoded response."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        req = RemotingCommand(code=code, opaque=opaque, version=version, ext_fields=ext or {})
        req.serialize_type = serialize_type
        sock.sendall(encode(req))
        return read_frame(sock)


@pytest.fixture(scope="package")
def stuck_sim() -> Iterator[SimulatorThread]:
    """stuck-consumer at time_scale 0.1 with the block at 1 s: both hung messages within ~3 s."""
    with SimulatorThread("stuck-consumer", time_scale=0.1, block_at=10.0) as sim:
        deadline = time.monotonic() + 30
        while sim.inspect(lambda m: len(m.groups[GROUP_A].clients[0].blocked_threads())) < 2:
            assert time.monotonic() < deadline, "the scenario never reached its second block"
            time.sleep(0.1)
        time.sleep(1.0)  # a couple of offset persists after the second block
        yield sim
