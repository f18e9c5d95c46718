"""The simulator from synchronous code: its own event loop in a background thread, driven through
thread-safe calls (tests that run the daemon in a subprocess, benchmarks)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from daemon.simulator.model import ClusterModel
from daemon.simulator.scenario import Scenario
from daemon.simulator.server import Simulator, start_simulator

T = TypeVar("T")


class SimulatorThread:
    """A simulator on its own event loop in a background thread (for tests that run the daemon
    in a subprocess). Use as a context manager; every method is thread-safe."""

    def __init__(self, scenario: str | Scenario, **options: Any) -> None:
        self._scenario = scenario
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="rocketwatch-simulator", daemon=True
        )
        self.sim: Simulator | None = None

    def __enter__(self) -> SimulatorThread:
        self._thread.start()
        self.sim = self._run(start_simulator(self._scenario, **self._options))
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Any, timeout: float = 30.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _sim(self) -> Simulator:
        if self.sim is None:
            raise RuntimeError("SimulatorThread is not running; use it as a context manager")
        return self.sim

    @property
    def namesrv_addr(self) -> str:
        """`host:port` of the namesrv."""
        return self._sim().namesrv_addr

    @property
    def metrics_port(self) -> int:
        """Port of the brokers' native /metrics page (5.1+; 0 for a 4.x cluster)."""
        return self._sim().metrics_port

    @property
    def broker_addrs(self) -> dict[str, str]:
        """Broker name → `host:port`."""
        return dict(self._sim().broker_addrs)

    @property
    def model(self) -> ClusterModel:
        """The model (read it through `inspect` while the simulator runs)."""
        return self._sim().model

    def trigger(self, action: str) -> None:
        """Run a scenario action on the simulator's loop and wait for it."""
        self._run(self._sim().trigger(action))

    def freeze(self, frozen: bool = True) -> None:
        """Stop (or resume) the model's clock: every answer then describes the same instant.

        Resuming does not replay the frozen time: the model continues from where it stood.
        """

        async def call() -> None:
            self._sim().freeze(frozen)

        self._run(call())

    def fast_forward(self, seconds: float) -> None:
        """Thread-safe `Simulator.fast_forward`: the model jumps `seconds` ahead."""
        self._run(self._sim().fast_forward(seconds))

    def set_fault(
        self, broker: str, delay_s: float | None = None, refuse: bool | None = None, answer: str | None = None,
        unanswered: frozenset[int] | None = None,
    ) -> None:
        """Thread-safe `Simulator.set_fault`."""
        self._run(self._sim().set_fault(broker, delay_s, refuse, answer, unanswered))

    def inspect(self, fn: Callable[[ClusterModel], T]) -> T:
        """Call `fn(model)` on the simulator's loop (no race with ticks) and return its result."""

        async def call() -> T:
            self._sim().advance()
            return fn(self._sim().model)

        return self._run(call())  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop serving and end the thread."""
        if self.sim is not None:
            self._run(self.sim.stop())
            self.sim = None
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if not self._loop.is_closed() and not self._thread.is_alive():
            self._loop.close()
