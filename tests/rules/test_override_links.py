"""rule_overrides add and drop causal links of the built-in pack; the result is checked as a whole."""

from __future__ import annotations

import textwrap

import pytest

from config.loader import load_config, positioned_override_errors
from rules.links import CausalLinks
from rules.loader import load_rule_files
from rules.overrides import RuleOverride, apply_overrides, apply_overrides_checked

PACK = load_rule_files(["builtin"])
STUCK, STALLED, DELAY = "StuckMessage", "ConsumerOffsetStalled", "ConsumeDelayHigh"


def _override(**data):
    return RuleOverride.model_validate(data)


def _link(alert, on=("cluster", "group"), why="a reason."):
    return {"alert": alert, "on": list(on), "why": why}


def test_links_are_added_replaced_and_dropped_without_touching_the_pack():
    tuned, errors = apply_overrides(PACK, {
        STUCK: _override(explains=[_link(STALLED, why="replaced."), _link("QueueHeldByTwoClients")],
                         explains_drop=[DELAY]),
    })
    assert errors == []
    links = CausalLinks.from_rules(tuned)
    assert links.why(STUCK, STALLED) == "replaced." and links.link(STUCK, STALLED).on == ("cluster", "group")
    assert links.link(STUCK, "QueueHeldByTwoClients") is not None and links.link(STUCK, DELAY) is None
    # Replaced and added links come last, the others keep their order.
    assert [s.alert for s in tuned.get(STUCK).explains][-2:] == [STALLED, "QueueHeldByTwoClients"]
    assert CausalLinks.from_rules(PACK).link(STUCK, DELAY) is not None


def test_dropping_a_link_the_rule_does_not_have_suggests_the_close_one():
    _, errors = apply_overrides(PACK, {STUCK: _override(explains_drop=["ConsumeDelayHig", "Nope"])})
    assert errors == [
        f"{STUCK}: explains_drop.0: {STUCK} has no link to 'ConsumeDelayHig'; did you mean 'ConsumeDelayHigh'? "
        f"its links: ProcessQueueSpanTooLong, ConsumptionBlocked, {STALLED}, {DELAY}, OneGroupLagging",
        f"{STUCK}: explains_drop.1: {STUCK} has no link to 'Nope'; its links: ProcessQueueSpanTooLong, "
        f"ConsumptionBlocked, {STALLED}, {DELAY}, OneGroupLagging",
    ]


def test_an_added_link_is_checked_like_one_in_a_file_and_named_by_its_override_index():
    _, errors = apply_overrides(PACK, {
        "RetryBacklogGrowing": _override(explains=[_link("DeadLetterQueueGrowing"), _link("StuckMesage"),
                                                   _link(STALLED, on=("cluster", "client_id"))]),
    })
    assert errors == [
        "RetryBacklogGrowing: explains.1.alert: unknown rule 'StuckMesage'; did you mean 'StuckMessage'?",
        "RetryBacklogGrowing: explains.2.on.1: RetryBacklogGrowing's alerts have no label 'client_id', so this "
        "link never matches; they carry category, cluster, group",
    ]


def test_an_added_link_that_closes_a_cycle_is_reported_at_that_link():
    # ConsumeDelayHigh is explained by StuckMessage: explaining it back closes the loop.
    _, errors = apply_overrides(PACK, {DELAY: _override(explains=[_link(STUCK, on=("cluster", "group", "topic"))])})
    (error,) = errors
    assert error.startswith(f"{DELAY}: explains.0: causal cycle: ")
    assert f"{STUCK} explains" in error and f"{DELAY} explains {STUCK}" in error


def test_links_to_a_disabled_rule_stay_valid_and_never_match():
    tuned, errors = apply_overrides(PACK, {STALLED: _override(disabled=True),
                                           "RebalanceChurn": _override(explains=[_link(STALLED)])})
    assert errors == []
    assert CausalLinks.from_rules(tuned).causes_of(STALLED) == ()


def test_the_config_points_at_the_override_line(tmp_path):
    path = tmp_path / "rocketwatch.yaml"
    path.write_text(textwrap.dedent("""\
        clusters: [{name: c, namesrv: ["127.0.0.1:9876"]}]
        rule_overrides:
          StuckMessage:
            explains_drop: [ConsumeDelayHigh]
            explains:
              - alert: ConsumerOfsetStalled
                on: [cluster, group]
                why: a reason.
        """))
    config = load_config(path)
    _, errors = apply_overrides_checked(PACK, config.rule_overrides)
    (error,) = positioned_override_errors(path, errors)
    assert str(error) == (f"{path}:6:9: rule_overrides.StuckMessage.explains.0.alert: unknown rule "
                          "'ConsumerOfsetStalled'; did you mean 'ConsumerOffsetStalled'?")


@pytest.mark.parametrize("data", [{"explains": [{"alert": STALLED, "on": []}]}, {"explains_drop": "ConsumeDelayHigh"}])
def test_bad_override_shapes_are_refused(data):
    with pytest.raises(ValueError):
        RuleOverride.model_validate(data)
