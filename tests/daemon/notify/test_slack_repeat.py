"""A Slack send that may already be in the channel (recorded, never confirmed) is looked up by the key in its
message metadata before it is posted again; a first send reads no history; without the history scope the
copy is posted once more, marked as a possible repeat."""

from __future__ import annotations

import asyncio
import logging

import pytest

from config.receivers import SlackReceiver
from daemon.notify.factory import build_notifier
from daemon.notify.model import Notification, ThreadRef
from daemon.notify.outbox import Outbox
from daemon.notify.slack import SlackNotifier
from daemon.notify.slack_lookup import MAX_PAGES, PAGE_SIZE
from tests.daemon.notify.conftest import T0, Cycle, at, span
from tests.helpers.slack_server import CHANNEL_ID, CHANNEL_NAME, SlackServer

TOKEN = "xoxb-repeat"
READS = ("conversations.history", "conversations.replies")


def server(**kwargs) -> SlackServer:
    """The stand-in, its messages stamped a little after T0 (when the notifications were made)."""
    return SlackServer(token=TOKEN, clock=lambda: T0.timestamp() + 1, **kwargs)


@pytest.fixture
def slack():
    with server() as s:
        yield s


def notifier(slack: SlackServer, channel: str = CHANNEL_ID) -> SlackNotifier:
    config = SlackReceiver(type="slack", name="oncall-slack", channel=channel, token_env="T",
                           base_url=slack.base_url, timeout=5)
    built = build_notifier(config, env={"T": TOKEN})
    assert isinstance(built, SlackNotifier)
    return built


def queued(db, findings=None, now=None) -> Notification:
    """The notification the daemon's cycle queues for the stuck group (with its idempotency key)."""
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run(findings or [span()], now or at(0))
    return cycle.outbox.rows(undelivered_only=True)[-1].notification


def retried(n: Notification) -> Notification:
    return n.model_copy(update={"unconfirmed_since": n.created_at})


def reads(slack: SlackServer) -> list:
    return [c for c in slack.calls if c.method in READS]


def test_every_post_carries_its_key_in_metadata_and_a_first_send_reads_no_history(db, slack):
    n = queued(db)
    ref = asyncio.run(notifier(slack).send(n, None))
    (post,) = slack.calls_to("chat.postMessage")
    assert post.args["metadata"] == {"event_type": "rocketwatch_notification", "event_payload": {
        "idempotency_key": n.idempotency_key, "group": n.group_key, "receiver": "oncall-slack"}}
    assert reads(slack) == []  # the hot path: one call, no lookup
    stored = next(m for m in slack.history() if m["ts"] == ref.id)
    assert stored["metadata"]["event_payload"]["idempotency_key"] == n.idempotency_key


def test_a_retried_send_already_in_the_channel_is_found_by_its_metadata_and_not_posted_again(db, slack):
    n = queued(db)
    first = asyncio.run(notifier(slack).send(n, None))  # the killed holder's post, never recorded

    again = asyncio.run(notifier(slack).send(retried(n), None))  # another daemon's notifier: a fresh process
    assert again == ThreadRef(id=first.id, channel=CHANNEL_ID)
    assert len(slack.calls_to("chat.postMessage")) == 1
    (lookup,) = reads(slack)
    assert lookup.method == "conversations.history" and lookup.args["include_all_metadata"] in ("1", "true")
    # The copy is brought up to date in place, as the group's later sends update it.
    assert [c.args["ts"] for c in slack.calls_to("chat.update")] == [first.id]


def test_a_retried_send_that_never_landed_is_posted_once_unmarked(db, slack):
    n = queued(db)
    other = queued(db, [span(group="otherGroup")], at(1))
    asyncio.run(notifier(slack).send(other, None))  # the channel holds other messages, not this one

    asyncio.run(notifier(slack).send(retried(n), None))
    posts = slack.calls_to("chat.postMessage")
    assert len(posts) == 2 and len(reads(slack)) == 1
    assert "possible repeat" not in str(posts[-1].args)  # ruled out: nothing to warn the channel about


def test_a_retried_thread_reply_is_looked_up_in_the_groups_thread(db, slack):
    n = queued(db)
    slack_notifier = notifier(slack)
    thread = asyncio.run(slack_notifier.send(n, None))
    reply = n.model_copy(update={"idempotency_key": "k-update", "is_update": True})
    asyncio.run(slack_notifier.send(reply, thread))  # posted, then the holder died before recording it

    assert asyncio.run(notifier(slack).send(retried(reply), thread)) == thread
    assert len(slack.replies) == 1
    (lookup,) = reads(slack)
    assert (lookup.method, lookup.args["ts"]) == ("conversations.replies", thread.id)


