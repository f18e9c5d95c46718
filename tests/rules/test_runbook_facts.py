"""What a built-in runbook tells the operator to look for is what RocketMQ 4.9.7 shows them."""

from __future__ import annotations

import pytest

from rules.loader import load_rule_files

PACK = load_rule_files(["builtin"])


def _steps(rule: str) -> str:
    return " ".join(PACK.get(rule).next_steps.split())


@pytest.mark.parametrize("rule", ["ProcessQueueSpanTooLong", "ConsumptionBlocked"])
def test_the_pid_is_read_up_to_the_hash(rule: str) -> None:
    """A 4.9.7 client id is `192.0.2.2@5764#7903510994656`: pid, '#', nanoTime; not `ip@pid`."""
    steps = _steps(rule)
    assert "the number after '@', up to any '#', is the pid unless an instanceName was set" in steps
    assert "after '@' is the instance name, by default the pid" not in steps
    assert "the part after '@' is the pid" not in steps


def test_a_dead_letter_is_read_by_what_it_carries() -> None:
    """The broker copies RETRY_TOPIC onto a dead letter; RECONSUME_TIME is a property it does not set
    on a message a concurrent consumer sent back (the count is the message's Reconsume Times field)."""
    steps = _steps("DeadLetterQueueGrowing")
    assert "(its RETRY_TOPIC property names the original topic)" in steps
    assert "RECONSUME_TIME" not in steps
