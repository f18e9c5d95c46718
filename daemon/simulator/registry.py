"""Every scenario by name: the simulator's one registry (`rocketwatch simulate --list`)."""

from __future__ import annotations

from collections.abc import Callable

from daemon.simulator.scenario import Scenario, healthy, stuck_consumer
from daemon.simulator.scenario_scale import scale
from daemon.simulator.scenarios_symptoms import SYMPTOM_SCENARIOS
from daemon.simulator.scenarios_v5 import V5_SCENARIOS

# `simulate --list` prints in this order.
SCENARIOS: dict[str, Callable[..., Scenario]] = {
    "healthy": healthy, "stuck-consumer": stuck_consumer, **SYMPTOM_SCENARIOS, **V5_SCENARIOS, "scale": scale,
}


def list_scenarios() -> dict[str, str]:
    """Scenario name → one-line description."""
    return {name: (fn.__doc__ or "").strip().splitlines()[0] for name, fn in SCENARIOS.items()}


def build_scenario(name: str, time_scale: float = 1.0, **kwargs: object) -> Scenario:
    """Build a named scenario; extra keyword arguments go to its factory."""
    try:
        factory = SCENARIOS[name]
    except KeyError:
        raise KeyError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
    return factory(time_scale=time_scale, **kwargs)
