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

The machinery is tests/helpers/symptom_run.py (the daemon and the simulators) and
tests/helpers/pages_received.py (what the receivers got); bench/pages.py runs it with these and with
the pre-issue-36 notify settings.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.helpers.daemon_proc import wait_evaluations, wait_until
from tests.helpers.pages_received import Page, pages_of
from tests.helpers.symptom_run import (
    CRASH,
    EXPECTED,
    GROUP_A,
    GROUP_B,
    SCENARIOS,
    STUCK,
    STUCK_TIME_SCALE,
    Incident,
    healthy_group_alerts,
    watching,
)

# The fixture runs the daemon for a few minutes: until the slowest expected alert (a stall) fired.
pytestmark = [pytest.mark.acceptance, pytest.mark.spark, pytest.mark.timeout(1800)]


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
