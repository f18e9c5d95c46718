"""Annotations as the on-call reads them: readable numbers, and never a crash on a template."""

import pytest

from rules.loader import load_rule_files
from spark.render import format_number, render, to_finding


@pytest.mark.parametrize(
    ("value", "text"),
    [(3626.0, "3626"), (2000, "2000"), (0.12345, "0.123"), (12.345, "12.3"), (1234.56, "1235"), (-0.5, "-0.5"), (None, "n/a")],
)
def test_numbers_read_like_numbers(value, text):
    assert format_number(value) == text


def test_missing_or_null_template_inputs_do_not_crash():
    rule = load_rule_files(["builtin"]).get("ProcessQueueSpanTooLong")
    row = {"rule": rule.alert, "labels": {"group": "g"}, "severity": None, "value": None, "threshold": None,
           "no_data": True, "inputs": {"group": "g", "cached_min_offset": None}}
    finding = to_finding(rule, row)
    assert finding.no_data and finding.severity is None
    assert finding.annotations["summary"].startswith("g: queue {topic}/{broker}/{queue_id}")
    assert "offset n/a" in finding.annotations["diagnosis"]
    assert render("{a} {", {"a": "1"}) == "{a} {"


def test_a_broken_template_sends_the_raw_text_and_says_so_once(caplog):
    assert render("lag {value:%d}", {"value": "12"}, "rule Lag, summary") == "lag {value:%d}"
    assert render("lag {value:%d}", {"value": "13"}, "rule Lag, summary") == "lag {value:%d}"
    warnings = [r.getMessage() for r in caplog.records if "cannot be filled" in r.getMessage()]
    assert len(warnings) == 1 and "rule Lag, summary" in warnings[0] and "raw text is sent" in warnings[0]
