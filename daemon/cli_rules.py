"""Rule tooling subcommands: `test-rules`, `eval` and `schema`."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime
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
    from daemon.rule_tests import run_test_file
    from rules.loader import RuleLoadError
    from rules.testing import RuleTestError
    from spark.session import get_session

    spark = get_session("local[2]", {})
    status = 0
    for path in args.files:
        try:
            result = run_test_file(spark, path)
        except (RuleTestError, RuleLoadError) as exc:
            print(f"{path}: INVALID\n{exc}", file=sys.stderr)
            status = 2
            continue
        if result.ok:
            print(f"{path}: PASS ({result.checks} check(s))")
        else:
            print(f"{path}: FAIL")
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


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate rules once against a store at a given time; print findings."""
    from rules.loader import RuleLoadError, load_rule_files
    from spark.evaluate import Evaluator
    from spark.session import get_session

    try:
        rules = list(load_rule_files(args.rules).rules)
    except RuleLoadError as exc:
        print(exc, file=sys.stderr)
        return 2
    at = parse_time(args.at)
    evaluator = Evaluator(get_session("local[2]", {}), args.store)
    findings = evaluator.evaluate(rules, at, parse_duration(args.stale_after))
    for finding in findings:
        if args.format == "json":
            print(json.dumps(_finding_json(finding), sort_keys=True))
        else:
            print(f"{finding.severity or 'no data':<8} {finding.rule}: {finding.annotations.get('summary', '')}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema of rule files, the config file or rule test files."""
    print(json.dumps(schema_of(args.what), indent=2, sort_keys=True))
    return 0


def schema_of(what: str) -> dict[str, Any]:
    """JSON Schema for `rules`, `config` or `rule-tests` files."""
    from pydantic import BaseModel, Field, create_model

    if what == "config":
        from config.models import RocketwatchConfig

        return RocketwatchConfig.model_json_schema(mode="validation")
    if what == "rule-tests":
        from rules.testing import RuleTestFile

        return RuleTestFile.model_json_schema(mode="validation")
    from typing import Annotated, Union

    from rules.kinds import KINDS

    kinds = tuple(KINDS.values())
    rule_type = Annotated[Union[kinds], Field(discriminator="kind")]  # noqa: UP007
    group = create_model("RuleGroup", name=(str, ...), rules=(list[rule_type], ...), __base__=BaseModel)
    document = create_model("RuleFile", groups=(list[group], ...), __base__=BaseModel)
    return document.model_json_schema(mode="validation")


def register(sub: argparse._SubParsersAction) -> None:
    """Add `test-rules`, `eval` and `schema` to the rocketwatch command."""
    test = sub.add_parser("test-rules", help="run rule unit test files (promtool style)")
    test.add_argument("files", nargs="+", help="rule test files (YAML)")
    test.set_defaults(func=cmd_test_rules)

    ev = sub.add_parser("eval", help="evaluate rules once against a store at a given time")
    ev.add_argument("--store", required=True, help="Parquet sample store directory")
    ev.add_argument("--rules", nargs="+", default=["builtin"], help="rule files or dirs; 'builtin' for the pack")
    ev.add_argument("--at", default="now", help="ISO time (UTC), 'now' or an offset like -15m")
    ev.add_argument("--stale-after", default="60s", help="series older than this are no_data")
    ev.add_argument("--format", choices=("json", "text"), default="text")
    ev.set_defaults(func=cmd_eval)

    schema = sub.add_parser("schema", help="print the JSON Schema of rule, config or rule-test files")
    schema.add_argument("what", nargs="?", choices=("rules", "config", "rule-tests"), default="rules")
    schema.set_defaults(func=cmd_schema)

