"""A served stuck-consumer cluster shared by the wire tests, plus a tiny blocking client."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from daemon.collectors.remoting.frame import JSON, RemotingCommand, decode_payload, encode
from daemon.simulator import MessageQueue, SimulatorThread
from daemon.simulator.model import ClusterModel
from tests.helpers.waiting import offsets_committed, wait_until

GROUP_A, GROUP_B = "orderConsumerA", "orderConsumerB"
STUCK_QUEUE = MessageQueue("OrderTopic", "broker-a", 3)


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


def commit_pinned(model: ClusterModel) -> bool:
    """Group A's committed offset of the stuck queue, on its broker, is the first hung message."""
    msgs = model.process_queue(GROUP_A, STUCK_QUEUE).msgs  # type: ignore[union-attr]
    return bool(msgs) and model.brokers["broker-a"].committed(GROUP_A, "OrderTopic", 3) == min(msgs)


@pytest.fixture(scope="package")
def stuck_sim() -> Iterator[SimulatorThread]:
    """stuck-consumer at time_scale 0.1 with the block at 1 s: both hung messages within ~3 s."""
    with SimulatorThread("stuck-consumer", time_scale=0.1, block_at=10.0) as sim:
        wait_until(lambda: sim.inspect(lambda m: len(m.groups[GROUP_A].clients[0].blocked_threads())) >= 2,
                   "the scenario's second block")
        # An offset persist after the second block: the broker's commit is pinned at the first hung
        # message, and every group's offsets (retry topics too) are on the brokers.
        wait_until(lambda: sim.inspect(commit_pinned), "group A's commit pinned on broker-a")
        offsets_committed(sim)
        yield sim
