"""Reconnect backoff: a dead broker costs one connect attempt, not one per call; it is dialled again
each new cycle, and a broker that came back is used at once."""

from __future__ import annotations

import asyncio
import random
import socket

import pytest

from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.backoff import ReconnectBackoff
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.remoting.codes import RequestCode
from daemon.collectors.remoting.errors import RemotingConnectError
from daemon.simulator import SimulatorThread

pytestmark = pytest.mark.timeout(60)


def test_delays_double_per_failure_up_to_the_cap_with_jitter_and_clear_on_success() -> None:
    backoff = ReconnectBackoff(base_s=1.0, max_s=8.0, jitter=0.2, rng=random.Random(1))
    delays = [backoff.failed("b:1", "connection refused", now=0.0) for _ in range(6)]
    for expected, delay in zip([1, 2, 4, 8, 8, 8], delays, strict=True):
        assert expected * 0.8 <= delay <= expected * 1.2
    assert "6 failed connect(s) in a row" in (backoff.blocked("b:1", now=0.0) or "")
    assert backoff.blocked("other:1", now=0.0) is None
    backoff.retry_now()
    assert backoff.blocked("b:1", now=0.0) is None  # dialled again, count kept
    assert backoff.failed("b:1", "refused", now=0.0) >= 8 * 0.8
    backoff.succeeded("b:1")
    assert backoff.blocked("b:1", now=0.0) is None and backoff.failed("b:1", "x", now=0.0) <= 1.2


def _refusing_addr() -> str:
    with socket.socket() as s:  # a port nothing listens on once this closes
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_calls_to_a_refusing_address_fail_fast_until_the_next_cycle() -> None:
    addr = _refusing_addr()

    async def run() -> list[str]:
        async with RemotingClient(default_timeout=1.0, connect_timeout=1.0) as client:
            admin = AdminClient(client)
            reasons = []
            for _ in range(3):
                with pytest.raises(RemotingConnectError) as err:
                    await client.invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
                reasons.append(err.value.reason)
            admin.new_cycle()
            with pytest.raises(RemotingConnectError) as err:
                await client.invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
            return [*reasons, err.value.reason]

    first, second, third, next_cycle = asyncio.run(run())
    assert first == "connection refused (nothing listens there)"
    assert "next attempt in" in second and "1 failed connect(s) in a row" in second and third.startswith(first)
    assert next_cycle == first  # a real dial again, not the backoff's answer


def test_a_broker_that_returns_is_collected_on_the_next_cycle() -> None:
    with SimulatorThread("healthy") as sim:
        broker = sim.broker_addrs["broker-a"]

        async def run() -> bool:
            async with RemotingClient(default_timeout=2.0, connect_timeout=1.0) as client:
                admin = AdminClient(client)
                sim.set_fault("broker-a", refuse=True)
                with pytest.raises(RemotingConnectError):
                    await admin.client.invoke(broker, RequestCode.GET_BROKER_RUNTIME_INFO)
                sim.set_fault("broker-a", refuse=False)
                admin.new_cycle()
                response = await admin.client.invoke(broker, RequestCode.GET_BROKER_RUNTIME_INFO)
                return response.code == 0

        assert asyncio.run(run())
