"""The holder is killed between the Slack post and its sent record: the next holder retries the send under
the same key, finds the post by the key in its message metadata and does not post again; without the
history scope it posts once more, marked as a possible repeat. On SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
from pathlib import Path

from daemon.coordination.keys import idempotency_key
from tests.daemon.coordination.conftest import Connect
from tests.daemon.coordination.mid_send import crash_mid_send, slack_server
from tests.helpers.clock import ManualClock


def test_the_next_holder_finds_the_killed_holders_post_by_its_metadata_and_posts_nothing(
        tmp_path: Path, connect: Connect) -> None:
    clock = ManualClock()
    with slack_server(clock) as slack:
        outcome = asyncio.run(crash_mid_send(tmp_path, connect, slack, clock))
        (post,) = [m for m in slack.history() if not m.get("thread_ts")]

    assert outcome.posts == 1 and outcome.lookups == 1, outcome
    assert outcome.recorded_at is not None, "the next holder recorded the send (the copy it found)"
    # The one message is the killed holder's, under the key every daemon derives for that send; the next
    # holder brought it up to date and continues it as the group's thread.
    (key,) = outcome.keys
    assert post["metadata"]["event_payload"]["idempotency_key"] == key
    assert key == idempotency_key("slack", post["metadata"]["event_payload"]["group"], outcome.seq or 0)
    assert "(possible repeat)" not in post["text"]


def test_without_the_history_scope_the_next_holder_posts_once_more_marked(tmp_path: Path, connect: Connect) -> None:
    clock = ManualClock()
    with slack_server(clock, scopes=("chat:write", "files:write")) as slack:
        outcome = asyncio.run(crash_mid_send(tmp_path, connect, slack, clock))

    assert (outcome.posts, outcome.marked, outcome.lookups) == (2, 1, 1), outcome
    assert len(set(outcome.keys)) == 1, "the repeat carries the same key: a reader's tools can pair them"
    assert outcome.recorded_at is not None

