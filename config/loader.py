"""Load the daemon's YAML configuration; every error names file, line, column and field."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

from config.models import RocketwatchConfig

if TYPE_CHECKING:
    from rules.overrides import OverrideError


@dataclass(frozen=True)
class ConfigError:
    """One problem in a configuration file, positioned for an editor."""

    file: str
    line: int
    col: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class ConfigLoadError(Exception):
    """The configuration file cannot be used; holds every error found."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


def _position(node: Any, loc: Sequence[Any]) -> tuple[int, int]:
    """Line and column (1-based) of the deepest node of `loc` that the YAML still has."""
    line, col = 1, 1
    for key in loc:
        lc = getattr(node, "lc", None)
        if lc is None:
            break
        try:
            if isinstance(key, int) and isinstance(node, list):
                line, col = lc.item(key)
                node = node[key]
            elif isinstance(node, dict) and key in node:
                line, col = lc.key(key)
                node = node[key]
            else:
                break
        except (KeyError, IndexError, TypeError):
            break
        line, col = line + 1, col + 1
    return line, col


def positioned_override_errors(path: str | os.PathLike[str], errors: Sequence[OverrideError]) -> list[ConfigError]:
    """`file:line:col: rule_overrides.<rule>.<field>: sentence` for each error, in the order of the file."""
    if not errors:
        return []
    try:
        # The config loaded, so it parses: read again with line marks, which the validated model has not kept.
        data: Any = YAML(typ="rt").load(Path(path).read_text(encoding="utf-8"))
    except (OSError, MarkedYAMLError):
        data = None  # changed on disk since: the errors still name the field, at the top of the file
    positioned = []
    for error in errors:
        loc = ("rule_overrides", error.rule, *error.field)
        line, col = _position(data, loc)
        positioned.append(ConfigError(str(path), line, col, ".".join(map(str, loc)), error.message))
    return sorted(positioned, key=lambda e: (e.line, e.col))


def _expand_env(value: Any) -> Any:
    # ${VAR} in string values, so secrets and hosts can come from systemd's EnvironmentFile.
    if isinstance(value, str):
        return os.path.expandvars(value)
    if isinstance(value, dict):
        return {k: _expand_env(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v) for v in value]
    return value


def load_config(path: str | os.PathLike[str]) -> RocketwatchConfig:
    """Read and validate a configuration file; raise ConfigLoadError listing every problem."""
    path = Path(path)
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigLoadError([ConfigError(name, 1, 1, "", f"cannot read the file: {exc.strerror}")]) from None
    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise ConfigLoadError([ConfigError(name, line, col, "", f"YAML syntax: {exc.problem}")]) from None
    if not isinstance(data, dict):
        raise ConfigLoadError([ConfigError(name, 1, 1, "", "expected a mapping at the top of the file")])
    try:
        config = RocketwatchConfig.model_validate(_expand_env(data))
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            line, col = _position(data, loc)
            field = ".".join(str(p) for p in loc)
            message = ("unknown field (check its spelling)" if err["type"] == "extra_forbidden"
                       else str(err["msg"]).removeprefix("Value error, "))
            errors.append(ConfigError(name, line, col, field, message))
        raise ConfigLoadError(errors) from None
    # Relative paths in the file are relative to the file, not to wherever systemd started us.
    base = path.resolve().parent
    config.state_dir = (base / config.state_dir).resolve()
    if config.store_path is not None:
        config.store_path = (base / config.store_path).resolve()
    config.rules = [r if r == "builtin" else str((base / r).resolve()) for r in config.rules]
    missing = [ConfigError(name, *_position(data, ("rules", i)), f"rules.{i}",
                           f"no such file or directory: {r} (write builtin, a rule file or a directory of them)")
               for i, r in enumerate(config.rules) if r != "builtin" and not Path(r).exists()]
    if missing:
        # Said here, at the line that names the path, rather than by the rule loader without a position.
        raise ConfigLoadError(missing)
    return config
