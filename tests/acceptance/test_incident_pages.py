"""One incident, one page (issue 36): every symptom scenario watched by one `rocketwatch run`.

Each scenario's simulated cluster is its own `clusters:` entry, named after the scenario, of ONE
daemon subprocess, so all the incidents play at once. Three receivers on loopback count what an
on-call person gets: the Slack Web API stand-in (a page is a top-level message: chat.postMessage
without thread_ts), a real SMTP server (a page is a thread: a mail without In-Reply-To) and a
webhook receiver (a page is a distinct `groupKey`). The notify settings are the defaults
(`group_by: [incident]`, no route, no inhibit rule); only the receivers are configured.

Per scenario the daemon must send one page, in each receiver, holding every alert it fired for
the scenario's incident (the webhook bodies name each alert by fingerprint; the daemon's state
database says which incident each alert is in), every later change inside that page (Slack
chat.update + a reply in its thread, a mail In-Reply-To the first one, the same groupKey), and
nothing for the healthy group orderConsumerB beside it. The test waits until each scenario's
alerts reached the webhook (EXPECTED: what the built-in pack fires on the scenario, late
consequences included, so a page that would come minutes later is seen), then two more
evaluations, and counts.

Beside the registry's scenarios, broker-crash: broker-down's broker-b dies while the daemon watches
(the registry's broker-down is dead from the start, so the daemon never sees it report). It
costs no time: its two alerts are one page since collector_health names the broker at an address.

bench/pages.py runs the same machinery with these and with the pre-issue-36 notify settings.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from daemon.simulator import SimulatorThread, build_scenario
from tests.helpers.daemon_proc import (
    evaluations,
    free_port,
    log_tail,
    start_daemon,
    wait_evaluations,
    wait_until,
)
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer
from tests.helpers.webhook_server import WebhookServer

# The fixture runs the daemon for a few minutes: until the slowest expected alert (a stall) fired.
pytestmark = [pytest.mark.acceptance, pytest.mark.spark, pytest.mark.timeout(1800)]

GROUP_A, GROUP_B = "orderConsumerA", "orderConsumerB"  # every scenario's sick and healthy group
SLACK_TOKEN = "xoxb-incident-pages"
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


# ---- what the receivers got -------------------------------------------------------------------


@dataclass
class Page:
    """One notification group (group key) as the three receivers saw it."""

    key: str
    slack_tops: int = 0  # chat.postMessage without thread_ts
    slack_replies: int = 0  # ... with the thread_ts of this group's top-level message
    slack_stray: int = 0  # ... with the thread_ts of another group's message, or of none
    mail_threads: int = 0  # mails without In-Reply-To
    mails: int = 0
    hook_posts: int = 0
    alerts: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # fingerprint -> (rule, labels)

    @property
    def clusters(self) -> set[str]:
        """The clusters its alerts are in."""
        return {labels.get("cluster", "") for _, labels in self.alerts.values()}

    @property
    def settled(self) -> bool:
        """Every notification of the group reached all three receivers."""
        return self.slack_tops + self.slack_replies + self.slack_stray == self.mails == self.hook_posts

    def show(self) -> str:
        """What each receiver got, then one line per alert."""
        rows = sorted(f"{rule} {where(labels)}" for rule, labels in self.alerts.values())
        return (f"{self.key}: Slack {self.slack_tops} top-level message(s) + {self.slack_replies} thread replies"
                f"{f' + {self.slack_stray} stray replies' if self.slack_stray else ''}, "
                f"{self.mail_threads} mail thread(s) of {self.mails} mails, {self.hook_posts} webhook POSTs; "
                f"{len(self.alerts)} alert(s):\n" + "\n".join(f"      {row}" for row in rows))


def where(labels: dict[str, str]) -> str:
    """An alert's location labels, for reading."""
    keys = ("group", "topic", "broker", "queue_id", "target")
    return " ".join(f"{k}={labels[k]}" for k in keys if labels.get(k))


class Receivers:
    """The Slack stand-in, the SMTP server and the webhook receiver, and what they received."""

    def __init__(self) -> None:
        self.slack = SlackServer(token=SLACK_TOKEN)
        self.smtp = SmtpServer()
        self.webhook = WebhookServer()

    def __enter__(self) -> Receivers:
        self.slack.start()
        self.smtp.start()
        self.webhook.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.webhook.stop()
        self.smtp.stop()
        self.slack.stop()

    def yaml(self) -> str:
        """notify.receivers' items for the three."""
        return (
            f'    - {{type: slack, name: oncall-slack, channel: "#mq-alerts", token_env: PAGES_SLACK_TOKEN, '
            f'base_url: "{self.slack.base_url}"}}\n'
            f"    - {{type: email, name: oncall-mail, host: 127.0.0.1, port: {self.smtp.port}, security: none, "
            f"from_addr: rocketwatch@example.com, to: [mq-oncall@example.com]}}\n"
            f'    - {{type: webhook, name: oncall-hook, url: "{self.webhook.url}"}}\n'
        )

    def pages(self) -> dict[str, Page]:
        """Group key -> what each receiver got for it (Slack's metadata and the mail's
        X-Rocketwatch-Group header carry the group key the webhook calls groupKey)."""
        pages: dict[str, Page] = {}

        def page(key: str) -> Page:
            return pages.setdefault(key, Page(key))

        with self.slack._lock:  # the server's thread appends while we read
            tops = dict(self.slack.messages)
            replies = list(self.slack.replies)
        top_key = {ts: _slack_group(message) for ts, message in tops.items()}
        for key in top_key.values():
            page(key).slack_tops += 1
        for reply in replies:
            key = _slack_group(reply)
            if top_key.get(reply.get("thread_ts")) == key:
                page(key).slack_replies += 1
            else:
                page(key).slack_stray += 1
        for mail in self.smtp.messages:
            # A long header is folded; a group key holds no whitespace of its own.
            p = page("".join(str(mail["X-Rocketwatch-Group"]).split()))
            p.mails += 1
            p.mail_threads += mail["In-Reply-To"] is None
        for body in list(self.webhook.bodies):
            p = page(body["groupKey"])
            p.hook_posts += 1
            for alert in body["alerts"]:
                labels = {k: v for k, v in alert["labels"].items() if k not in ("alertname", "severity")}
                p.alerts[alert["fingerprint"]] = (alert["labels"]["alertname"], labels)
        return pages

    def rules_of(self, cluster: str) -> set[str]:
        """Rules whose alerts of `cluster` reached the webhook."""
        return {alert["labels"]["alertname"] for body in list(self.webhook.bodies) for alert in body["alerts"]
                if alert["labels"].get("cluster") == cluster}


