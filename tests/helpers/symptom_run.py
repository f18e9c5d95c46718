"""Every symptom scenario watched by one `rocketwatch run` subprocess: each scenario's simulated cluster
is its own `clusters:` entry, named after the scenario, so all the incidents play at once; the rules'
holds are a quarter of the built-in ones so the run takes minutes. The daemon's incidents are read from
its state database. Used by tests/acceptance/test_incident_pages.py and bench/pages.py."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.simulator import SimulatorThread, build_scenario
from tests.helpers.daemon_proc import (
    evaluations,
    free_port,
    log_tail,
    start_daemon,
    wait_evaluations,
    wait_until,
)
from tests.helpers.pages_received import SLACK_TOKEN, Page, Receivers, where

GROUP_A, GROUP_B = "orderConsumerA", "orderConsumerB"  # every scenario's sick and healthy group
STUCK = "stuck-consumer"
STUCK_TIME_SCALE = 0.25
# Not a registry scenario: broker-down's broker-b, serving until the daemon's first cycle, then refused.
CRASH = "broker-crash"

# Scenario -> the rules whose alerts must have reached the webhook before pages are counted: what
# the built-in pack fires on it within the run (the scenario's own symptom, tests/scenarios/, and
# the consequences its rules' `explains:` links name, the slowest a stall: OVER_OVERRIDES).
EXPECTED: dict[str, frozenset[str]] = {
    "stuck-consumer": frozenset({"ProcessQueueSpanTooLong", "ConsumptionBlocked", "StuckMessage",
                                 "ConsumerOffsetStalled", "ConsumeDelayHigh", "OneGroupLagging"}),
    "stuck-far-apart": frozenset({"ProcessQueueSpanTooLong", "ConsumptionBlocked", "StuckMessage",
                                  "ConsumerOffsetStalled", "ConsumeDelayHigh", "OneGroupLagging"}),
    "blocked-consumer": frozenset({"ConsumptionBlocked", "ProcessQueueCachedCountHigh", "StuckMessage",
                                   "ConsumerOffsetStalled", "ConsumeDelayHigh", "OneGroupLagging"}),
    "group-offline": frozenset({"ConsumerGroupOffline", "OneGroupLagging", "ConsumeDelayHigh",
                                "ConsumerOffsetStalled"}),
    "broker-down": frozenset({"CollectorTargetUnreachable"}),
    "retry-storm": frozenset({"RebalanceChurn"}),
    "dlq-growth": frozenset({"DeadLetterQueueGrowing"}),
    "one-group-lagging": frozenset({"ProcessQueueCachedCountHigh", "OneGroupLagging", "ConsumeDelayHigh"}),
    CRASH: frozenset({"CollectorTargetUnreachable", "BrokerStoppedReporting"}),
}
SCENARIOS = tuple(name for name in EXPECTED if name != CRASH)  # the registry's (issue 36's list)

# Shorter rule holds, so the run takes minutes rather than a quarter of an hour: each threshold
# rule's `for:` and each stall rule's `over:` window is a quarter of the built-in one, which keeps
# the order they fire in (the stuck-consumer scenario plays at a quarter of its times too).
FOR_OVERRIDES: dict[str, str] = {
    "ProcessQueueSpanTooLong": "15s",
    "ProcessQueueCachedCountHigh": "15s",
    "ProcessQueueCachedSizeHigh": "15s",
    "ConsumptionBlocked": "8s",
    "ConsumeDelayHigh": "30s",
    "ConsumerGroupOffline": "30s",
    "OneGroupLagging": "75s",
    "AllGroupsLagging": "75s",
    "QueueHeldByTwoClients": "15s",
    "CollectorTargetUnreachable": "15s",
    "CollectionDegraded": "30s",
}
OVER_OVERRIDES: dict[str, str] = {"StuckMessage": "45s", "ConsumerOffsetStalled": "75s"}
# Levels crossed by what grows with the clock once a queue stops (the consume delay, an age; the lag,
# at the simulated write rate) are a quarter of the built-in ones too: at the built-in levels these
# two rules fired 4-6 minutes into the run, last of all.
ABOVE_OVERRIDES: dict[str, str] = {"ConsumeDelayHigh": "{warning: 75, critical: 450}",
                                   "OneGroupLagging": "{warning: 2500, critical: 25000}"}

# The notify settings before issue 36: one group per rule and consumer group, and a critical
# broker-side alert muting the consumer-side ones on its broker (the old default inhibit rule).
LEGACY_NOTIFY = """  group_by: [alertname, cluster, group]
  inhibit_rules:
    - source_matchers: ['category="broker"', 'severity="critical"']
      target_matchers: ['category="consumer"']
      equal: [cluster, broker]
