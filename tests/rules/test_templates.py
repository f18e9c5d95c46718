"""The annotation template language: placeholders, {if}/{elif}/{else}/{end}, and positioned errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from rules.loader import RuleLoadError, load_rule_files
from rules.templates import parse_template, render_template, template_names


def _render(template: str, **values: object) -> str:
    return render_template(parse_template(template), values)


def test_the_first_true_branch_is_rendered_and_blocks_nest() -> None:
    t = "{if orderly}one thread{if locked}, locked{end}{elif max_span > 100}pool of {n}{else}other{end}."
    assert _render(t, orderly=True, locked=False, max_span=0, n=20) == "one thread."
    assert _render(t, orderly=True, locked=True, max_span=0, n=20) == "one thread, locked."
    assert _render(t, orderly=False, locked=True, max_span=2000, n=20) == "pool of 20."
    assert _render(t, orderly=False, locked=True, max_span=5, n=20) == "other."


def test_a_null_condition_is_not_true_as_in_where() -> None:
    t = "{if a > b}more{elif a <= b}less{else}unknown{end}"
    assert _render(t, a=None, b=1) == "unknown"
    assert _render(t, a=2, b=1) == "more"
    assert _render("{if coalesce(a, 0) == 0}none{end}", a=None) == "none"


def test_names_include_the_conditions_so_the_row_carries_them() -> None:
    assert template_names("{group}: {if orderly and locked}x{else}{commit_offset}{end}") == [
        "group", "locked", "orderly", "commit_offset"]


@pytest.mark.parametrize(("diagnosis", "message"), [
    ("text {else} more", "{else} without an {if} before it"),
    ("{if orderly}one thread", "{if} without its {end}"),
    ("{if}x{end}", "{if} needs a condition"),
    ("{if orderly}a{else}b{elif locked}c{end}", "{elif} after {else}"),
    ("{if orderly ==}a{end}", "condition of {if orderly ==}: invalid syntax"),
    ("{if now() > 0}a{end}", "may not call now()"),
    ("{if spam}a{end}", "unknown name 'spam'"),
    ("{if orderly}a{endif}", "a block ends with {end}"),
    ("lag {value:%d}", "may not use a format or conversion"),
])
def test_a_misused_block_is_a_positioned_error_quoting_the_tag(tmp_path: Path, diagnosis: str, message: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(
        "groups:\n  - name: g\n    rules:\n      - alert: Blocked\n        kind: threshold\n"
        "        table: process_queue\n        value: cached_msg_count\n        above: {warning: 1}\n"
        "        summary: s\n        next_steps: n\n"
        f"        diagnosis: \"{diagnosis}\"\n")
    with pytest.raises(RuleLoadError) as err:
        load_rule_files([path])
    text = str(err.value)
    assert f"{path}:11:20: " in text and 'rule "Blocked": diagnosis: ' in text, text
    assert message in text, text
