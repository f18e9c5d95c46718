"""`rocketwatch simulate`: the simulated cluster alone in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys


def cmd_simulate(args: argparse.Namespace) -> int:
    """Run the simulated cluster alone in the foreground, so any tool can be pointed at it."""
    from daemon.simulator import list_scenarios, start_simulator

    if args.list:
        print("times are at --time-scale 1 from when serving starts; `From the start` means already there")
        for name, description in list_scenarios().items():
            print(f"{name:<18} {description}")
        return 0
    if args.time_scale <= 0:
        print("rocketwatch simulate: --time-scale must be more than 0", file=sys.stderr)
        return 2
    host, _, port = args.listen.rpartition(":")

    async def serve() -> None:
        sim = await start_simulator(args.scenario, host=host or "127.0.0.1", namesrv_port=int(port or 0),
                                    server_version=args.broker_version, time_scale=args.time_scale)
        print(f"scenario {args.scenario}: namesrv {sim.namesrv_addr}", flush=True)
        for name, addr in sorted(sim.broker_addrs.items()):
            print(f"  broker {name} {addr}", flush=True)
        if sim.metrics_port:
            print(f"  native metrics http://{sim.host}:{sim.metrics_port}/metrics "
                  f"(native_metrics: {{port: {sim.metrics_port}}})", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await sim.stop()

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve())
    except (KeyError, ValueError) as exc:  # an unknown scenario or broker version
        print(f"rocketwatch simulate: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `simulate` to the rocketwatch command."""
    simulate = sub.add_parser("simulate", help="run the simulated cluster in the foreground")
    simulate.add_argument("--scenario", default="healthy")
    simulate.add_argument("--listen", default="127.0.0.1:9876", help="namesrv address (brokers get free ports)")
    simulate.add_argument("--list", action="store_true", help="list the scenarios")
    simulate.add_argument("--broker-version", type=int, default=None,
                          help="MQVersion ordinal the brokers answer with: 407 = 4.9.7 (the default, but for the "
                               "5.x scenarios: 479), 479 = 5.3.3")
    simulate.add_argument("--time-scale", type=float, default=1.0,
                          help="multiply the scenario's event times by this (0.1: ten times sooner)")
    simulate.set_defaults(func=cmd_simulate)