"""


@dataclass(frozen=True)
class Incident:
    """One incident from the daemon's state database."""

    id: str
    locus: dict[str, str]
    root: str  # fingerprint
    members: dict[str, dict[str, Any]]  # fingerprint -> rule, labels, cause (fingerprint), joined_at, resolved_at

    @property
    def cluster(self) -> str:
        """The cluster it happens in."""
        return self.locus.get("cluster", "")

    def show(self) -> str:
        """Its locus, root and members with what explains each."""
        rule = {fp: m["rule"] for fp, m in self.members.items()}
        lines = [f"incident {self.id} (opened where {self.locus}), root {rule.get(self.root, self.root)}"]
        for fp, m in sorted(self.members.items(), key=lambda kv: (kv[1]["joined_at"], kv[1]["rule"])):
            how = ("root" if fp == self.root else
                   f"explained by {rule.get(m['cause'], m['cause'])}" if m["cause"] else "same place, no link")
            ended = f", resolved {m['resolved_at']}" if m.get("resolved_at") else ""
            lines.append(f"      {m['joined_at']} {m['rule']} {where(m['labels'])} ({how}{ended})")
        return "\n".join(lines)


def daemon_config(tmp: Path, sims: dict[str, SimulatorThread], receivers: Receivers, http_port: int,
                  notify: str = "") -> Path:
    """One cluster per scenario, 3 s cycles, the rules' holds shortened, `notify` settings (default: none)."""
    clusters = "".join(f'  - {{name: {name}, namesrv: ["{sim.namesrv_addr}"]}}\n' for name, sim in sims.items())
    fields: dict[str, list[str]] = {}
    for setting, values in (("for", FOR_OVERRIDES), ("over", OVER_OVERRIDES), ("above", ABOVE_OVERRIDES)):
        for rule, value in values.items():
            fields.setdefault(rule, []).append(f"{setting}: {value}")
    overrides = "".join(f"  {rule}: {{{', '.join(items)}}}\n" for rule, items in fields.items())
    path = tmp / "rocketwatch.yaml"
    path.write_text(
        f"""clusters:
{clusters}state_dir: {tmp / "state"}
collect: {{interval: 3s, timeout: 2s}}
# The clusters, Spark and the simulators share two cores: a late collection must not make a firing
# alert's series stale (no data) and flap it into a second incident.
evaluate: {{interval: 3s, stale_after: 15s}}
http: {{listen: "127.0.0.1:{http_port}"}}
rule_overrides:
{overrides}notify:
{notify}  receivers:
{receivers.yaml()}"""
    )
    return path


def _simulator(name: str) -> SimulatorThread:
    if name == STUCK:
        # A quarter of its times (the burst in 1.5 s); it blocks once the daemon has a healthy cycle.
        return SimulatorThread(name, cluster=name, time_scale=STUCK_TIME_SCALE, block_at=None)
    if name == CRASH:
        scenario = build_scenario("broker-down", cluster=name)
        scenario.broker_faults = {}  # broker-b serves until the daemon has seen it (Run.start)
        return SimulatorThread(scenario)
    # The symptom scenarios arrive with their incident under way (daemon/simulator/scenarios_symptoms.py).
    return SimulatorThread(name, cluster=name)


