"""What an on-call person got from one daemon, counted as pages: the Slack Web API stand-in (a page is a
top-level message: chat.postMessage without thread_ts), a real SMTP server (a page is a thread: a mail
without In-Reply-To) and a webhook receiver (a page is a distinct `groupKey`), all on loopback. Used by
tests/acceptance/test_incident_pages.py and bench/pages.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer
from tests.helpers.webhook_server import WebhookServer

SLACK_TOKEN = "xoxb-incident-pages"


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


def pages_of(pages: dict[str, Page], cluster: str) -> list[Page]:
    """The pages holding any alert of `cluster`."""
    return [p for p in pages.values() if cluster in p.clusters]
