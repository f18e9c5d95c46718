"""Rule tooling subcommands: `test-rules`, `eval` and `replay`."""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from rules.durations import parse_duration


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An ISO time (UTC when no zone is given), `now`, or an offset from now such as `-15m`."""
    now = now or datetime.now(UTC)
    text = text.strip()
    if text == "now":
        return now
    if re.match(r"^-\d", text):
        return now - parse_duration(text[1:])
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def cmd_test_rules(args: argparse.Namespace) -> int:
    """Run rule unit test files; exit 0 all pass, 1 a test failed, 2 a file is invalid."""
    from rules.loader import RuleLoadError
    from rules.testing import RuleTestError, load_test_file

    status, loaded = 0, []
    # Validate every file before starting Spark: a typo costs no JVM start.
    for path in args.files:
        try:
            loaded.append(load_test_file(path))
        except (RuleTestError, RuleLoadError) as exc:
            print(f"{path}: INVALID\n{exc}", file=sys.stderr)
            status = 2
    if not loaded:
        return status
    from daemon.offline.rule_tests import run_loaded
    from spark.session import get_session

    spark = get_session("local[2]", {})
    for tests in loaded:
        result = run_loaded(spark, tests)
        if result.ok:
            print(f"{tests.path}: PASS ({result.checks} check(s))")
        else:
            print(f"{tests.path}: FAIL")
            for failure in result.failures:
                print(failure)
            status = max(status, 1)
    return status


def _finding_json(finding: Any) -> dict[str, Any]:
    return {
        "rule": finding.rule,
        "labels": finding.labels,
        "severity": finding.severity,
        "value": finding.value,
        "threshold": finding.threshold,
        "no_data": finding.no_data,
        "annotations": finding.annotations,
    }


@dataclass
class _EvalSetup:
    """What `eval` and `replay` need, from the flags and, when given, the config file."""

    rules: list[Any]
    timings: dict[str, Any]
    store: str
    stale_after: timedelta
    master: str
    conf: dict[str, str]


MAX_EVALUATIONS = 100_000  # more than a day at 1s, a month at the daemon's 30s


class _BadInput(Exception):
    """An operator error in the flags, the config or the rules: exit 2 with this message."""


def _duration(text: str, flag: str) -> timedelta:
    """A positive duration given to `flag`, or _BadInput naming the flag."""
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise _BadInput(f"{flag} {text!r}: {exc}") from None
    if value <= timedelta(0):
        raise _BadInput(f"{flag} {text!r}: must be more than 0")
    return value


def _setup(args: argparse.Namespace) -> _EvalSetup:
    from config.loader import positioned_override_errors
    from rules.loader import RuleLoadError, load_rule_files
    from rules.overrides import apply_overrides_checked

    master, conf, overrides = "local[2]", {}, {}
    rule_paths, store = args.rules, args.store
    stale_after = _duration(args.stale_after, "--stale-after") if args.stale_after else None
    if args.config:
        from config.loader import ConfigLoadError, load_config

        try:
            config = load_config(args.config)
        except ConfigLoadError as exc:
            raise _BadInput(str(exc)) from None
        # The config's rules and overrides, so `eval` sees exactly what the daemon evaluates.
        rule_paths = rule_paths or config.rules
        store = store or str(config.store)
        stale_after = stale_after or config.stale_after
        master, conf, overrides = config.spark.master, dict(config.spark.conf), config.rule_overrides
    if not store:
        raise _BadInput("give --store DIR or a --config whose store to read")
    from daemon.offline.replay import store_exists

    if not store_exists(store):
        raise _BadInput(f"store {store} does not exist; point --store at the daemon's store_path")
    try:
        ruleset = load_rule_files(rule_paths or ["builtin"])
    except RuleLoadError as exc:
        raise _BadInput(str(exc)) from None
    ruleset, errors = apply_overrides_checked(ruleset, overrides)
    if errors:  # overrides come only from --config
        raise _BadInput("\n".join(str(e) for e in positioned_override_errors(args.config, errors)))
    rules = list(ruleset.rules)
    return _EvalSetup(rules, {r.alert: r.timing for r in rules}, store,
                      stale_after or timedelta(seconds=60), master, conf)


def _time(text: str, flag: str, now: datetime) -> datetime:
    try:
        return parse_time(text, now)
    except (ValueError, OverflowError):  # OverflowError: an offset past year 1
        raise _BadInput(f"{flag} {text!r}: give an ISO time (2026-11-22T10:00:00Z), 'now' or -15m") from None


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate rules once against a store at a given time; print findings."""
    from spark.reference import evaluate_reference
    from spark.session import get_session

    try:
        setup = _setup(args)
        at = _time(args.at, "--at", datetime.now(UTC))
    except _BadInput as exc:
        print(f"rocketwatch eval: {exc}", file=sys.stderr)
        return 2
    findings = evaluate_reference(get_session(setup.master, setup.conf), setup.store, setup.rules, at,
                                  setup.stale_after)
    for finding in findings:
        if args.format == "json":
            print(json.dumps(_finding_json(finding), sort_keys=True))
        else:
            print(f"{finding.severity or 'no data':<8} {finding.rule}: {finding.annotations.get('summary', '')}")
    if args.format == "text":
        print(f"{len(findings)} finding(s) at {at.isoformat()} from {len(setup.rules)} rule(s)", file=sys.stderr)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay rules over the store's history; print the alert timeline."""
    from daemon.offline.replay import replay, steps
    from spark.reference import evaluate_reference
    from spark.session import get_session

    now = datetime.now(UTC)
    try:
        setup = _setup(args)
        start, end = _time(args.from_, "--from", now), _time(args.to, "--to", now)
        step = _duration(args.step, "--step")
        if start > end:
            raise _BadInput(f"--from {start.isoformat()} is after --to {end.isoformat()}")
        if (end - start) / step >= MAX_EVALUATIONS:
            # Each evaluation is a Spark job: a year at 1s would not end, and its times alone fill the memory.
            raise _BadInput(f"--from {start.isoformat()} to --to {end.isoformat()} every {step} is more than "
                            f"{MAX_EVALUATIONS} evaluations: give a longer --step or a shorter span")
    except _BadInput as exc:
        print(f"rocketwatch replay: {exc}", file=sys.stderr)
        return 2
    times = list(steps(start, end, step))
    session = get_session(setup.master, setup.conf)
    timeline = replay(partial(evaluate_reference, session, setup.store), setup.rules, setup.timings, times, setup.stale_after)
    for transition in timeline:
        print(json.dumps(transition.as_json(), sort_keys=True) if args.format == "json" else transition.as_text())
    print(f"{len(times)} evaluation(s) from {start.isoformat()} to {end.isoformat()} every {step}: "
          f"{len(timeline)} transition(s)", file=sys.stderr)
    return 0


