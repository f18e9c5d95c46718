"""Load rule files and report every problem at its file:line:col, Prometheus-style.

    check_rule_files(["rules/"])        # [] or [RuleError, ...] — never raises for bad rules
    load_rule_files(["builtin", "site-rules/"])   # RuleSet, or RuleLoadError listing every error

Each problem prints as `file:line:col: group "g", rule "r": field: message`. Once every file is
loaded, the `explains:` links of the whole set are checked (rules/link_checks.py): a link may name
any loaded rule or any rule of the built-in pack, so one pack file loads on its own.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from rules.kinds import KINDS, RuleBase
from rules.link_checks import link_problems
from rules.link_spec import LinkSpec
from rules.models import RuleSet, RuleSource

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
BUILTIN = "builtin"
_GROUP_FIELDS = ("name", "rules")


@dataclass(frozen=True)
class RuleError:
    """One problem in a rule file, with its position (1-based; line 0 = the file as a whole)."""

    file: str
    line: int
    col: int
    group: str | None
    rule: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        parts = [f"{self.file}:{self.line}:{self.col}" if self.line else self.file]
        where = []
        if self.group is not None:
            where.append(f'group "{self.group}"')
        if self.rule is not None:
            where.append(f'rule "{self.rule}"')
        if where:
            parts.append(", ".join(where))
        if self.field:
            parts.append(self.field)
        parts.append(self.message)
        return ": ".join(parts)


class RuleLoadError(Exception):
    """Rules failed to load; `errors` holds every problem (RuleError or plain text)."""

    def __init__(self, errors: Sequence[RuleError | str]) -> None:
        self.errors = list(errors)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[RuleError]]:
    """Files named by `paths`: files as given, directories' *.yaml/*.yml sorted, `builtin` = the pack."""
    files: list[Path] = []
    errors: list[RuleError] = []
    for raw in paths:
        path = BUILTIN_DIR if str(raw) == BUILTIN else Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            errors.append(RuleError(str(raw), 0, 0, None, None, None, "no such file or directory"))
    return files, errors


def _plain(node: Any) -> Any:
    # ruamel's round-trip types (ScalarFloat, FoldedScalarString, ...) become plain Python values.
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


def _position(node: Any, loc: Sequence[str | int], key: bool = False) -> tuple[int, int]:
    """1-based line/col of the YAML node at `loc` below `node`; the deepest existing ancestor if absent."""
    line, col = (node.lc.line, node.lc.col) if hasattr(node, "lc") else (0, 0)
    current = node
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(current, CommentedMap) and part in current:
            line, col = current.lc.key(part) if (last and key) else current.lc.value(part)
            current = current[part]
        elif isinstance(current, CommentedSeq) and isinstance(part, int) and 0 <= part < len(current):
            line, col = current.lc.item(part)
            current = current[part]
        else:
            break
    return line + 1, col + 1


