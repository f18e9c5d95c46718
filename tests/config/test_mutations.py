"""`rocketwatch check` on many broken copies of the example config and of the built-in rule files.

Each case is one seeded mutation (deleted key, wrong type, bad duration, unknown name, bad zone,
truncated text, a line dropped, doubled or mis-indented...) of a real file. Whatever the mutation,
check answers in sentences that start with `file:line`, or says OK: never a traceback. Kinds that
always break the file must be reported. Replay one case with its id, e.g.
`pytest tests/config/test_mutations.py -k config-017`.
"""

from __future__ import annotations

import copy
import functools
import io
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

import rules.loader
from daemon.cli import main
from rules.loader import BUILTIN_DIR

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config" / "rocketwatch.example.yaml"
RULE_FILES = sorted(BUILTIN_DIR.glob("*.yaml"))
CONFIG_CASES = 150
RULE_CASES = 200

BAD_ZONES = ("Asia", "America", "Etc", "Europe/", "Mars/Olympus_Mons", "/etc/localtime", "../UTC", "zone.tab", "")
BAD_DURATIONS = ("5 minutes", "-30s", "1h1h", "30", "s", "", "30m1h", "1.5m", "forever")
WRONG_SCALARS: tuple[Any, ...] = (12345, True, 3.5, "text")
DURATION = re.compile(r"^\d+(ms|[smhdw])$")
# Mappings whose keys are the user's own names: a new key there is no mistake.
FREE_FORM = {"labels", "exclude", "rule_overrides", "annotations", "conf"}
# Mutations no valid file survives; the others (deleting an optional key, truncating after a
# whole rule...) may leave a valid file, and then OK is the right answer.
MUST_FAIL = {"unknown_key", "bad_zone", "bad_duration", "wrong_type", "unknown_kind", "unknown_table"}


@dataclass(frozen=True)
class Mutant:
    """One mutated copy: its id, what was done, and the text to check."""

    case: str
    kind: str
    what: str
    text: str


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.width = 4096  # keep long strings on their lines, so truncation cuts where it says
    return yaml


def _dump(doc: Any) -> str:
    out = io.StringIO()
    _yaml().dump(doc, out)
    return out.getvalue()


def _nodes(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any, Any]]:
    """(path, parent, key) of every mapping value and list item below `node`, in document order."""
    if isinstance(node, CommentedMap):
        for key in list(node):
            yield (*path, key), node, key
            yield from _nodes(node[key], (*path, key))
    elif isinstance(node, CommentedSeq):
        for i in range(len(node)):
            yield (*path, i), node, i
            yield from _nodes(node[i], (*path, i))


def _free_form(path: tuple[Any, ...]) -> bool:
    return any(p in FREE_FORM for p in path[:-1])


def _pick(rng: random.Random, doc: Any, accept: Callable[[tuple[Any, ...], Any, Any], bool]) -> tuple | None:
    found = [n for n in _nodes(doc) if accept(*n)]
    return rng.choice(found) if found else None