# argparse takes `--from -15m` for two options unless `-15m` looks like a negative number to it.
_RELATIVE_TIME = re.compile(r"^-\d+(\.\d+)?([smhdw]\d*)*$")


def _store_flags(parser: argparse.ArgumentParser) -> None:
    parser._negative_number_matcher = _RELATIVE_TIME
    parser.add_argument("--store", help="Parquet sample store directory (default: the config's store)")
    parser.add_argument("--rules", nargs="+", help="rule files or dirs; 'builtin' for the pack "
                        "(default: the config's rules, else builtin)")
    parser.add_argument("--config", "-c", help="take rules, rule_overrides, store, stale_after and spark from it")
    parser.add_argument("--stale-after", help="series older than this are no_data (default: config's, else 60s)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add `test-rules`, `eval` and `replay` to the rocketwatch command."""
    test = sub.add_parser("test-rules", help="run rule unit test files (promtool style)")
    test.add_argument("files", nargs="+", help="rule test files (YAML)")
    test.set_defaults(func=cmd_test_rules)

    ev = sub.add_parser("eval", help="evaluate rules once against a store at a given time")
    _store_flags(ev)
    ev.add_argument("--at", default="now", help="ISO time (UTC when no zone), 'now' or an offset like -15m")
    ev.add_argument("--format", choices=("json", "text"), default="text", help="json: one finding per line")
    ev.set_defaults(func=cmd_eval)

    rp = sub.add_parser("replay", help="replay rules over the store's history: the alert timeline")
    _store_flags(rp)
    rp.add_argument("--from", dest="from_", required=True, help="ISO time (UTC when no zone) or an offset like -1h")
    rp.add_argument("--to", default="now", help="ISO time, 'now' or an offset like -5m")
    rp.add_argument("--step", default="30s", help="time between evaluations (the daemon's evaluate.interval)")
    rp.add_argument("--format", choices=("json", "text"), default="text", help="json: one transition per line")
    rp.set_defaults(func=cmd_replay)
