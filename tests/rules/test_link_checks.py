"""`explains:` links are checked over the whole rule set, each problem at the line that declared it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rules.loader import RuleLoadError, check_rule_files, load_rule_files


def _rule(name: str, table: str = "process_queue", links: str = "", extra: str = "") -> str:
    """One threshold rule (4-space list indent under `rules:`), with an optional `explains:` block."""
    text = f"""\
      - alert: {name}
        kind: threshold
        table: {table}
        value: 1
        above: {{critical: 0}}{extra}
        summary: "{{group}} is wrong here"
        diagnosis: "why it is"
        next_steps: "what to do"
"""
    if links:
        text += "        explains:\n" + textwrap.indent(textwrap.dedent(links), " " * 10)
    return text


def _file(tmp_path: Path, *rules: str, name: str = "rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text("groups:\n  - name: g\n    rules:\n" + "".join(rules))
    return path


def _errors(*paths: Path) -> list[str]:
    return [str(e) for e in check_rule_files(paths)]


def test_links_between_loaded_rules_and_to_pack_rules_not_loaded_load(tmp_path):
    path = _file(tmp_path,
                 _rule("SiteStuck", links="""\
                     - alert: SiteBlocked
                       on: [cluster, group, client_id]
                       why: the stuck message holds the thread.
                     - alert: ConsumerOffsetStalled
                       on: [cluster, group]
                       why: the committed offset is pinned.
                     """),
                 _rule("SiteBlocked"))
    ruleset = load_rule_files([path])
    assert [(s.alert, s.on) for s in ruleset.get("SiteStuck").explains] == [
        ("SiteBlocked", ("cluster", "group", "client_id")), ("ConsumerOffsetStalled", ("cluster", "group"))]


def test_unknown_consequence_is_an_error_at_its_line_with_the_close_name(tmp_path):
    path = _file(tmp_path, _rule("SiteStuck", links="""\
        - alert: ConsumerOffsetStaled
          on: [cluster, group]
          why: pinned.
        - alert: NothingLikeIt
          on: [cluster]
          why: pinned.
        """))
    assert _errors(path) == [
        f"{path}:13:20: group \"g\", rule \"SiteStuck\": explains.0.alert: unknown rule 'ConsumerOffsetStaled'; "
        "did you mean 'ConsumerOffsetStalled'?",
        f"{path}:16:20: group \"g\", rule \"SiteStuck\": explains.1.alert: unknown rule 'NothingLikeIt'; "
        "no loaded or built-in rule has that name",
    ]


def test_a_link_to_a_rule_with_its_own_errors_is_not_also_unknown(tmp_path):
    path = _file(tmp_path, _rule("SiteStuck", links="- {alert: SiteBroken, on: [cluster], why: x.}\n"),
                 _rule("SiteBroken", extra="\n        thresold: 3"))
    (error,) = _errors(path)
    assert "unknown field 'thresold'" in error


def test_self_link_and_second_link_to_the_same_rule_are_errors(tmp_path):
    path = _file(tmp_path, _rule("SiteStuck", links="""\
        - {alert: SiteStuck, on: [cluster], why: itself.}
        - {alert: SiteOther, on: [cluster], why: once.}
        - {alert: SiteOther, on: [group], why: twice.}
        """), _rule("SiteOther"))
    errors = _errors(path)
    assert len(errors) == 2, errors
    assert errors[0].startswith(f"{path}:13:21: ") and "explains.0.alert: a rule does not explain its own alerts" in errors[0]
    assert errors[1].startswith(f"{path}:15:21: ") and "explains.2.alert: a second link to 'SiteOther'" in errors[1]


def test_an_on_label_either_side_never_carries_is_an_error_at_the_label(tmp_path):
    # SiteGroup reads consumer_group: its alerts carry cluster, group, topic (and the static label).
    path = _file(tmp_path,
                 _rule("SiteStuck", links="- {alert: SiteGroup, on: [cluster, client_id, group, host], why: x.}\n"),
                 _rule("SiteGroup", table="consumer_group", extra="\n        labels: {team: pay}"))
    errors = _errors(path)
    assert len(errors) == 2, errors
    assert errors[0].startswith(f"{path}:13:46: ") and "explains.0.on.1: SiteGroup's alerts have no label 'client_id'" in errors[0]
    assert "they carry cluster, group, team, topic" in errors[0]
    assert "explains.0.on.3: SiteStuck's alerts have no label 'host'" in errors[1]


def test_a_static_label_with_two_values_never_matches(tmp_path):
    path = _file(tmp_path,
                 _rule("SiteStuck", links="- {alert: SiteOther, on: [cluster, team], why: x.}\n",
                       extra="\n        labels: {team: pay}"),
                 _rule("SiteOther", extra="\n        labels: {team: ops}"))
    (error,) = _errors(path)
    assert "explains.0.on.1: 'team' is a static label of both rules with different values (ops and pay)" in error


def test_a_cycle_across_files_is_one_error_naming_the_loop(tmp_path):
    first = _file(tmp_path, _rule("SiteA", links="- {alert: SiteB, on: [cluster], why: a.}\n"), name="a.yaml")
    second = _file(tmp_path,
                   _rule("SiteB", links="- {alert: SiteC, on: [cluster], why: b.}\n"),
                   _rule("SiteC", links="- {alert: SiteA, on: [cluster], why: c.}\n- {alert: SiteB, on: [cluster], why: d.}\n"),
                   name="b.yaml")
    (error,) = _errors(first, second)
    assert error == (f'{first}:13:13: group "g", rule "SiteA": explains.0: causal cycle: SiteA explains SiteB '
                     "explains SiteC explains SiteA; a cause cannot be its own consequence, remove one of these links")
    with pytest.raises(RuleLoadError):
        load_rule_files([first, second])
    # One error per strongly connected set: SiteB and SiteC also loop without SiteA, seen alone.
    (alone,) = [e for e in _errors(second) if "causal cycle" in e]
    assert "rule \"SiteB\": explains.0: causal cycle: SiteB explains SiteC explains SiteB;" in alone
    assert [e for e in _errors(first)] == [
        f"{first}:13:21: group \"g\", rule \"SiteA\": explains.0.alert: unknown rule 'SiteB'; "
        "no loaded or built-in rule has that name"]


def test_a_typo_inside_a_link_suggests_the_link_field(tmp_path):
    path = _file(tmp_path, _rule("SiteStuck", links="- {alert: ConsumeDelayHigh, onn: [cluster], why: x.}\n"))
    errors = _errors(path)
    assert any("explains.0.onn: unknown field 'onn'; did you mean 'on'?" in e for e in errors), errors
    assert any("explains.0.on: missing required field" in e for e in errors), errors


def test_rocketwatch_check_refuses_a_bad_link(tmp_path, capsys):
    from daemon.cli import main

    path = _file(tmp_path, _rule("SiteStuck", links="- {alert: ConsumerOffsetStaled, on: [cluster], why: x.}\n"))
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert (f"{path}:13:21: group \"g\", rule \"SiteStuck\": explains.0.alert: unknown rule "
            "'ConsumerOffsetStaled'; did you mean 'ConsumerOffsetStalled'?") in out
