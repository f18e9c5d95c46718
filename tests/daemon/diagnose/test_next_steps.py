"""`rocketwatch diagnose` prints next steps only for the rules it lists, filled from the samples
(issue 34, defect 7): a step never names a rule the output does not show as matching or seen."""

from __future__ import annotations

import re

import pytest

from daemon.diagnose.render import as_text
from daemon.diagnose.run import Options, diagnose
from daemon.simulator import SimulatorThread

GROUP_A = "orderConsumerA"


def _printed(scenario: str) -> str:
    with SimulatorThread(scenario, time_scale=0.1) as sim:
        sim.fast_forward(90)  # the incident has developed: no waiting on the wall clock
        verdict = diagnose(Options(sim.namesrv_addr, GROUP_A, samples=3, every=0.5))
    return as_text(verdict)


def _section(text: str, title: str) -> str:
    match = re.search(rf"^{re.escape(title)}.*?\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
    return match.group(1) if match else ""


def _rules(section: str) -> list[str]:
    return re.findall(r"^  ([A-Z][A-Za-z0-9]+)[ :]", section, re.M)


@pytest.mark.parametrize("scenario", ["one-stuck-message", "stuck-far-apart", "dlq-growth", "slow-consumer"])
def test_every_next_step_is_for_a_rule_the_output_lists(spark: object, scenario: str) -> None:
    text = _printed(scenario)
    steps = _section(text, "What to do next:")
    listed = set(_rules(_section(text, "Rules that match now"))) | set(_rules(_section(text, "Seen in the samples")))
    assert steps, text
    assert set(_rules(steps)) <= listed, text
    assert not re.search(r"\{[a-z_]+\}", steps), text  # no unfilled placeholder


def test_a_stuck_message_leads_with_its_own_steps_and_the_samples_that_show_it(spark: object) -> None:
    text = _printed("one-stuck-message")
    assert _rules(_section(text, "What to do next:"))[0] == "StuckMessage", text
    seen = _section(text, "Seen in the samples")
    assert "StuckMessage: queue OrderTopic/broker-a/3" in seen and "[FROZEN]" in seen, text


def test_dead_letter_steps_do_not_state_the_default_retry_count(spark: object) -> None:
    # The dlq-growth group's clients run with maxReconsumeTimes 2.
    text = _printed("dlq-growth")
    assert "DeadLetterQueueGrowing" in _rules(_section(text, "What to do next:")), text
    assert "16" not in _section(text, "What to do next:"), text