class _FileChecker:
    """Walks one parsed file and collects errors with positions."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[RuleError] = []
        # Each valid rule with where it was declared, where its name is, and its node (to position link errors).
        self.rules: list[tuple[RuleBase, RuleSource, tuple[int, int], CommentedMap]] = []
        self.declared: set[str] = set()  # every `alert:` name, valid rule or not

    def error(self, pos: tuple[int, int], message: str, *, group: str | None = None,
              rule: str | None = None, field: str | None = None) -> None:
        self.errors.append(RuleError(self.file, pos[0], pos[1], group, rule, field, message))

    def check_document(self, doc: Any) -> None:
        if doc is None:
            return  # an empty file holds no rules, as in Prometheus
        if not isinstance(doc, CommentedMap):
            self.error((1, 1), "a rule file is a mapping with a `groups:` list")
            return
        for key in doc:
            if key != "groups":
                self.error(_position(doc, [key], key=True), f"unknown field {key!r}; a rule file has only `groups`")
        groups = doc.get("groups")
        if not isinstance(groups, CommentedSeq):
            self.error(_position(doc, ["groups"]), "`groups` must be a list of {name, rules}", field="groups")
            return
        seen: set[str] = set()
        for gi, group in enumerate(groups):
            self.check_group(group, _position(groups, [gi]), seen)

    def check_group(self, group: Any, pos: tuple[int, int], seen: set[str]) -> None:
        if not isinstance(group, CommentedMap):
            self.error(pos, "a group is a mapping with `name` and `rules`")
            return
        name = group.get("name")
        gname = str(name) if isinstance(name, str) else None
        if gname is None:
            self.error(_position(group, ["name"]), "each group needs a `name` (a string)", field="name")
        elif gname in seen:
            self.error(_position(group, ["name"]), f"duplicate group name {gname!r} in this file", group=gname)
        else:
            seen.add(gname)
        for key in group:
            if key not in _GROUP_FIELDS:
                self.error(_position(group, [key], key=True), f"unknown field {key!r}; a group has `name` and `rules`",
                           group=gname, field=str(key))
        rules = group.get("rules")
        if not isinstance(rules, CommentedSeq):
            self.error(_position(group, ["rules"]), "`rules` must be a list", group=gname, field="rules")
            return
        for ri, raw in enumerate(rules):
            self.check_rule(raw, _position(rules, [ri]), gname, ri)

    def check_rule(self, raw: Any, pos: tuple[int, int], group: str | None, index: int) -> None:
        if not isinstance(raw, CommentedMap):
            self.error(pos, "a rule is a mapping starting with `alert:`", group=group)
            return
        alert = raw.get("alert")
        name = alert if isinstance(alert, str) else f"#{index + 1}"
        if isinstance(alert, str):
            self.declared.add(alert)  # a link to a rule with its own errors is not also "unknown"
        kind = raw.get("kind")
        model = KINDS.get(kind) if isinstance(kind, str) else None
        if model is None:
            known = ", ".join(sorted(KINDS))
            what = "missing `kind`" if kind is None else f"unknown kind {kind!r}"
            self.error(_position(raw, ["kind"]), f"{what}; known kinds: {known}", group=group, rule=name, field="kind")
            return
        try:
            rule = model.model_validate(_plain(raw))
        except ValidationError as exc:
            for err in exc.errors():
                self.report_pydantic(raw, err, model, group, name)
            return
        for loc, message in rule.check():
            self.error(_position(raw, loc), message, group=group, rule=name, field=_dotted(loc))
        self.rules.append((rule, RuleSource(self.file, pos[0], group or ""), _position(raw, ["alert"]), raw))

    def report_pydantic(self, raw: CommentedMap, err: Any, model: type[RuleBase], group: str | None,
                        name: str) -> None:
        loc = tuple(err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            # A misspelt key inside an `explains:` entry is one of the link's fields, not the rule's.
            fields = LinkSpec.model_fields if len(loc) == 3 and loc[0] == "explains" else model.model_fields
            known = sorted((f.alias or n) for n, f in fields.items())
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "known fields: " + ", ".join(known)
            message = f"unknown field {loc[-1]!r}; {hint}"
            pos = _position(raw, loc, key=True)
        elif err["type"] == "missing":
            message = "missing required field"
            pos = _position(raw, loc[:-1])
        else:
            pos = _position(raw, loc)
        self.error(pos, message, group=group, rule=name, field=_dotted(loc) or None)


def _dotted(loc: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in loc)


def _parse_file(path: Path) -> tuple[Any, RuleError | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return None, RuleError(str(path), 0, 0, None, None, None, f"cannot read: {exc.strerror or exc}")
    try:
        return YAML(typ="rt").load(text), None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        return None, RuleError(str(path), line, col, None, None, None, f"YAML syntax error: {what}")
    except YAMLError as exc:
        return None, RuleError(str(path), 1, 1, None, None, None, f"YAML error: {exc}")


@functools.cache
def builtin_rule_names() -> frozenset[str]:
    """Names of the built-in pack's rules: a link may name one even when its file is not loaded."""
    names: set[str] = set()
    for path in sorted(BUILTIN_DIR.glob("*.yaml")):
        doc = YAML(typ="safe").load(path.read_text(encoding="utf-8")) or {}
        names.update(str(rule["alert"]) for group in doc.get("groups") or () for rule in group.get("rules") or ()
                     if isinstance(rule, dict) and "alert" in rule)
    return frozenset(names)


def _load(paths: Iterable[str | os.PathLike[str]]) -> tuple[RuleSet, list[RuleError]]:
    files, errors = expand_paths(paths)
    rules: list[RuleBase] = []
    sources: dict[str, RuleSource] = {}
    nodes: dict[str, CommentedMap] = {}
    declared: set[str] = set()
    for path in files:
        doc, syntax_error = _parse_file(path)
        if syntax_error is not None:
            errors.append(syntax_error)
            continue
        checker = _FileChecker(str(path))
        checker.check_document(doc)
        errors.extend(checker.errors)
        declared |= checker.declared
        for rule, source, name_pos, node in checker.rules:
            first = sources.get(rule.alert)
            if first is not None:
                errors.append(RuleError(str(path), name_pos[0], name_pos[1], source.group, rule.alert, "alert",
                                        f"duplicate rule name; first defined at {first.file}:{first.line}"))
                continue
            sources[rule.alert] = source
            nodes[rule.alert] = node
            rules.append(rule)
    errors.extend(_link_errors(rules, sources, nodes, declared))
    return RuleSet(tuple(rules), sources), errors


def _link_errors(rules: Sequence[RuleBase], sources: dict[str, RuleSource], nodes: dict[str, CommentedMap],
                 declared: set[str]) -> list[RuleError]:
    """The `explains:` problems of the whole set, each at the line of the link (or of its `on` label)."""
    errors = []
    for problem in link_problems(rules, declared | builtin_rule_names()):
        loc = ("explains", problem.index, *problem.field)
        line, col = _position(nodes[problem.rule], loc)
        source = sources[problem.rule]
        errors.append(RuleError(source.file, line, col, source.group, problem.rule, _dotted(loc), problem.message))
    return errors


def check_rule_files(paths: Iterable[str | os.PathLike[str]]) -> list[RuleError]:
    """Every problem in the rule files named by `paths` (empty when all are valid)."""
    return _load(paths)[1]


def load_rule_files(paths: Iterable[str | os.PathLike[str]]) -> RuleSet:
    """The rules of `paths`; raises RuleLoadError with every problem if any file is invalid."""
    ruleset, errors = _load(paths)
    if errors:
        raise RuleLoadError(errors)
    return ruleset
