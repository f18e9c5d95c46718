"""A growing timer backlog and unresolved half messages on 5.3.3 clusters: each one page naming its cause (issue 45).

ONE `rocketwatch run` watches two simulated 5.3.3 clusters (native /metrics on), each its own
`clusters:` entry named after its scenario: `timer-backlog` (a producer schedules timer messages
on TimerTopic, due in an hour, faster than any fall due) and `half-unresolved` (one transaction in
five on TxTopic stays half: the producer's checker answers UNKNOW). Built-in rules and the default
notify settings with one webhook receiver; only the windows and holds are shortened
(OVERRIDES), and the rates raised so a 30 s window grows past the rules' default levels. Each
cluster's alerts must come as one page (one webhook groupKey) holding the rule that names the
cause (the topic); the healthy groups beside (orderConsumer and timerGroup, txGroup) get nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from daemon.simulator import SimulatorThread
from tests.helpers.daemon_proc import free_port, start_daemon, wait_evaluations, wait_until
from tests.helpers.webhook_server import WebhookServer

pytestmark = [pytest.mark.acceptance, pytest.mark.spark, pytest.mark.timeout(600)]

TIMER, HALF = "timer-backlog", "half-unresolved"
TIME_SCALE = 0.1  # the scenarios' trouble at 6 s instead of 60 s; message rates stay per real second
TIMER_RATE = 5000.0  # timer messages/s: 150,000 in a 30 s window, past TimerBacklogGrowing's 100,000
TX_RATE = 25.0  # transactions/s, one in five stays half: 150 in a 30 s window, past HalfMessagesGrowing's 100
OVERRIDES = {rule: "{over: 30s, for: 6s}" for rule in
             ("TimerBacklogGrowing", "TimerTopicBacklogGrowing", "HalfMessagesGrowing")}
# What must reach the webhook before the pages are counted: the cause, and what it explains.
EXPECTED = {TIMER: {"TimerTopicBacklogGrowing", "TimerBacklogGrowing"}, HALF: {"HalfMessagesGrowing"}}
CAUSE = {TIMER: ("TimerTopicBacklogGrowing", "TimerTopic"), HALF: ("HalfMessagesGrowing", "TxTopic")}
HEALTHY_GROUPS = {"orderConsumer", "timerGroup", "txGroup"}


def _config(tmp: Path, sims: dict[str, SimulatorThread], hook: WebhookServer, port: int) -> Path:
    clusters = "".join(f'  - {{name: {name}, namesrv: ["{sim.namesrv_addr}"], '
                       f"native_metrics: {{port: {sim.metrics_port}}}}}\n" for name, sim in sims.items())
    overrides = "".join(f"  {rule}: {value}\n" for rule, value in OVERRIDES.items())
    path = tmp / "rocketwatch.yaml"
    path.write_text(f"""clusters:
{clusters}state_dir: {tmp / "state"}
collect: {{interval: 3s, timeout: 2s}}
evaluate: {{interval: 3s, stale_after: 15s}}
http: {{listen: "127.0.0.1:{port}"}}
rule_overrides:
{overrides}notify:
  interval: 1s
  receivers:
    - {{type: webhook, name: oncall-hook, url: "{hook.url}"}}
""")
    return path


def _alerts(hook: WebhookServer) -> list[tuple[str, dict[str, Any]]]:
    """(groupKey, labels) of every alert the webhook received."""
    return [(b["groupKey"], a["labels"]) for b in list(hook.bodies) for a in b["alerts"]]


def _rules_at_webhook(hook: WebhookServer, cluster: str) -> set[str]:
    return {labels["alertname"] for _, labels in _alerts(hook) if labels.get("cluster") == cluster}


def test_a_timer_backlog_and_unresolved_half_messages_are_each_one_page_naming_the_cause(tmp_path: Path) -> None:
    with (SimulatorThread(TIMER, cluster=TIMER, time_scale=TIME_SCALE, rate=TIMER_RATE) as timer,
          SimulatorThread(HALF, cluster=HALF, time_scale=TIME_SCALE, rate=TX_RATE) as half,
          WebhookServer() as hook):
        port = free_port()
        log = tmp_path / "daemon.log"
        proc = start_daemon(_config(tmp_path, {TIMER: timer, HALF: half}, hook, port), log, {})
        try:
            wait_until(lambda: "first cycle complete" in log.read_text(), 300, "the daemon's first cycle", log)
            wait_until(lambda: all(rules <= _rules_at_webhook(hook, cluster) for cluster, rules in EXPECTED.items()),
                       240, f"{EXPECTED} at the webhook", log)
            wait_evaluations(f"http://127.0.0.1:{port}", 2, log)  # a late consequence joins the same page
        finally:
            proc.terminate()
            try:
                proc.wait(90)
            except subprocess.TimeoutExpired:
                proc.kill()
    alerts = _alerts(hook)
    for cluster, (cause, topic) in CAUSE.items():
        # The scenario's symptom: the timer or transaction rules (a slow collection on two shared cores
        # may page CollectionDegraded beside it, which is about rocketwatch's calls, not this incident).
        keys = {key for key, labels in alerts if labels.get("cluster") == cluster
                and labels["alertname"].startswith(("Timer", "Half"))}
        assert len(keys) == 1, f"{cluster}'s alerts came as {len(keys)} pages: {keys}"
        named = [labels for _, labels in alerts if labels.get("cluster") == cluster and labels["alertname"] == cause]
        assert named and all(labels.get("topic") == topic for labels in named), named
    healthy = [labels for _, labels in alerts if labels.get("group") in HEALTHY_GROUPS]
    assert not healthy, f"healthy groups paged: {healthy}"
