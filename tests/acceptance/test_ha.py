"""Two daemons, one PostgreSQL coordinator, one simulated cluster: whichever holds the lease tells
each alert change once, through a paused holder (SIGSTOP, then woken) and a killed one (kill -9).

Both daemons run the same rules and receivers (the Slack stand-in, aiosmtpd, a webhook receiver) on
their own state; the lease's timers are scaled down (ttl 3 s, renewed every second) so a failover
takes seconds. The story, one alert firing and resolving, each change made while nobody may send:

1. the holder is paused (SIGSTOP) and the alert fires: the other takes the lease and tells it;
   the paused one wakes past its deadline and tells nothing;
2. the new holder is killed (kill -9) and the alert resolves: the first takes the lease back and
   tells the resolve in the Slack thread and mail thread the killed one opened.

Silences and acknowledgements are shared (issue 47): a silence added on the first holder's status
page in headless Chromium is honoured by the other one while the first is paused, until
`rocketwatch silence expire` on the other's host ends it; an Acknowledge click Slack hands to one
daemon's Socket Mode connection shows on the other's status page.

Nothing is told twice: no Slack message key, Message-ID or Idempotency-Key twice, and no webhook
body (group, status, alerts) twice.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from daemon.notify import render
from daemon.simulator import SimulatorThread
from tests.helpers.chromium import Chromium, chromium_path
from tests.helpers.daemon_proc import (
    REPO,
    free_port,
    http,
    log_tail,
    start_daemon,
    wait_evaluations,
    wait_until,
    write_config,
)
from tests.helpers.postgres import PASSWORD, PostgresServer
from tests.helpers.slack_server import CHANNEL_ID, SlackServer
from tests.helpers.slack_socket import SlackSocketServer
from tests.helpers.smtp_server import SmtpServer
from tests.helpers.webhook_server import WebhookServer

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.timeout(420),
    pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed; .ci/run installs it"),
]

TOKEN = "xoxb-ha"
ENV = {"HA_SLACK_TOKEN": TOKEN, "HA_PG_PASSWORD": PASSWORD}
STUCK_GROUP = "orderConsumerA"  # the simulator's group that hangs


@dataclass
class Node:
    """One daemon subprocess: its name in the lease, its config, log and HTTP address."""

    name: str
    config: Path
    log: Path
    base: str
    socket: SlackSocketServer  # its own Socket Mode stand-in: a click sent there reaches this daemon
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    def start(self) -> None:
        """`rocketwatch run` on this node's config."""
        self.proc = start_daemon(self.config, self.log, {**ENV, **self.env})

    def silences(self) -> list[dict]:
        """/api/silences as this daemon lists them."""
        status, body = http("GET", f"{self.base}/api/silences")
        assert status == 200, body
        return json.loads(body)["silences"]

    def page(self) -> str:
        """The status page's HTML."""
        status, body = http("GET", f"{self.base}/")
        assert status == 200, body
        return body

    def holding(self) -> bool:
        """This daemon says on /metrics that it holds the dispatch lease."""
        status, metrics = http("GET", f"{self.base}/metrics")
        return status == 200 and "\nrocketwatch_ha_holder 1.0" in metrics

    def stop(self) -> int | None:
        """SIGCONT + SIGTERM (a paused process ignores SIGTERM until continued); its exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def _node(tmp: Path, name: str, sim: SimulatorThread, slack: SlackServer, smtp: SmtpServer, hook: WebhookServer,
          postgres: PostgresServer, dbname: str, socket: SlackSocketServer) -> Node:
    home = tmp / name
    home.mkdir()
    port = free_port()
    # One rule file (the stuck group's rule and its neighbours): two Spark daemons share the machine.
    rules = f'rules: ["{REPO / "rules" / "builtin" / "consumer-flow-control.yaml"}"]\n'
    ha = (f'ha:\n  connection: "{postgres.dsn(dbname, password=None)}"\n  password_env: HA_PG_PASSWORD\n'
          f"  node: {name}\n  timeout: 1s\n  lease: {{ttl: 3s, renew_every: 1s, margin: 1s}}\n")
    config = write_config(home, sim.namesrv_addr, http=f'listen: "127.0.0.1:{port}"', slack_url=slack.base_url,
                          slack_token_env="HA_SLACK_TOKEN", slack_app_token_env="HA_SLACK_APP_TOKEN",
                          smtp_port=smtp.port, extra=rules + ha)
    with config.open("a") as out:
        out.write(f'    - {{type: webhook, name: oncall-hook, url: "{hook.url}"}}\n')
    # One Slack app, yet each daemon's Socket Mode connection its own stand-in, told apart by the app token.
    app_token = f"xapp-{name}"
    slack.socket_urls[app_token] = socket.url
    return Node(name, config, home / "daemon.log", f"http://127.0.0.1:{port}", socket,
                {"HA_SLACK_APP_TOKEN": app_token})


def _logs(*nodes: Node) -> str:
    return "\n".join(f"--- {n.name} ---\n{log_tail(n.log, 30)}" for n in nodes)


def _told_calls(slack: SlackServer) -> int:
    # Socket Mode (re)connections are no message: a daemon woken from SIGSTOP reconnects.
    return sum(1 for c in slack.calls if c.method != "apps.connections.open")


async def _silence_on_page(node: Node, tmp: Path, matcher: str, comment: str) -> None:
    async with Chromium(tmp) as page:
        await page.navigate(f"{node.base}/")
        mark = page.mark()
        await page.evaluate(f"""(() => {{
            const form = document.getElementById('silence-form');
            form.matchers.value = {json.dumps(matcher)};
            form.duration.value = '1h';
            form.author.value = 'ana';
            form.comment.value = {json.dumps(comment)};
            form.querySelector('button').click();
        }})()""")
        await page.wait_for("Page.loadEventFired", mark)
        assert comment in await page.evaluate("document.body.innerText")
        assert page.console_errors() == []


def _click_ack(slack: SlackServer, node: Node, ts: str, user: str) -> dict:
    """Slack delivers on-call's Acknowledge click on message `ts` to `node`'s Socket Mode connection."""
    message = slack.messages[ts]
    button = next(e for b in message["blocks"] if b.get("block_id") == render.SLACK_ACTIONS_BLOCK
                  for e in b["elements"] if e["action_id"] == render.SLACK_ACTION_ACK)
    node.socket.wait_connected(30)
    return node.socket.send_interactive({
        "type": "block_actions",
        "user": {"id": "U0BOB", "username": user, "name": user},
        "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL_ID},
        "channel": {"id": CHANNEL_ID, "name": "mq-alerts"},
        "message": {"type": "message", "ts": ts, "text": message.get("text", ""), "blocks": message["blocks"],
                    "attachments": message.get("attachments") or []},
        "actions": [{"action_id": render.SLACK_ACTION_ACK, "block_id": render.SLACK_ACTIONS_BLOCK, "type": "button",
                     "value": button["value"], "action_ts": str(time.time())}],
    })


def _stuck_firing(node: Node) -> bool:
    status, body = http("GET", f"{node.base}/api/alerts")
    return status == 200 and any(a["rule"] == "ProcessQueueSpanTooLong" and a["state"] == "firing"
                                 for a in json.loads(body)["alerts"])


def _text(args: dict) -> str:
    return json.dumps(args.get("blocks") or args.get("text") or "")


def _resolved(slack: SlackServer, ts: str) -> bool:
    return any(c.args.get("ts") == ts and "RESOLVED" in _text(c.args).upper() for c in slack.calls_to("chat.update"))


def _told(hook: WebhookServer, status: str) -> int:
    return sum(1 for body in hook.bodies if body["status"] == status)


def _nothing_told_twice(slack: SlackServer, smtp: SmtpServer, hook: WebhookServer) -> None:
    posts = slack.calls_to("chat.postMessage")
    keys = Counter(json.dumps(c.args.get("metadata"), sort_keys=True) for c in posts)
    assert all(n == 1 for n in keys.values()), f"Slack message keys posted twice: {keys}"
    ids = Counter(m["Message-ID"] for m in smtp.messages)
    assert all(n == 1 for n in ids.values()), f"Message-IDs sent twice: {ids}"
    idem = Counter(hook.keys)
    assert None not in idem and all(n == 1 for n in idem.values()), f"Idempotency-Keys sent twice: {idem}"
    told = Counter(json.dumps([b["groupKey"], b["status"], sorted((a["fingerprint"], a["status"], a["startsAt"])
                                                                  for a in b["alerts"])]) for b in hook.bodies)
    assert all(n == 1 for n in told.values()), f"one webhook body told twice: {told}"


def test_paused_then_killed_holder_every_change_told_once(tmp_path, postgres):
    with (
        SimulatorThread("stuck-consumer", time_scale=0.25, block_at=None) as sim,
        SlackSocketServer() as socket_a,
        SlackSocketServer() as socket_b,
        SlackServer(token=TOKEN) as slack,
        SmtpServer() as smtp,
        WebhookServer() as hook,
    ):
        dbname = postgres.create_database()
        a, b = (_node(tmp_path, name, sim, slack, smtp, hook, postgres, dbname, socket)
                for name, socket in (("ha-a", socket_a), ("ha-b", socket_b)))
        try:
            a.start()
            b.start()
            for node in (a, b):
                wait_until(lambda n=node: "first cycle complete" in n.log.read_text(), 150, f"{node.name}'s first cycle",
                           node.log)
            wait_until(lambda: a.holding() != b.holding(), 30, "one holder of the two", a.log)
            first, second = (a, b) if a.holding() else (b, a)
            assert not _told_calls(slack) and not smtp.messages and not hook.bodies, "nothing told while healthy"

            # A silence added on the holder's page in Chromium is listed alike by the standby.
            comment = f"failover drill on {STUCK_GROUP}"
            asyncio.run(_silence_on_page(first, tmp_path, f'group="{STUCK_GROUP}"', comment))
            [silence] = first.silences()
            wait_until(lambda: second.silences() == [silence], 30, f"{first.name}'s silence listed by {second.name}",
                       second.log)

            # The holder is paused; the alert fires while nobody may send: the other takes the lease, honours
            # the silence the paused one took, and tells the alert once `rocketwatch silence expire` on its
            # own host ends the silence.
            first.proc.send_signal(signal.SIGSTOP)
            sim.trigger("block")
            wait_until(second.holding, 60, f"{second.name} taking the lease from the paused {first.name}", second.log)
            wait_until(lambda: _stuck_firing(second), 120, f"the stuck consumer firing on {second.name}", second.log)
            wait_evaluations(second.base, 2, second.log)
            assert not _told_calls(slack) and not smtp.messages and not hook.bodies, _logs(second)
            assert "(muted)" in second.page()
            expired = subprocess.run([sys.executable, "-m", "daemon.cli", "silence", "--config", str(second.config),
                                      "expire", silence["id"]], cwd=REPO, capture_output=True, text=True, timeout=60)
            assert expired.returncode == 0 and "shares it" in expired.stdout, (expired.stdout, expired.stderr)
            wait_until(lambda: slack.messages and smtp.messages and hook.bodies, 120,
                       f"the firing notification, told by {second.name} once the silence ended", second.log)
            thread_ts = next(iter(slack.messages))
            thread_mail = smtp.messages[0]["Message-ID"]

            # The paused holder wakes past its deadline: it tells nothing, and the lease stays where it is.
            calls, mails, bodies = _told_calls(slack), len(smtp.messages), len(hook.bodies)
            first.proc.send_signal(signal.SIGCONT)
            wait_evaluations(first.base, 3, first.log)
            assert (_told_calls(slack), len(smtp.messages), len(hook.bodies)) == (calls, mails, bodies), \
                _logs(first, second)
            assert second.holding() and not first.holding(), _logs(first, second)

            # The woken daemon took the expire from the coordinator: both list the silence ended.
            wait_until(lambda: first.silences() == second.silences() == [], 30, "the expired silence on both pages",
                       first.log)
            # On-call's Acknowledge click, which Slack hands to the standby's Socket Mode connection, shows on
            # the holder's page.
            assert _click_ack(slack, first, thread_ts, "bob")["envelope_id"]
            wait_until(lambda: "Acknowledged by bob" in second.page(), 30,
                       f"the acknowledgement {first.name} took shown on {second.name}'s page", second.log)
            # (shown beside the group's firing alerts: the woken standby's may still be pending)
            wait_until(lambda: "Acknowledged by bob" in first.page(), 30, f"the acknowledgement on {first.name}'s page",
                       first.log)

            # The new holder is killed; the alert resolves while nobody may send: the first takes the lease
            # back and tells the resolve in the threads the second one opened.
            second.proc.send_signal(signal.SIGKILL)
            assert second.proc.wait(timeout=10) == -signal.SIGKILL
            sim.trigger("release")
            wait_until(first.holding, 60, f"{first.name} taking the lease back from the killed {second.name}", first.log)
            wait_until(lambda: _resolved(slack, thread_ts) and _told(hook, "resolved") >= 1
                       and any(thread_mail in (m["In-Reply-To"] or "") for m in smtp.messages), 90,
                       f"the resolve, told by {first.name}", first.log)
            assert any(r["thread_ts"] == thread_ts for r in slack.replies), slack.replies
            assert len(slack.messages) == 1, _logs(first, second)
            wait_evaluations(first.base, 2, first.log)  # and nothing more after it

            _nothing_told_twice(slack, smtp, hook)
            # Every change told on every receiver: each webhook group ends resolved, each mail thread too.
            last = {body["groupKey"]: body["status"] for body in hook.bodies}
            assert set(last.values()) == {"resolved"}, [(b["groupKey"], b["status"]) for b in hook.bodies]
            assert any("RESOLVED" in m["Subject"] for m in smtp.messages), [m["Subject"] for m in smtp.messages]
        finally:
            codes = {}
            for node in (a, b):
                try:
                    codes[node.name] = node.stop()
                except subprocess.TimeoutExpired:
                    codes[node.name] = None  # killed after 60 s without stopping
    assert codes[first.name] == 0, log_tail(first.log)  # the woken holder stops cleanly
