"""Serve a scenario's cluster on loopback: one namesrv and one TCP port per broker.

Each connection may carry many requests at once; every request is answered as soon as it is
handled (echoing its opaque, flag RESPONSE, the request's header serialization). A background
task advances the model every ~100 ms of wall time, and each request advances it first, so an
answer is never staler than the moment it was asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import Any, TypeVar

from daemon.collectors.remoting.frame import (
    FLAG_RESPONSE,
    FrameError,
    RemotingCommand,
    encode,
    read_command,
)
from daemon.simulator.bodies import SERVER_VERSION, V5_1_0, VERSION_DESCS
from daemon.simulator.broker import Broker
from daemon.simulator.dispatch import Reply, broker_reply, namesrv_reply
from daemon.simulator.model import ClusterModel
from daemon.simulator.native_page import native_page
from daemon.simulator.registry import build_scenario
from daemon.simulator.scenario import Scenario

T = TypeVar("T")
TICK_S = 0.1


class Simulator:
    """A running simulated cluster; create it with `start_simulator`."""

    def __init__(self, scenario: Scenario, host: str, server_version: int) -> None:
        self.scenario = scenario
        self.model: ClusterModel = scenario.model
        self.host = host
        self.server_version = server_version
        self.namesrv_addr = ""
        self.metrics_port = 0  # 5.1+: the brokers' native /metrics, one page for every broker of this host
        self.broker_addrs: dict[str, str] = {}
        self._servers: dict[str, asyncio.Server] = {}
        self._ports: dict[str, int] = {}
        # A refused broker's port stays bound, not listening: connecting is refused as from a dead
        # process, and no other listener on this host (another simulator) can take the address.
        self._held: dict[str, socket.socket] = {}
        self._conns: set[asyncio.Task[None]] = set()
        self._conns_of: dict[str, set[asyncio.Task[None]]] = {}
        self._mono0 = time.monotonic()
        self._model0 = self.model.now
        self._ticker: asyncio.Task[None] | None = None
        self.frozen = False  # answers come from a model that stands still (tests compare rows with it)
        self.inflight: dict[str, int] = {}  # server name -> requests being answered now
        self.peak_inflight: dict[str, int] = {}  # … and the most at once (what a collector asks in parallel)

    def model_time(self) -> float:
        """Model time that corresponds to the present wall-clock moment."""
        return self._model0 + (time.monotonic() - self._mono0)

    def advance(self) -> None:
        """Bring the scenario up to the present (unless frozen)."""
        if self.frozen:
            return
        target = self.model_time()
        # Whole steps only: a request-driven partial step walks every queue of the model, and a
        # cycle of 3,000 requests would spend its time there. Due events still run on time.
        due = self.scenario.events and self.scenario.events[0][0] <= target
        if due or target - self.model.now >= self.model.step_s:
            self.scenario.tick(target)

    def freeze(self, frozen: bool = True) -> None:
        """Stop (or resume) the model's clock; resuming continues from where the model stood."""
        if frozen:
            self.advance()
        else:
            self._model0, self._mono0 = self.model.now, time.monotonic()
        self.frozen = frozen

    async def _start(self, namesrv_port: int) -> None:
        self._servers["namesrv"] = await self._listen("namesrv", namesrv_port)
        self.namesrv_addr = f"{self.host}:{self._ports['namesrv']}"
        for name, broker in self.model.brokers.items():
            self._servers[name] = await self._listen(name, 0)
            broker.addr = f"{self.host}:{self._ports[name]}"
            self.broker_addrs[name] = broker.addr
        if self.server_version >= V5_1_0:
            metrics = await asyncio.start_server(self._serve_metrics, self.host, 0)
            self._servers["metrics"] = metrics
            self.metrics_port = metrics.sockets[0].getsockname()[1]
        self._ticker = asyncio.create_task(self._tick_forever())

    async def _serve_metrics(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One HTTP/1.0 exchange: GET /metrics answers the brokers' native page; anything else 404."""
        try:
            request = await reader.readline()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # headers: nothing in them changes the page
            self.advance()
            path = request.split(b" ")[1] if request.count(b" ") >= 2 else b""
            if path == b"/metrics":
                body = native_page(self.model, self.model.brokers.values()).encode()
                head = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            else:
                body, head = b"not found\n", b"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n"
            writer.write(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()
        except (ConnectionError, IndexError):
            pass
        finally:
            writer.close()

    async def _listen(self, name: str, port: int) -> asyncio.Server:
        def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            task = asyncio.create_task(self._serve(name, r, w))
            self._conns.add(task)
            task.add_done_callback(self._conns.discard)
            served = self._conns_of.setdefault(name, set())
            served.add(task)
            task.add_done_callback(served.discard)

        server = await asyncio.start_server(handler, self.host, port)
        self._ports[name] = server.sockets[0].getsockname()[1]
        return server

    async def _tick_forever(self) -> None:
        while True:
            self.advance()
            await asyncio.sleep(TICK_S)

    async def _serve(self, name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pending: set[asyncio.Task[None]] = set()
        try:
            while True:
                cmd = await read_command(reader)
                if cmd.flag & FLAG_RESPONSE:
                    continue  # we never send requests, so a response is unmatched: dropped
                task = asyncio.create_task(self._answer(name, cmd, writer))
                pending.add(task)
                task.add_done_callback(pending.discard)
        except (asyncio.IncompleteReadError, ConnectionError, FrameError):
            pass  # peer closed, or bad bytes: the Java server closes the channel too
        finally:
            for task in pending:
                task.cancel()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, name: str, cmd: RemotingCommand, writer: asyncio.StreamWriter) -> None:
        self.inflight[name] = self.inflight.get(name, 0) + 1
        self.peak_inflight[name] = max(self.peak_inflight.get(name, 0), self.inflight[name])
        try:
            await self._answer_one(name, cmd, writer)
        finally:
            self.inflight[name] -= 1

    async def _answer_one(self, name: str, cmd: RemotingCommand, writer: asyncio.StreamWriter) -> None:
        broker = self.model.brokers.get(name)
        if broker is not None and broker.fault.delay_s > 0:
            await asyncio.sleep(broker.fault.delay_s)
        self.advance()
        if broker is not None and cmd.code in broker.fault.unanswered:
            return  # read and never answered: the caller's own timeout is what it sees
        reply = self.reply(name, broker, cmd)
        if cmd.is_oneway or writer.is_closing():
            return
        answer = broker.fault.answer if broker is not None else "ok"
        if answer == "malformed":
            reply = Reply(code=reply.code, body=reply.body[: len(reply.body) // 2] or b'{"offsetTable":{',
                          remark=reply.remark, ext=reply.ext)
        response = RemotingCommand(
            code=reply.code,
            opaque=cmd.opaque,
            flag=FLAG_RESPONSE,
            language="JAVA",
            version=self.server_version,
            remark=reply.remark,
            ext_fields=reply.ext,
            body=reply.body,
            serialize_type=cmd.serialize_type,  # a 4.9.7 server answers in the request's form
        )
        frame = encode(response)
        if answer == "garbage":
            frame = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
        if answer == "drop":
            writer.write(frame[: len(frame) // 2])
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()
            return
        writer.write(frame)
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    def reply(self, name: str, broker: Broker | None, cmd: RemotingCommand) -> Reply:
        """The reply of the namesrv or of broker `name` to `cmd` (no I/O)."""
        if broker is None:
            return namesrv_reply(self.model, cmd)
        return broker_reply(self.model, broker, cmd, self.namesrv_addr)

    async def fast_forward(self, seconds: float) -> None:
        """Jump the model `seconds` ahead of the wall clock (minutes of an incident in a test's second)."""
        if seconds < 0:
            raise ValueError(f"the simulator cannot go back in time ({seconds} s)")
        self._model0 += seconds
        self.advance()

    async def trigger(self, action: str) -> None:
        """Run a scenario action now (after bringing the model up to the present)."""
        self.advance()
        self.scenario.trigger(action)

    async def set_fault(
        self, broker: str, delay_s: float | None = None, refuse: bool | None = None, answer: str | None = None,
        unanswered: frozenset[int] | None = None,
    ) -> None:
        """Make a broker answer `delay_s` late, refuse connections (True) / listen again (False),
        answer broken bytes (`answer`: ok, drop, malformed, garbage), or never answer the request
        codes in `unanswered` (see BrokerFault)."""
        fault = self.model.brokers[broker].fault
        if unanswered is not None:
            fault.unanswered = frozenset(unanswered)
        if answer is not None:
            if answer not in ("ok", "drop", "malformed", "garbage"):
                raise ValueError(f"unknown fault answer {answer!r}: ok, drop, malformed or garbage")
            fault.answer = answer
        if delay_s is not None:
            fault.delay_s = delay_s
        if refuse is not None and refuse != fault.refuse:
            fault.refuse = refuse
            if refuse:
                server = self._servers.pop(broker)
                server.close()
                # A crashed broker drops its open connections too, not only its listening port.
                for task in list(self._conns_of.get(broker, ())):
                    task.cancel()
                await server.wait_closed()
                self._held[broker] = _hold(self.host, self._ports[broker])
            else:
                self._held.pop(broker).close()
                self._servers[broker] = await self._listen(broker, self._ports[broker])

    async def stop(self) -> None:
        """Close every port and stop advancing the model."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        for server in self._servers.values():
            server.close()
        for held in self._held.values():
            held.close()
        self._held.clear()
        for task in list(self._conns):
            task.cancel()
        for server in self._servers.values():
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers.clear()


async def start_simulator(
    scenario: str | Scenario,
    host: str = "127.0.0.1",
    namesrv_port: int = 0,
    time_scale: float = 1.0,
    server_version: int | None = None,
    **scenario_options: Any,
) -> Simulator:
    """Build (or take) a scenario and serve it; returns once every port is listening.

    `server_version` is the brokers' MQVersion ordinal: 407 (4.9.7) by default; 413 and up answer as
    5.x (pullOffset in ConsumeStats from 433, 5.x runtime-info keys, native /metrics from 433). A scenario
    of 5.x behaviour (pop mode, timers, transactions) names its own version, used when none is given.
    """
    if server_version is not None and server_version not in VERSION_DESCS:
        raise ValueError(f"cannot emulate broker version {server_version}; known: "
                         + ", ".join(f"{v} ({d})" for v, d in VERSION_DESCS.items()))
    if isinstance(scenario, str):
        sc = build_scenario(
            scenario, time_scale=time_scale, start_epoch_ms=int(time.time() * 1000), **scenario_options
        )
    else:
        sc = scenario
        if sc.model.now == sc.model.start:
            # An untouched model starts "now", so its timestamps look like a live cluster's.
            sc.model.start_epoch_ms = int(time.time() * 1000)
    server_version = server_version or sc.server_version or SERVER_VERSION
    sc.model.version = server_version
    sim = Simulator(sc, host, server_version)
    await sim._start(namesrv_port)
    # Faults of the process or its port (a dead broker, a stuck handler) are the server's to play,
    # not the model's: applied here, so every way of starting the scenario serves them.
    for broker, fault in sc.broker_faults.items():
        await sim.set_fault(broker, delay_s=fault.delay_s, refuse=fault.refuse, answer=fault.answer,
                            unanswered=fault.unanswered)
    return sim


def _hold(host: str, port: int) -> socket.socket:
    """A socket bound to host:port that never listens: connections are refused, the port stays ours."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Past the connections it served (TIME_WAIT); a port picked by the kernel for another listener
    # still never lands on a bound one.
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.bind((host, port))
    return held
