"""`rocketwatch analyze` on the real 4.9.7 logs, store and thread dumps, and on a generated incident
with slow puts: the report names the group, queue, client and cause; the HTML renders in Chromium."""

from __future__ import annotations

import asyncio
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from daemon.cli import main
from daemon.offline.analyze import render
from daemon.offline.analyze.report import Report, analyze
from daemon.offline.storedir import read_store_dir
from tests.fixtures_path import CAPTURE
from tests.helpers.chromium import Chromium, chromium_path

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> Path:
    """The capture laid out as an operator would bring it: logs/, a store dir, a directory of jstacks."""
    root = tmp_path_factory.mktemp("incident")
    shutil.copytree(CAPTURE / "logs", root / "logs")
    store = root / "broker-a-store"
    shutil.copytree(CAPTURE / "store" / "config", store / "config")
    shutil.copy(CAPTURE / "store" / "checkpoint", store / "checkpoint")
    with tarfile.open(CAPTURE / "store" / "consumequeue_AuditTopic_RETRY_DLQ_failGroup.tar.gz") as tar:
        tar.extractall(store, filter="data")
    shutil.copytree(CAPTURE / "jstack", root / "jstack-stuck-consumer-5764")
    (root / "logs" / "notes.txt").write_text("what the on-call wrote down\n")
    return root


@pytest.fixture(scope="module")
def incident_report(incident, spark) -> Report:
    """The incident analyzed once for the module (a replay of the built-in rules: half a minute on 2 cores);
    the report test reads it, the Chromium test renders it. analyze with no --cluster and no --broker is
    test_analyze_sentences.py's."""
    return analyze([incident], cluster="DefaultCluster", broker="broker-a", spark=spark)


def test_store_dir_offsets_match_the_readme(incident):
    store = read_store_dir(incident / "broker-a-store", "DefaultCluster", "broker-a")
    maxima = {(r["topic"], r["queue_id"]): r["max_offset"] for r in store.rows["topic_queue"]}
    assert maxima == {("AuditTopic", 0): 460, ("AuditTopic", 1): 461, ("AuditTopic", 2): 461, ("AuditTopic", 3): 460,
                      ("%RETRY%failGroup", 0): 3684, ("%DLQ%failGroup", 0): 1842}
    assert store.facts["dlq"] == {"failGroup": 1842}
    assert store.facts["committed"]["OrderTopic@stuckGroup"][3] == 0  # the stuck message's queue
    assert str(store.facts["snapshot_ts"]) == "2026-11-21 23:40:22.079000+00:00"  # checkpoint, logics
    lags = {(r["group"], r["queue_id"]): r["broker_offset"] - r["consumer_offset"]
            for r in store.rows["consumer_queue"] if r["topic"] == "AuditTopic"}
    assert lags[("slowGroup", 0)] == 460 - 386


def test_the_report_names_group_queue_client_and_cause(incident_report: Report):
    report = incident_report
    said = [f"{f.subject}: {f.what} | " + " | ".join(f.evidence) for f in report.findings]
    stuck = [s for s in said if s.startswith("stuckGroup: consume thread")]
    assert [s.split()[3] for s in stuck] == ["ConsumeMessageThread_stuckGroup_2", "ConsumeMessageThread_stuckGroup_3"]
    assert all("(sleep)" in s and "cap.Cons.lambda$main$0(Cons.java:34)" in s for s in stuck)
    (flow,) = [s for s in said if "flow control (span)" in s]
    assert "OrderTopic/broker-a/3" in flow and "span up to 3626" in flow and "192.0.2.2@5764" in flow
    assert any("OrderTopic queue 3: committed offset 0" in s for s in said)
    assert any(s.startswith("failGroup: 1842 message(s) in %DLQ%failGroup") for s in said)
    assert not any(s.startswith("healthyGroup") for s in said)  # the healthy group is not blamed
    assert any("/".join(("", "logs", "notes.txt")) in str(p) for p, _ in report.skipped)

    text = render.text(report)
    assert "WHAT WAS FOUND" in text and "rebalance_assigned" in text and "8 queue(s)" in text
    data = json.loads(render.as_json(report))
    assert {t["thread"] for t in data["stuck_threads"]} == {"ConsumeMessageThread_stuckGroup_2",
                                                            "ConsumeMessageThread_stuckGroup_3"}
    assert data["span"][0].startswith("2026-11-21T23:35:36")


def test_a_generated_incident_with_slow_puts_fires_the_broker_rule(tmp_path, spark):
    minute = ("2026-11-22 08:{m:02d}:00 INFO StoreStatsService - [PAGECACHERT] TotalPut 1000, PutMessageDistributeTime "
              "[<=0ms]:100 [0~10ms]:600 [10~50ms]:40 [50~100ms]:20 [100~200ms]:15 [200~500ms]:10 [500ms~1s]:{slow} "
              "[1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 \n")
    logs = tmp_path / "broker-b_0"
    logs.mkdir()
    (logs / "store.log").write_text("".join(minute.format(m=m, slow=0 if m < 3 else 200) for m in range(10))
                                    + "2026-11-22 08:10:0\n")  # cut mid-line by the copy
    report = analyze([tmp_path], cluster="prod", spark=spark)
    fired = {(t.rule, t.labels.get("broker")) for t in report.timeline if t.state == "firing"}
    assert ("BrokerPutLatencyHigh", "broker-b") in fired
    (slow,) = [f for f in report.findings if "puts of 500 ms or more" in f.what]
    assert slow.subject == "broker-b" and "7 minute(s)" in slow.what
    (problem,) = report.problems
    assert str(problem).startswith(f"{logs / 'store.log'}:11: unreadable store log record")


def test_cli_writes_json_and_html_and_says_when_there_is_nothing_to_read(incident, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert main(["analyze", str(incident / "logs" / "rocketmq_client_stuckGroup.log"), "--format", "json",
                 "--html", str(page)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [e["queue_id"] for e in data["events"] if e["event"] == "flow_control_span"] == [3] * 5
    assert "<svg" in page.read_text() and "http" not in page.read_text().split("<body>")[0].replace("charset", "")
    assert main(["analyze", str(incident / "logs" / "notes.txt")]) == 2
    assert "nothing to analyze" in capsys.readouterr().err


@pytest.mark.skipif(chromium_path() is None, reason="Debian's chromium is not installed")
def test_the_html_report_renders_in_chromium_without_errors(incident_report: Report, tmp_path):
    page_path = tmp_path / "report.html"
    page_path.write_text(render.html(incident_report))

    async def look() -> None:
        async with Chromium(tmp_path) as page:
            await page.navigate(page_path.as_uri())
            text = await page.evaluate("document.body.innerText")
            assert "What was found" in text and "ConsumeMessageThread_stuckGroup_2" in text
            assert await page.evaluate("document.querySelectorAll('svg polyline').length") >= 1
            shot = await page.screenshot(tmp_path / "analyze-report.png")
            assert shot.stat().st_size > 10_000
            assert page.console_errors() == []

    asyncio.run(look())