def _slack_group(message: dict[str, Any]) -> str:
    return str(((message.get("metadata") or {}).get("event_payload") or {}).get("group", "?"))


# ---- the daemon and the simulators ------------------------------------------------------------


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


def pages_of(pages: dict[str, Page], cluster: str) -> list[Page]:
    """The pages holding any alert of `cluster`."""
    return [p for p in pages.values() if cluster in p.clusters]


def healthy_group_alerts(pages: dict[str, Page]) -> list[str]:
    """Alerts of orderConsumerB that reached the webhook, one line each."""
    return [f"{p.key}: {rule} {where(labels)}" for p in pages.values() for rule, labels in p.alerts.values()
            if labels.get("group") == GROUP_B]


# ---- the tests --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """What the run left: the pages, the daemon's incidents, how far stuck-consumer played."""

    pages: dict[str, Page]
    incidents: dict[str, Incident]
    stuck_minutes_after_block: float  # scenario minutes (model time / time scale)


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Observed:
    """Every scenario watched by one daemon until its alerts arrived; the daemon stopped before the asserts."""
    tmp = tmp_path_factory.mktemp("incident-pages")
    with watching(tmp, EXPECTED) as run:
        run.wait_for(EXPECTED)
        stuck = run.sims[STUCK]

        def played() -> float:  # scenario minutes since the block
            blocked_at = next(t for t, action in stuck.sim.scenario.log if action == "block")  # type: ignore[union-attr]
            return (stuck.inspect(lambda model: model.now) - blocked_at) / STUCK_TIME_SCALE / 60

        # The check watches seven minutes of the incident: later pages would arrive in them.
        wait_until(lambda: played() > 7, 300, "seven scenario minutes of stuck-consumer after its block", run.log)
        wait_evaluations(run.base, 2, run.log)
        pages = run.settle()
        incidents = run.incidents()
        minutes = played()
    return Observed(pages, incidents, minutes)


def _split(name: str, obs: Observed) -> str:
    """Why a scenario's alerts came as more than one page: each page, and each incident it is in."""
    pages = pages_of(obs.pages, name)
    incidents = [i for i in obs.incidents.values() if i.cluster == name]
    return (f"{name}: {len(pages)} page(s), {len(incidents)} incident(s)\n  pages:\n"
            + "\n".join(f"    {p.show()}" for p in pages)
            + "\n  incidents:\n" + "\n".join(f"    {i.show()}" for i in incidents))


# broker-crash: CollectorTargetUnreachable names the broker at its address (collector_health's `broker`),
# so it explains BrokerStoppedReporting of that broker when its figures go stale: one incident.
@pytest.mark.parametrize("name", [*SCENARIOS, CRASH])
def test_the_scenario_is_one_page_holding_every_alert_of_its_incident(name: str, observed: Observed) -> None:
    pages = pages_of(observed.pages, name)
    incidents = [i for i in observed.incidents.values() if i.cluster == name]
    assert len(pages) == 1 and len(incidents) == 1, _split(name, observed)
    page, incident = pages[0], incidents[0]
    assert page.key == f'{{incident="{incident.id}"}}', _split(name, observed)
    # One top-level Slack message, one mail thread, one groupKey; every later change inside them.
    assert (page.slack_tops, page.mail_threads, page.slack_stray) == (1, 1, 0), _split(name, observed)
    assert page.settled, _split(name, observed)
    # It holds every alert of the incident, and the incident every alert the scenario fired.
    assert set(page.alerts) == set(incident.members), _split(name, observed)
    assert EXPECTED[name] <= {rule for rule, _ in page.alerts.values()}, _split(name, observed)


def test_nothing_is_paged_for_the_healthy_group(observed: Observed) -> None:
    assert healthy_group_alerts(observed.pages) == []
    others = [p.show() for p in observed.pages.values() if not p.clusters & set(EXPECTED)]
    assert others == [], "pages about none of the scenarios' clusters"


def test_stuck_consumer_is_one_group_key_with_at_least_two_alerts_and_nothing_for_group_b(observed: Observed) -> None:
    # The check: default notify settings, one webhook receiver (the Slack and mail receivers
    # beside it change nothing it gets: without a route every receiver gets every group), seven
    # minutes of the scenario at least (it plays at a quarter of its times; the fixture waits for them).
    assert observed.stuck_minutes_after_block > 7
    hooks = [p for p in observed.pages.values() if p.hook_posts]
    group_a = [p for p in hooks if any(labels.get("cluster") == STUCK and labels.get("group") == GROUP_A
                                       for _, labels in p.alerts.values())]
    assert len(group_a) == 1, _split(STUCK, observed)
    assert len(group_a[0].alerts) >= 2, group_a[0].show()
    assert not [p for p in hooks if any(labels.get("cluster") == STUCK and labels.get("group") == GROUP_B
                                        for _, labels in p.alerts.values())]
