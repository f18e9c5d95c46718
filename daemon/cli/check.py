"""The static commands, no Spark and no cluster: `check`, `tables` and `schema`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from rules.tables import TABLES, VIEWS


def _is_config_file(path: Path) -> bool:
    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except (OSError, YAMLError):
        return False
    return isinstance(data, dict) and "clusters" in data


def config_warnings(config: Any) -> list[str]:
    """What in a valid config will not work as meant (printed, never an error)."""
    out = []
    if config.external_url and config.http.token is None:
        out.append(f"external_url is {config.external_url}, but http.token is not set: the status page's silence "
                   "form refuses writes that reach it through a proxy (not from loopback) without the token, so "
                   "the pages' Silence links will not work from there")
    return out


def cmd_check(args: argparse.Namespace) -> int:
    """Validate config and rule files without starting Spark; print every error with its position."""
    from config.loader import ConfigLoadError, load_config, positioned_override_errors
    from rules.loader import check_rule_files
    from rules.overrides import apply_overrides_checked

    problems: list[str] = []
    warnings: list[str] = []
    checked_rules = 0
    for raw in args.files:
        path = Path(raw)
        if _is_config_file(path):
            try:
                config = load_config(path)
            except ConfigLoadError as exc:
                problems.extend(str(e) for e in exc.errors)
                continue
            warnings.extend(f"{path}: warning: {w}" for w in config_warnings(config))
            errors = check_rule_files(config.rules)
            problems.extend(str(e) for e in errors)
            if not errors:
                from rules.loader import load_rule_files

                ruleset = load_rule_files(config.rules)
                _, override_errors = apply_overrides_checked(ruleset, config.rule_overrides)
                problems.extend(str(e) for e in positioned_override_errors(path, override_errors))
                checked_rules += len(ruleset.rules)
        else:
            errors = check_rule_files([str(path)])
            problems.extend(str(e) for e in errors)
            if not errors:
                from rules.loader import load_rule_files

                checked_rules += len(load_rule_files([str(path)]).rules)
    for line in warnings:
        print(line, file=sys.stderr)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} error(s)", file=sys.stderr)
        return 1
    print(f"OK: {len(args.files)} file(s), {checked_rules} rule(s)")
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    """Print the sample tables and views rules can read."""
    for table in (*TABLES.values(), *VIEWS.values()):
        print(f"{table.name}: {table.description}")
        print(f"  key: {', '.join(table.key)}    source: {table.source}")
        for col in table.columns:
            unit = f" [{col.unit}]" if col.unit else ""
            extra = f"  = {col.derived}" if col.derived else ("  (nullable)" if col.nullable else "")
            print(f"  {col.name:<26} {col.type:<9}{unit:<12} {col.description}{extra}")
        print()
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
    """Add `check`, `tables` and `schema` to the rocketwatch command."""
    check = sub.add_parser("check", help="validate config and rule files (no Spark)")
    check.add_argument("files", nargs="+", help="config files and/or rule files")
    check.set_defaults(func=cmd_check)

    tables = sub.add_parser("tables", help="print the sample tables and their columns")
    tables.set_defaults(func=cmd_tables)

    schema = sub.add_parser("schema", help="print the JSON Schema of rule, config or rule-test files")
    schema.add_argument("what", nargs="?", choices=("rules", "config", "rule-tests"), default="rules")
    schema.set_defaults(func=cmd_schema)
