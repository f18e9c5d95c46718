"""A stuck pop-mode consumer on a 5.3.3 cluster is one page naming its cause (issue 45).

`simulate`'s pop-stuck scenario (served as 5.3.3, its native /metrics page on) watched by `rocketwatch
run` with the built-in rules and the default notify settings, one webhook receiver. popGroup's four
consume threads block; its client stops popping once more than popThresholdForQueue (96) popped
messages wait for their ack. The page must come as one webhook group whose alerts include
PopConsumerStuck (the cause) and any consequence it explains, within the rule's 15 s level plus its
`for` plus two intervals of the client reaching its threshold (plus one for the collection and 10 s of
Spark's slack on two shared cores); nothing for mailGroup beside it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from daemon.simulator import SimulatorThread
from tests.helpers.daemon_proc import free_port, start_daemon, wait_evaluations, wait_until
from tests.helpers.webhook_server import WebhookServer

pytestmark = [pytest.mark.acceptance, pytest.mark.spark, pytest.mark.timeout(600)]

INTERVAL_S = 3
FOR_S = 15  # PopConsumerStuck's `for`, shortened from 1m with the intervals
LEVEL_S = 15  # its warning level: seconds without a pop


def _config(tmp: Path, sim: SimulatorThread, hook: WebhookServer, port: int) -> Path:
    path = tmp / "rocketwatch.yaml"
    path.write_text(f"""clusters:
  - name: DefaultCluster
    namesrv: ["{sim.namesrv_addr}"]
    native_metrics: {{port: {sim.metrics_port}}}
state_dir: {tmp / "state"}
collect: {{interval: {INTERVAL_S}s, timeout: 2s}}
evaluate: {{interval: {INTERVAL_S}s, stale_after: 15s}}
http: {{listen: "127.0.0.1:{port}"}}
rule_overrides:
  PopConsumerStuck: {{for: {FOR_S}s}}
notify:
  interval: 1s
  receivers:
    - {{type: webhook, name: oncall-hook, url: "{hook.url}"}}
""")
    return path


def _over_threshold(sim: SimulatorThread) -> bool:
    return sim.inspect(lambda m: any(len(pq.wait_ack) > c.pop.settings.threshold_for_queue
                                     for c in m.groups["popGroup"].clients if c.pop for pq in c.pop.queues))


def test_a_stuck_pop_consumer_is_one_page_that_names_its_cause(tmp_path: Path) -> None:
    with SimulatorThread("pop-stuck") as sim, WebhookServer() as hook:
        port = free_port()
        log = tmp_path / "daemon.log"
        proc = start_daemon(_config(tmp_path, sim, hook, port), log, {})
        try:
            wait_until(lambda: "first cycle complete" in log.read_text(), 300, "the daemon's first cycle", log)
            sim.trigger("block")  # unless the scenario's own 60 s came first
            wait_until(lambda: _over_threshold(sim), 60, "popGroup's client past its threshold", log)

            def paged() -> bool:
                return any(a["labels"]["alertname"] == "PopConsumerStuck" for b in hook.bodies for a in b["alerts"])

            # Within its level, its `for` and two intervals of the client reaching its threshold (plus
            # the one interval the collection may take to see it): the wait's limit is the bound.
            wait_until(paged, LEVEL_S + FOR_S + 3 * INTERVAL_S + 10, "PopConsumerStuck at the webhook", log)
            wait_evaluations(f"http://127.0.0.1:{port}", 2, log)  # a late consequence joins the same page
        finally:
            proc.terminate()
            try:
                proc.wait(90)
            except subprocess.TimeoutExpired:
                proc.kill()
    bodies = list(hook.bodies)
    pop_keys = {b["groupKey"] for b in bodies for a in b["alerts"] if a["labels"].get("group") == "popGroup"}
    assert len(pop_keys) == 1, f"popGroup's alerts came as {len(pop_keys)} pages: {pop_keys}"
    (key,) = pop_keys
    rules = {a["labels"]["alertname"] for b in bodies if b["groupKey"] == key for a in b["alerts"]}
    assert "PopConsumerStuck" in rules and not rules - {
        "PopConsumerStuck", "ConsumerOffsetStalled", "PopConsumerBrokerSideStalled", "PopMessagesRevived",
        "ConsumeDelayHigh", "OneGroupLagging"}, rules
    assert not [a for b in bodies for a in b["alerts"] if a["labels"].get("group") == "mailGroup"]