def test_without_the_history_scope_the_copy_is_posted_once_more_marked_and_logged_once(db, caplog):
    caplog.set_level(logging.INFO, logger="daemon.notify.slack")
    with server(scopes=("chat:write", "files:write")) as slack:
        n = queued(db)
        asyncio.run(notifier(slack).send(n, None))
        slack_notifier = notifier(slack)
        asyncio.run(slack_notifier.send(retried(n), None))
        second = n.model_copy(update={"idempotency_key": "k-2", "group_key": "g2"})
        asyncio.run(slack_notifier.send(retried(second), None))

    posts = slack.calls_to("chat.postMessage")
    assert len(posts) == 3
    repeat = posts[1]
    assert repeat.args["text"].endswith("(possible repeat)")
    marks = [e["text"] for b in repeat.args["blocks"] if b["type"] == "context" for e in b["elements"]
             if "Possible repeat" in e["text"]]
    assert len(marks) == 1 and "channels:history" in marks[0]
    assert len(repeat.args["blocks"]) == len(posts[0].args["blocks"])  # marked within the page's blocks
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "oncall-slack" in warnings[0] and "channels:history / groups:history" in warnings[0]


def test_a_channel_configured_by_name_is_resolved_to_its_id_and_the_copy_found(db):
    with server(other_channels=2500) as slack:  # a big workspace: the name is on conversations.list's third page
        n = queued(db)
        asyncio.run(notifier(slack).send(n, None))  # the killed holder's post, never recorded
        named = notifier(slack, channel="#rocketmq-alerts")  # the other daemon, configured by name
        asyncio.run(named.send(retried(n), None))
        asyncio.run(named.send(retried(n), None))

    assert len(slack.calls_to("chat.postMessage")) == 1  # found both times: nothing posted again, nothing marked
    assert len(slack.calls_to("chat.update")) == 2
    assert len(slack.calls_to("conversations.list")) == 3  # resolved once, three pages; the ID is then kept


def test_without_the_channel_list_scope_a_named_channel_copy_is_marked_and_the_scope_named(db, caplog):
    caplog.set_level(logging.INFO, logger="daemon.notify.slack")
    with server(scopes=("chat:write", "files:write", "channels:history", "groups:history")) as slack:
        n = queued(db)
        named = notifier(slack, channel=f"#{CHANNEL_NAME}")
        asyncio.run(named.send(retried(n), None))  # the name cannot be resolved: posted, marked
        asyncio.run(named.send(retried(n), None))  # Slack's answer named the channel's ID: now it is found

    posts = slack.calls_to("chat.postMessage")
    assert len(posts) == 1 and "possible repeat" in posts[0].args["text"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "channels:read / groups:read" in warnings[0], warnings


def test_the_lookup_reads_a_bounded_number_of_pages_and_marks_what_it_could_not_rule_out(db, slack):
    n = queued(db)
    asyncio.run(notifier(slack).send(n, None))
    crowd = MAX_PAGES * PAGE_SIZE
    for i in range(crowd):  # a busy channel: more messages since the send than a lookup reads
        ts = f"{T0.timestamp() + 2 + i / 1000:.6f}"
        slack.messages[ts] = {"text": f"chatter {i}", "ts": ts}

    asyncio.run(notifier(slack).send(retried(n), None))
    assert len(reads(slack)) == MAX_PAGES
    assert "possible repeat" in slack.calls_to("chat.postMessage")[-1].args["text"]


def test_a_restarted_daemon_finds_the_post_its_killed_process_made_before_marking_the_row(db, slack):
    # Single node, kill -9 between Slack's answer and the outbox row marked delivered: the row is still due.
    n = queued(db)
    landed = asyncio.run(notifier(slack).send(n, None))

    restarted = Outbox(db)  # a new process on the same state: what it finds undelivered may be out already
    report = asyncio.run(restarted.deliver_due({"oncall-slack": notifier(slack)}, at(5)))
    assert report.delivered == 1 and len(slack.calls_to("chat.postMessage")) == 1
    assert restarted.thread("oncall-slack", n.group_key) == ThreadRef(id=landed.id, channel=CHANNEL_ID)


def test_a_send_that_timed_out_is_looked_up_before_its_next_attempt(db, slack):
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run([span()], at(0))
    cycle.outbox.send_timeout = 0.5
    slack.hang_next(1, seconds=2)  # no answer in time: it may have landed
    report = asyncio.run(cycle.outbox.deliver_due({"oncall-slack": notifier(slack)}, at(0)))
    assert report.failed == 1 and reads(slack) == []

    report = asyncio.run(cycle.outbox.deliver_due({"oncall-slack": notifier(slack)}, at(600)))
    assert report.delivered == 1
    assert [c.method for c in slack.calls if c.status == 200] == ["conversations.history", "chat.postMessage"]
