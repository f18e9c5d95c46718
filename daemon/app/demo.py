"""`rocketwatch demo`: a simulated cluster, the daemon watching it, and a stuck consumer, end to end."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from config.models import HttpConfig, RocketwatchConfig
from daemon.app.daemon import Daemon
from daemon.simulator import start_simulator

RULE = "ProcessQueueSpanTooLong"
CAUSE = "StuckMessage"  # explains RULE (rules/builtin/consumer-progress.yaml): the page is updated to lead with it
GROUP_A = "orderConsumerA"
GROUP_B = "orderConsumerB"
# The simulated cluster runs 4x faster than wall time so the incident unfolds in seconds.
TIME_SCALE = 0.25


def _say(text: str) -> None:
    print(f"\n>>> {text}", flush=True)


def demo_config(namesrv: str, state_dir: Path) -> RocketwatchConfig:
    """The demo's config: short intervals, `for`/`keep_firing_for` shortened by rule_overrides."""
    return RocketwatchConfig.model_validate({
        "clusters": [{"name": "DefaultCluster", "namesrv": [namesrv]}],
        "state_dir": str(state_dir),
        "collect": {"interval": "3s", "timeout": "2s"},
        "evaluate": {"interval": "5s"},  # a steady cycle takes ~2 s of the 2 cores the demo shares
        "rules": ["builtin"],
        # The simulated cluster runs at a quarter of real time: holds and windows shrink with it.
        "rule_overrides": {RULE: {"for": "15s", "keep_firing_for": "20s"},
                           CAUSE: {"over": "45s", "keep_firing_for": "20s"}},
        "notify": {"interval": "2s", "receivers": [{"type": "console", "name": "terminal"}]},
        # The pages link the incident on the demo daemon's own status page, open while the demo runs.
        "external_url": f"http://{HttpConfig().listen}",
    })


async def _wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"demo: {what} did not happen within {timeout_s:.0f}s")
        await asyncio.sleep(0.5)


def _alerts(daemon: Daemon, state: str, rule: str = RULE) -> list:
    return [a for a in daemon.tracker.active_alerts() if a.rule == rule and a.state == state]


async def run_demo(timeout_s: float = 240.0) -> int:
    """Run the scripted incident; returns 0 when the alert fired and resolved, 1 otherwise."""
    started = time.monotonic()
    sim = await start_simulator(
        "stuck-consumer", time_scale=TIME_SCALE, block_at=None, group_a=GROUP_A, group_b=GROUP_B
    )
    _say(
        f"simulated RocketMQ cluster up: namesrv {sim.namesrv_addr}, brokers "
        + ", ".join(f"{n} {a}" for n, a in sorted(sim.broker_addrs.items()))
        + f"; topic OrderTopic (8 queues) consumed by {GROUP_A} and {GROUP_B}"
    )
    with tempfile.TemporaryDirectory(prefix="rocketwatch-demo-") as tmp:
        daemon = Daemon(demo_config(sim.namesrv_addr, Path(tmp) / "state"))
        run = asyncio.create_task(daemon.run())
        remaining = lambda: timeout_s - (time.monotonic() - started)  # noqa: E731
        try:
            _say("rocketwatch starting (Spark warms up once, ~10 s)")
            await _wait_for(lambda: daemon.ready or run.done(), remaining(), "the first cycle")
            _say(
                f"incident: a consume thread of {GROUP_A} blocks on broker-a queue 3 (an HTTP call with "
                "no timeout); 3600 messages later a second one blocks on the same queue. The ProcessQueue "
                "keeps both, its span passes 2000 and the client stops pulling that queue."
            )
            await sim.trigger("block")
            await _wait_for(lambda: bool(_alerts(daemon, "firing")) or run.done(), remaining(), f"{RULE} firing")
            _say(f"{RULE} is the symptom; the lowest cached message of that queue has not moved: waiting for "
                 f"{CAUSE}, which explains it, to join the same incident (the message is updated, no new page)")
            await _wait_for(lambda: bool(_alerts(daemon, "firing", CAUSE)) or run.done(), remaining(), f"{CAUSE} firing")
            await _wait_for(lambda: daemon.outbox.depth() == 0 or run.done(), remaining(), "the update's delivery")
            _say(f"releasing the two blocked threads of {GROUP_A}: the commit offset jumps, pulling resumes")
            await sim.trigger("release")
            await _wait_for(
                lambda: not _alerts(daemon, "firing") and not _alerts(daemon, "firing", CAUSE)
                and daemon.outbox.depth() == 0 or run.done(),
                remaining(), f"{RULE} and {CAUSE} resolved",
            )
            others = [a for a in daemon.tracker.active_alerts() if a.labels.get("group") == GROUP_B]
            _say(
                f"done in {time.monotonic() - started:.0f}s: {RULE} and its cause {CAUSE} fired for {GROUP_A} "
                f"as one incident, one page, and resolved; "
                f"{GROUP_B} on the same topic raised {len(others)} alert(s)."
            )
            return 0 if not run.done() else 1
        except TimeoutError as exc:
            print(exc, file=sys.stderr)
            return 1
        finally:
            daemon.stop()
            await run
            await sim.stop()
