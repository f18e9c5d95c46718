"""The demo's incident as Slack shows it (issue 44): three notifications captured once from `rocketwatch
demo` (tests/fixtures/pages/capture.py): the first page (ProcessQueueSpanTooLong), the update when
its cause StuckMessage arrives, and the resolve, rendered with the built-in rules.

Counted on the visible text of all blocks (a link shows its label, a date its fallback): nothing is
cut, the first page's first 300 characters say what, where, for how long, how bad, what first and
where to act, the update and the resolve stay short and still carry what an operator acts on.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from daemon.notify import render, slack_budget
from daemon.notify.model import Notification
from rules.loader import load_rule_files

FIXTURES = Path(__file__).parents[2] / "fixtures" / "pages"
RULES = {r.alert: r for r in load_rule_files(["builtin"]).rules}
EXTERNAL = "https://rocketwatch.example.com"
CLIENT = "192.0.2.2@23222#3654065872356"  # the simulated client of orderConsumerA


def notification(name: str) -> Notification:
    return Notification.model_validate_json((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def message(name: str) -> dict:
    return render.slack_message(notification(name), actions=True, rules=RULES.get, external_url=EXTERNAL)


def visible(m: dict, marks: bool = False) -> str:
    """What a reader sees: every block's text, links as their labels, dates as their fallback, no bold or italic
    marks, entities decoded."""
    text = "\n".join(t for b in slack_budget.all_blocks(m) for t in slack_budget.block_texts(b))
    text = re.sub(r"<!date\^[^|>]+\|([^>]+)>", r"\1", text)
    text = re.sub(r"<[^|>]+\|([^>]+)>", r"\1", text)
    if not marks:
        text = re.sub(r"\*|(?<!\w)_|_(?!\w)", "", text)  # bold and italics marks are not seen
    return html.unescape(text)


def incident_link(name: str) -> str:
    n = notification(name)
    return f"{EXTERNAL}/incidents/{n.incident.id.replace('/', '%2F').replace('@', '%40').replace(':', '%3A')}"


@pytest.mark.parametrize("name", ["first-page", "cause-found", "resolve"])
def test_every_demo_page_fits_slack_and_shows_each_text_whole(name):
    m = message(name)
    assert slack_budget.problems(m) == []
    seen = " ".join(visible(m, marks=True).split())
    assert "…" not in seen
    for a in notification(name).alerts:
        for field in ("diagnosis", "next_steps"):
            said = " ".join(a.annotations[field].split())
            assert said in seen or said[:80] not in seen, f"{a.rule} {field} is cut"
    assert incident_link(name) in str(m)


def test_the_first_pages_first_300_characters_say_what_where_how_long_how_bad_what_first_and_where():
    head = visible(message("first-page"))[:300]
    for needle in ("ProcessQueueSpanTooLong", "broker-a/OrderTopic/3", "for 15 s", "value 3626 vs 2000 offsets",
                   f"First step: Take 3-5 jstacks of {CLIENT}", "Incident page", "Silence"):
        assert needle in head, (needle, head)
    assert head.startswith(":red_circle: CRITICAL ProcessQueueSpanTooLong · orderConsumerA · DefaultCluster\n")


@pytest.mark.parametrize(("name", "limit", "lasted"), [("cause-found", 3600, "for 50 s"),
                                                        ("resolve", 1500, "Resolved after 45 s")])
def test_the_update_and_the_resolve_stay_short_and_still_say_what_to_act_on(name, limit, lasted):
    m = message(name)
    seen = visible(m)
    assert len(seen) <= limit, len(seen)
    for needle in ("StuckMessage", "broker-a/OrderTopic/3", CLIENT, "message 286", "spans 3626 offsets", lasted,
                   "Incident page"):
        assert needle in seen, needle
    assert incident_link(name) in str(m)


def test_the_update_says_each_thing_once_and_the_resolve_tells_no_one_what_to_do():
    update = visible(message("cause-found"))
    why = RULES["StuckMessage"].explains[0].why.split()[:8]
    assert update.count(" ".join(why)) == 1, "the link's why, once"
    assert update.count("Diagnosis:") == 1 and update.count("Next steps:") == 1  # the cause's only
    resolve = visible(message("resolve"))
    for gone in ("Next steps", "Diagnosis", "First step", "jstack", "Silence"):
        assert gone not in resolve, gone