def _tree_mutation(rng: random.Random, doc: Any, kind: str) -> str | None:
    """Mutate the parsed document in place; a description, or None when it has no place for `kind`."""
    if kind == "delete":
        picked = _pick(rng, doc, lambda p, parent, key: True)
        if picked is None:
            return None
        path, parent, key = picked
        del parent[key]
        return f"deleted {'.'.join(map(str, path))}"
    if kind == "unknown_key":
        picked = _pick(rng, doc, lambda p, parent, key: isinstance(parent, CommentedMap) and not _free_form(p)
                       and isinstance(key, str))
        if picked is None:
            return None
        path, parent, key = picked
        typo = key[:-1] if len(key) > 3 and rng.random() < 0.5 else key + "s"
        if typo in parent:
            typo = key + "_x"
        parent.insert(list(parent).index(key), typo, parent.pop(key))
        return f"renamed {'.'.join(map(str, path))} to {typo}"
    if kind == "wrong_type":
        picked = _pick(rng, doc, lambda p, parent, key: not _free_form(p) and p[-1] != "stale_after"
                       and not (isinstance(parent[key], str) and p[-1] in ("by",)))
        if picked is None:
            return None
        path, parent, key = picked
        old = parent[key]
        if isinstance(old, (CommentedMap, CommentedSeq)):
            new: Any = rng.choice([12345, 3.5])
        elif isinstance(old, str):
            new = rng.choice([CommentedMap({"oops": 1}), CommentedSeq([[1, 2]])])
        else:
            new = rng.choice([CommentedMap({"oops": 1}), "not a number"])
        parent[key] = new
        return f"{'.'.join(map(str, path))}: {old!r} -> {new!r}"
    if kind == "bad_duration":
        picked = _pick(rng, doc, lambda p, parent, key: isinstance(parent[key], str)
                       and bool(DURATION.match(parent[key])))
        if picked is None:
            return None
        path, parent, key = picked
        parent[key] = rng.choice(BAD_DURATIONS)
        return f"{'.'.join(map(str, path))}: {parent[key]!r}"
    if kind == "bad_zone":
        picked = _pick(rng, doc, lambda p, parent, key: p[-1] == "location")
        if picked is None:
            return None
        path, parent, key = picked
        parent[key] = rng.choice(BAD_ZONES)
        return f"{'.'.join(map(str, path))}: {parent[key]!r}"
    if kind in ("unknown_kind", "unknown_table", "unknown_reference"):
        field = {"unknown_kind": ("kind",), "unknown_table": ("table",),
                 "unknown_reference": ("receiver", "table", "kind", "reduce")}[kind]
        picked = _pick(rng, doc, lambda p, parent, key: p[-1] in field and isinstance(parent[key], str))
        if picked is None:
            return None
        path, parent, key = picked
        parent[key] = parent[key] + "x"
        return f"{'.'.join(map(str, path))}: {parent[key]!r}"
    raise AssertionError(kind)


def _text_mutation(rng: random.Random, text: str, kind: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    n = rng.randrange(len(lines))
    if kind == "truncate":
        cut = rng.randrange(1, len(text))
        return text[:cut], f"cut after {cut} characters"
    if kind == "drop_line":
        return "".join(lines[:n] + lines[n + 1:]), f"line {n + 1} dropped"
    if kind == "double_line":
        return "".join(lines[:n + 1] + lines[n:]), f"line {n + 1} doubled"
    if kind == "indent":
        return "".join(lines[:n] + [rng.choice(["   ", " ", "\t"]) + lines[n]] + lines[n + 1:]), f"line {n + 1} indented"
    if kind == "garble":
        at = rng.randrange(len(text))
        junk = rng.choice([":", "- ", "{", "]", "'", '"', "&a", "*b", "!!python/object ", "? "])
        return text[:at] + junk + text[at:], f"{junk!r} inserted at {at}"
    raise AssertionError(kind)


TREE_KINDS = ("delete", "unknown_key", "wrong_type", "bad_duration", "unknown_reference")
TEXT_KINDS = ("truncate", "drop_line", "double_line", "indent", "garble")


@functools.cache
def _parsed(source: Path) -> Any:
    # Parsing is most of what building 350 mutants costs at collection (on every xdist worker):
    # each source is parsed once and every tree mutation works on a deep copy, which dumps the same.
    return _yaml().load(source.read_text(encoding="utf-8"))


def _mutant(case: str, source: Path, kinds: tuple[str, ...]) -> Mutant:
    rng = random.Random(case)  # seeded by the case id: every run builds the same mutant
    text = source.read_text(encoding="utf-8")
    for _ in range(20):
        kind = rng.choice(kinds)
        if kind in TEXT_KINDS:
            mutated, what = _text_mutation(rng, text, kind)
            return Mutant(case, kind, what, mutated)
        doc = copy.deepcopy(_parsed(source))
        what = _tree_mutation(rng, doc, kind)
        if what is not None:
            return Mutant(case, kind, what, _dump(doc))
    raise AssertionError(f"{case}: no mutation applies to {source}")


def _config_mutants() -> list[Mutant]:
    kinds = (*TREE_KINDS, *TEXT_KINDS, "bad_zone", "bad_zone")
    return [_mutant(f"config-{i:03d}", EXAMPLE, kinds) for i in range(CONFIG_CASES)]


def _rule_mutants() -> list[tuple[Path, Mutant]]:
    kinds = (*TREE_KINDS, *TEXT_KINDS, "unknown_kind", "unknown_table")
    return [(RULE_FILES[i % len(RULE_FILES)], _mutant(f"rules-{i:03d}", RULE_FILES[i % len(RULE_FILES)], kinds))
            for i in range(RULE_CASES)]


CONFIG_MUTANTS = _config_mutants()
RULE_MUTANTS = _rule_mutants()

_POSITIONED = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::\d+)?: (?P<message>.+)$")
_SENTENCE = re.compile(r"[A-Za-z]{2,}[ ,;:']+[A-Za-z]{2,}")


