"""Pages that reach people and lead somewhere (issue 44): the incident and silence links on every page,
"Cause found" and "Resolved" broadcast to the channel, a mention on a critical first page, compact
receivers, generatorURL on webhook alerts, and `check` warning about links nobody can act on."""

from __future__ import annotations

import html
import subprocess
import sys
from urllib.parse import quote

from config.receivers import EmailReceiver, SlackReceiver, WebhookReceiver
from daemon.notify import render
from daemon.notify.factory import build_notifiers
from rules.findings import Finding
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer
from tests.helpers.stuck_thread_incident import (
    CAUSE_FOUND_WHY,
    CONSEQUENCE_FIRST,
    RESOLVED,
    TOKEN,
    Pipeline,
    play,
    span,
    stuck,
)
from tests.helpers.webhook_server import WebhookServer

EXTERNAL = "https://rocketwatch.example.com/ops"


def slack(server: SlackServer, **options) -> SlackReceiver:
    return SlackReceiver(type="slack", name="slack", channel="#mq", token_env="T", base_url=server.base_url, timeout=5,
                         **options)


def test_cause_found_and_resolved_reach_the_channel_other_replies_stay_in_the_thread(db):  # noqa: F811
    pipeline = Pipeline(db, ["slack"])
    with SlackServer(token=TOKEN) as server:
        play(pipeline, CONSEQUENCE_FIRST, build_notifiers([slack(server)], {"T": TOKEN}, external_url=EXTERNAL))
        replies = [c.args for c in server.calls_to("chat.postMessage") if "thread_ts" in c.args]
    said = {html.unescape(r["text"]).splitlines()[0]: r.get("reply_broadcast") for r in replies}
    assert said[f":mag: {CAUSE_FOUND_WHY}"] is True
    assert said[f":white_check_mark: {RESOLVED}"] is True
    quiet = [text for text, broadcast in said.items() if not broadcast]
    assert len(quiet) == len(replies) - 2 and all(text.startswith((":large_orange_circle:", ":white_check_mark: resolved"))
                                                   for text in quiet), quiet
    incident = f"{EXTERNAL}/incidents/"
    assert all(incident in r["text"] for r in replies), "every reply links the incident"


def test_a_receiver_may_keep_every_reply_in_the_thread(db):  # noqa: F811
    pipeline = Pipeline(db, ["slack"])
    with SlackServer(token=TOKEN) as server:
        play(pipeline, CONSEQUENCE_FIRST, build_notifiers([slack(server, reply_broadcast=False)], {"T": TOKEN}))
        replies = [c.args for c in server.calls_to("chat.postMessage") if "thread_ts" in c.args]
    assert replies and not any(r.get("reply_broadcast") for r in replies)


def critical_stuck() -> Finding:
    f = stuck()
    return Finding(f.rule, f.labels, "critical", f.value, f.threshold, f.annotations)


def test_a_critical_first_page_calls_the_user_group_and_nothing_else_does(db):  # noqa: F811
    pipeline = Pipeline(db, ["slack"])
    with SlackServer(token=TOKEN) as server:
        notifiers = build_notifiers([slack(server, mention="S0123ABC")], {"T": TOKEN})
        play(pipeline, [(0, lambda: [critical_stuck()]), (60, lambda: [critical_stuck(), span()])], notifiers)
        first, update = server.calls_to("chat.postMessage")[0], server.calls_to("chat.update")[0]
    assert first.args["blocks"][1]["text"]["text"].startswith("<!subteam^S0123ABC> *StuckMessage on broker-a/OrderTopic/3")
    assert "subteam" not in str(update.args)
    warning = Pipeline(db, ["slack"])
    (n,) = warning.run(0, span(group="billing"))
    assert "<!" not in str(render.slack_message(n, mention="here")).replace("<!date^", "")


