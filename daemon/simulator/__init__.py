"""A simulated RocketMQ 4.9.7 cluster speaking the real remoting protocol on loopback.

    sim = await start_simulator("stuck-consumer", time_scale=0.5)
    sim.namesrv_addr, sim.broker_addrs        # "127.0.0.1:port", {"broker-a": ...}
    await sim.trigger("release"); await sim.stop()

or, from synchronous code, `with SimulatorThread("healthy") as sim: ...`.
"""

from daemon.simulator.broker import MessageQueue
from daemon.simulator.consumer import ConsumerSettings
from daemon.simulator.model import ClusterModel, Producer
from daemon.simulator.registry import build_scenario, list_scenarios
from daemon.simulator.scenario import Scenario
from daemon.simulator.server import Simulator, start_simulator
from daemon.simulator.threaded import SimulatorThread

__all__ = [
    "ClusterModel",
    "ConsumerSettings",
    "MessageQueue",
    "Producer",
    "Scenario",
    "Simulator",
    "SimulatorThread",
    "build_scenario",
    "list_scenarios",
    "start_simulator",
]