def _check(path: Path, mutant: Mutant, capsys: pytest.CaptureFixture[str]) -> None:
    """Run `rocketwatch check` in-process on the mutant and judge what it printed."""
    path.write_text(mutant.text, encoding="utf-8")
    context = f"{mutant.case} ({mutant.kind}: {mutant.what})"
    try:
        code = main(["check", str(path)])
    except BaseException as exc:  # noqa: BLE001 - a traceback is exactly what this test looks for
        pytest.fail(f"{context}: check raised {type(exc).__name__}: {exc}")
    out, err = capsys.readouterr()
    lines = [line for line in out.splitlines() if line.strip()]
    if code == 0:
        assert mutant.kind not in MUST_FAIL, f"{context}: check said OK:\n{out}"
        assert lines and lines[-1].startswith("OK:"), f"{context}: {out}{err}"
        return
    assert code == 1 and lines, f"{context}: exit {code} without a problem:\n{out}{err}"
    total = len(mutant.text.splitlines()) + 1
    for line in lines:
        match = _POSITIONED.match(line)
        assert match and match["file"] == str(path), f"{context}: not positioned in {path}: {line!r}"
        assert 1 <= int(match["line"]) <= total, f"{context}: line {match['line']} is outside the file: {line!r}"
        assert _SENTENCE.search(match["message"]), f"{context}: not a sentence: {line!r}"


# Module-wide: a cache made inside the fixture lived for one test, so every mutant re-read the pack.
_BUILTIN_CACHE: dict[str, Any] = {}


@pytest.fixture
def builtin_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The built-in pack is checked once per process, not once per config mutant (it does not change)."""
    cache = _BUILTIN_CACHE
    check, load = rules.loader.check_rule_files, rules.loader.load_rule_files

    def cached(fn: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
        def call(paths: Any) -> Any:
            if list(paths) != ["builtin"]:
                return fn(paths)
            if name not in cache:
                cache[name] = fn(paths)
            return cache[name]

        return call

    monkeypatch.setattr(rules.loader, "check_rule_files", cached(check, "check"))
    monkeypatch.setattr(rules.loader, "load_rule_files", cached(load, "load"))


@pytest.mark.parametrize("mutant", CONFIG_MUTANTS, ids=[m.case for m in CONFIG_MUTANTS])
def test_mutated_config_is_answered_with_positions(mutant: Mutant, tmp_path: Path, builtin_once: None,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _check(tmp_path / "rocketwatch.yaml", mutant, capsys)


@pytest.mark.parametrize(("source", "mutant"), RULE_MUTANTS, ids=[m.case for _, m in RULE_MUTANTS])
def test_mutated_rule_file_is_answered_with_positions(source: Path, mutant: Mutant, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    _check(tmp_path / source.name, mutant, capsys)


def test_the_mutants_cover_every_kind() -> None:
    # A generator that silently stopped producing a kind would let this file pass while testing less.
    kinds = {m.kind for m in CONFIG_MUTANTS} | {m.kind for _, m in RULE_MUTANTS}
    assert kinds == {*TREE_KINDS, *TEXT_KINDS, "bad_zone", "unknown_kind", "unknown_table"}


def test_region_as_zone_from_the_command_line_is_one_positioned_sentence(tmp_path: Path) -> None:
    text = EXAMPLE.read_text(encoding="utf-8").replace("location: Asia/Shanghai", "location: Asia")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "location: Asia" in row)
    path = tmp_path / "rocketwatch.yaml"
    path.write_text(text, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "daemon.cli", "check", str(path)], capture_output=True, text=True,
                            timeout=120, cwd=REPO)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    [problem] = result.stdout.splitlines()
    assert problem.startswith(f"{path}:{line}:") and "'Asia' is a region, not a time zone" in problem