def test_every_page_links_its_incident_and_the_silence_form_and_a_runbook_when_the_rule_has_one(db):  # noqa: F811
    pipeline = Pipeline(db, ["mail"])
    f = stuck()
    booked = Finding(f.rule, f.labels, f.severity, f.value, f.threshold,
                     {**f.annotations, "runbook_url": "https://wiki.example.com/rocketmq/StuckMessage"})
    with SmtpServer() as smtp:
        receiver = EmailReceiver(type="email", name="mail", host=smtp.host, port=smtp.port, security="none",
                                 from_addr="rocketwatch@example.com", to=["oncall@example.com"], timeout=5)
        (sent,) = play(pipeline, [(0, lambda: [booked])], build_notifiers([receiver], {}, external_url=EXTERNAL))
        (mail,) = smtp.wait_for(1)
    incident = sent[0].incident.id
    text = mail.get_body(("plain",)).get_content()
    link = f"Incident page: {EXTERNAL}/incidents/{quote(incident, safe='')}"
    silence = f"Silence: {EXTERNAL}/?m={quote(f'incident={chr(34)}{incident}{chr(34)}', safe='')}#silence-form"
    assert text.splitlines()[3] == f"{link} · {silence} · Runbook: https://wiki.example.com/rocketmq/StuckMessage"
    assert f'href="{EXTERNAL}/incidents/{quote(incident, safe="")}"' in mail.get_body(("html",)).get_content()


def test_without_external_url_a_page_has_no_link(db):  # noqa: F811
    pipeline = Pipeline(db, ["console"])
    ((n,),) = play(pipeline, [(0, lambda: [stuck()])])
    assert "http" not in render.text(n) and "Incident page" not in str(render.slack_message(n))


def test_a_compact_receiver_gets_summaries_figures_and_the_link_only(db):  # noqa: F811
    pipeline = Pipeline(db, ["slack"])
    with SlackServer(token=TOKEN) as server:
        play(pipeline, [(0, lambda: [stuck(), span()])],
             build_notifiers([slack(server, detail="compact")], {"T": TOKEN}, external_url=EXTERNAL))
        (post,) = server.calls_to("chat.postMessage")
    body = html.unescape(str(post.args))
    assert "Diagnosis" not in body and "Next steps" not in body and "why:" not in body
    assert "in flight for 193 s" in body and "value 1500 vs 1000" in body and f"{EXTERNAL}/incidents/" in body


def test_webhook_alerts_carry_the_incident_as_generator_url_and_the_lead(db):  # noqa: F811
    pipeline = Pipeline(db, ["hook"])
    with WebhookServer() as hook:
        receivers = [WebhookReceiver(type="webhook", name="hook", url=hook.url)]
        (sent,) = play(pipeline, [(0, lambda: [stuck(), span()])],
                       build_notifiers(receivers, {}, external_url=EXTERNAL))
        (body,) = hook.bodies
    link = f"{EXTERNAL}/incidents/{quote(sent[0].incident.id, safe='')}"
    assert body["externalURL"] == EXTERNAL
    assert [a["generatorURL"] for a in body["alerts"]] == [link, link]
    assert body["rocketwatch"]["links"]["Incident page"] == link
    assert body["rocketwatch"]["lead"][0].startswith("StuckMessage on broker-a/OrderTopic/3 and 1 alert it explains")
    # A pager reading commonAnnotations.summary gets the page's lead lines.
    assert body["commonAnnotations"]["summary"] == body["rocketwatch"]["lead"][0]


def test_check_warns_when_links_lead_to_a_form_that_refuses_them(tmp_path):
    config = tmp_path / "rocketwatch.yaml"
    base = f'clusters: [{{name: c, namesrv: ["127.0.0.1:9876"]}}]\nexternal_url: "{EXTERNAL}"\n'
    config.write_text(base)
    run = [sys.executable, "-m", "daemon.cli", "check", str(config)]
    result = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{config}: warning: external_url is {EXTERNAL}, but http.token is not set" in result.stderr
    config.write_text(base + "http: {token: s3cret}\n")
    result = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