@dataclass
class Run:
    """A `rocketwatch run` subprocess watching the scenarios' simulators, and its receivers."""

    tmp: Path
    sims: dict[str, SimulatorThread]
    receivers: Receivers
    notify: str = ""
    proc: subprocess.Popen | None = None
    base: str = ""
    returncode: int | None = None

    @property
    def log(self) -> Path:
        """The daemon's stdout and stderr."""
        return self.tmp / "daemon.log"

    def start(self) -> None:
        """Start the daemon; once its first cycle is in, stuck-consumer blocks and broker-crash's broker dies."""
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        config = daemon_config(self.tmp, self.sims, self.receivers, port, self.notify)
        self.proc = start_daemon(config, self.log, {"PAGES_SLACK_TOKEN": SLACK_TOKEN})
        wait_until(lambda: "first cycle complete" in self.log.read_text(), 300, "the daemon's first cycle", self.log)
        if STUCK in self.sims:
            self.sims[STUCK].trigger("block")
        if CRASH in self.sims:
            self.sims[CRASH].set_fault("broker-b", refuse=True)

    def stop(self) -> int:
        """SIGTERM, and the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.returncode = self.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.returncode = self.proc.wait(10)
        return self.returncode

    def fired(self, cluster: str) -> set[str]:
        """Rules of the alerts the daemon fired in `cluster` (its incidents' members)."""
        return {m["rule"] for i in self.incidents().values() if i.cluster == cluster for m in i.members.values()}

    def wait_for(self, expected: dict[str, frozenset[str]], at_receivers: bool = True, timeout: float = 1200) -> None:
        """Until every scenario's expected rules fired (and reached the webhook, unless `at_receivers`
        is false: an inhibit rule may mute them), then two more evaluations."""
        seen = self.receivers.rules_of if at_receivers else self.fired

        def missing() -> dict[str, set[str]]:
            return {name: gap for name, rules in expected.items() if (gap := set(rules) - seen(name))}

        where = "at the webhook" if at_receivers else "fired"
        try:
            wait_until(lambda: not missing(), timeout, f"every scenario's alerts {where}", self.log)
        except AssertionError as exc:
            raise AssertionError(f"still missing {missing()}: {exc}") from None
        # Evaluations never overlap and each ends by delivering what it queued: two more mean at
        # least one whole evaluate-and-deliver cycle ran after the last expected alert.
        wait_evaluations(self.base, 2, self.log)

    def settle(self, timeout: float = 60) -> dict[str, Page]:
        """The pages once every notification reached all three receivers (or as they are after `timeout`)."""
        with contextlib.suppress(AssertionError):
            wait_until(lambda: all(p.settled for p in self.receivers.pages().values()), timeout,
                       "every notification at all three receivers", self.log)
        return self.receivers.pages()

    def evaluations(self) -> int:
        """Evaluations the daemon completed."""
        return evaluations(self.base)

    def incidents(self) -> dict[str, Incident]:
        """The daemon's incidents, read from its state database (read-only, beside the running daemon)."""
        path = self.tmp / "state" / "state.db"
        if not path.exists():
            return {}
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        try:
            rows = db.execute("SELECT id, locus, root FROM incidents").fetchall()
            members = db.execute("SELECT * FROM incident_members").fetchall()
        except sqlite3.OperationalError:  # not created yet
            return {}
        finally:
            db.close()
        found = {r["id"]: Incident(r["id"], json.loads(r["locus"]), r["root"], {}) for r in rows}
        for r in members:
            if r["incident"] in found:
                found[r["incident"]].members[r["fingerprint"]] = {
                    "rule": r["rule"], "labels": json.loads(r["labels"]), "cause": r["cause"],
                    "joined_at": r["joined_at"], "resolved_at": r["resolved_at"]}
        return found


@contextlib.contextmanager
def watching(tmp: Path, names: Iterable[str], notify: str = "") -> Iterator[Run]:
    """Each scenario's simulator, the receivers and a daemon watching them; SIGTERM on the way out."""
    with contextlib.ExitStack() as stack:
        sims = {name: stack.enter_context(_simulator(name)) for name in names}
        receivers = stack.enter_context(Receivers())
        run = Run(tmp, sims, receivers, notify)
        try:
            run.start()
            yield run
        except BaseException:
            if run.log.exists():
                print(f"daemon log tail:\n{log_tail(run.log, 80)}")
            raise
        finally:
            if run.proc is not None and run.proc.poll() is None:
                run.stop()


def healthy_group_alerts(pages: dict[str, Page]) -> list[str]:
    """Alerts of orderConsumerB that reached the webhook, one line each."""
    return [f"{p.key}: {rule} {where(labels)}" for p in pages.values() for rule, labels in p.alerts.values()
            if labels.get("group") == GROUP_B]
