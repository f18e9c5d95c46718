#!/usr/bin/env python3
"""rocketwatch's import rules (issue 35, DESIGN §3), checked on the source with ast; stdlib only.

    python tests/helpers/import_graph.py [REPO_ROOT] [--mapping MAP.json] [--quiet]

Walks every module under daemon/, spark/, config/ and rules/ of REPO_ROOT (default: the current
directory), collects every import statement — module level, under `if TYPE_CHECKING:`, inside
functions and classes, and `importlib.import_module("literal")` / `__import__("literal")` — and
reports four kinds of violation, file:line, importer -> imported:

  upward     a package imports one ranked above it (RANKS, top first: a package may import only
             the ranks below its own)
  same-rank  two different packages on one rank import each other (e.g. daemon.http -> daemon.offline)
  cycle      modules that import each other, directly or through others (every edge of each
             strongly connected component of the module graph is listed, so each can be cut)
  unranked   a module in none of the ranked packages (e.g. a loose module at daemon/'s root),
             and `importlib.import_module(<not a literal>)`: an import no reader or checker can follow

Edges: `import a.b.c` depends on a.b.c; `from a.b import c` depends on a.b (its __init__ runs and
`c` is looked up on it) and, when a/b/c.py or a/b/c/__init__.py exists, on a.b.c as well; relative
imports are resolved against the importer. Only modules of the four scanned packages are edges.
`daemon/__init__.py` and `daemon/__main__.py` are the entry: they may import anything and are not unranked.

--mapping MAP.json (or PLAN.md: its ```json block holding "modules") renames modules before ranking ({"old.module": "new.module", ...}; a key also
renames everything under it, "daemon.cli_rules" -> "daemon.cli.rules"), so a planned layout can be
checked against today's code before any file moves. Paths in the report stay today's paths.

As a library (tests/test_layering.py):

    from tests.helpers.import_graph import find_violations
    assert [v.line() for v in find_violations(REPO_ROOT)] == []

Exit status: 0 no violation, 1 any violation, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script (python tests/helpers/import_graph.py): the repo root holds tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.helpers.graph_cycles import shortest_cycle, strongly_connected  # noqa: E402

# Top first. A package may import only the packages on the ranks below its own; packages on one
# rank do not import each other. The longest matching prefix names a module's package.
RANKS: tuple[tuple[str, ...], ...] = (
    ("daemon.cli",),
    ("daemon.app",),
    ("daemon.http", "daemon.offline", "daemon.diagnose", "daemon.simulator"),
    ("daemon.notify",),
    ("daemon.alerts",),
    ("daemon.collectors", "daemon.store", "daemon.coordination"),
    ("daemon.common",),
    ("spark",),
    ("config",),
    ("rules",),
)
SCANNED = ("daemon", "spark", "config", "rules")
ENTRY = ("daemon", "daemon.__main__")  # the distribution's entry points: may import anything


@dataclass(frozen=True)
class Import:
    """One import statement's dependency of one module on another (both scanned)."""

    importer: str  # dotted module name (as on disk today)
    imported: str
    path: str  # repo-relative file of the importer
    lineno: int
    where: str  # "module", "function", "TYPE_CHECKING", "dynamic"


@dataclass(frozen=True)
class Violation:
    """One broken rule, as the report prints it."""

    kind: str  # "upward", "same-rank", "cycle", "unranked"
    path: str
    lineno: int
    importer: str
    imported: str
    detail: str = ""

    def line(self) -> str:
        """`path:line: kind: importer -> imported (detail)`."""
        target = f" -> {self.imported}" if self.imported else ""
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.path}:{self.lineno}: {self.kind}: {self.importer}{target}{detail}"


@dataclass
class Graph:
    """Modules found on disk and the imports between them."""

    root: Path
    modules: dict[str, Path] = field(default_factory=dict)  # dotted name -> file
    imports: list[Import] = field(default_factory=list)
    dynamic: list[Import] = field(default_factory=list)  # import_module(<expression>): target unknown


# ---- collecting ------------------------------------------------------------------------------


def module_name(root: Path, path: Path) -> str:
    """`daemon/http/server.py` -> `daemon.http.server`; a package's __init__.py is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path, packages: Sequence[str] = SCANNED) -> dict[str, Path]:
    """Every .py module under the scanned top-level packages, by dotted name."""
    modules: dict[str, Path] = {}
    for top in packages:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(root).parts):
                continue
            modules[module_name(root, path)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Visitor(ast.NodeVisitor):
    """Every import statement of one module, with where it sits."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str, str | None, list[str], int]] = []  # (line, where, module, names, level)
        self.dynamic: list[tuple[int, str | None]] = []  # (line, literal or None)
        self._where = ["module"]

    def _nested(self, where: str, nodes: Iterable[ast.AST]) -> None:
        self._where.append(where)
        for node in nodes:
            self.visit(node)
        self._where.pop()

    def _current(self) -> str:
        return "TYPE_CHECKING" if "TYPE_CHECKING" in self._where else self._where[-1]

    def visit_If(self, node: ast.If) -> None:  # noqa: N802
        self.visit(node.test)
        if _is_type_checking(node.test):
            self._nested("TYPE_CHECKING", node.body)
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # noqa: N802
        self._nested("function", [*node.decorator_list, *node.body])

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815
    visit_Lambda = ast.NodeVisitor.generic_visit  # noqa: N815

    def visit_Import(self, node: ast.Import) -> None:  # noqa: N802
        for alias in node.names:
            self.found.append((node.lineno, self._current(), alias.name, [], 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:  # noqa: N802
        self.found.append((node.lineno, self._current(), node.module, [a.name for a in node.names], node.level))

    def visit_Call(self, node: ast.Call) -> None:  # noqa: N802
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("import_module", "__import__") and node.args:
            arg = node.args[0]
            literal = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
            if literal is None or not literal.startswith("."):
                self.dynamic.append((node.lineno, literal))
        self.generic_visit(node)


def _resolve_base(importer: str, is_package: bool, module: str | None, level: int) -> str | None:
    if level == 0:
        return module
    parts = importer.split(".") if is_package else importer.split(".")[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, *([module] if module else [])])


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The scanned module `name` is, or the nearest scanned module above it (`a.b.X` -> `a.b`)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def collect(root: Path, packages: Sequence[str] = SCANNED) -> Graph:
    """Parse every module and return the import graph between scanned modules."""
    root = root.resolve()
    graph = Graph(root, find_modules(root, packages))
    for name, path in graph.modules.items():
        rel = str(path.relative_to(root))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        visitor = _Visitor()
        visitor.visit(tree)
        is_package = path.name == "__init__.py"
        for lineno, where, module, names, level in visitor.found:
            base = _resolve_base(name, is_package, module, level)
            if base is None or base.split(".")[0] not in packages:
                continue
            targets: list[str] = []
            if not names:  # import a.b.c
                targets.append(base)
            else:  # from a.b import c, d: a.b, plus each of c, d that is a module
                targets.append(base)
                targets.extend(f"{base}.{n}" for n in names if n != "*" and f"{base}.{n}" in graph.modules)
            seen: set[str] = set()
            for target in targets:
                owner = _owner(target, graph.modules)
                if owner is None or owner == name or owner in seen:
                    continue
                seen.add(owner)
                graph.imports.append(Import(name, owner, rel, lineno, where))
        for lineno, literal in visitor.dynamic:
            owner = _owner(literal, graph.modules) if literal else None
            if literal is not None and owner is None:
                continue  # a library module: not ours
            record = Import(name, owner or "", rel, lineno, "dynamic")
            graph.dynamic.append(record)
            if owner is not None and owner != name:
                graph.imports.append(record)
    return graph


# ---- judging ---------------------------------------------------------------------------------


def rename(name: str, mapping: Mapping[str, str]) -> str:
    """`name` under `mapping`: an exact key, else the longest key that is a dotted prefix of it."""
    if name in mapping:
        return mapping[name]
    best = max((k for k in mapping if name.startswith(k + ".")), key=len, default=None)
    return name if best is None else mapping[best] + name[len(best):]


def package_of(name: str, ranks: Sequence[Sequence[str]] = RANKS) -> tuple[str, int] | None:
    """(ranked package, rank index) of a module, the longest prefix winning; None when unranked."""
    best: tuple[str, int] | None = None
    for index, packages in enumerate(ranks):
        for package in packages:
            if (name == package or name.startswith(package + ".")) and (best is None or len(package) > len(best[0])):
                best = (package, index)
    return best


def judge(graph: Graph, mapping: Mapping[str, str] | None = None,
          ranks: Sequence[Sequence[str]] = RANKS) -> list[Violation]:
    """Every violation of the ranked order, every cycle and every unranked module of `graph`."""
    mapping = mapping or {}
    violations: list[Violation] = []
    moved = {name: rename(name, mapping) for name in graph.modules}
    for name, path in sorted(graph.modules.items()):
        new = moved[name]
        rel = str(path.relative_to(graph.root))
        today = f" (today {name})" if new != name else ""
        if new in ENTRY:
            continue
        if package_of(new, ranks) is None:
            violations.append(Violation("unranked", rel, 1, new, "", "in no ranked package: move it into one" + today))
        elif new.count(".") == 1 and new.startswith("daemon.") and path.name != "__init__.py":
            # daemon/cli.py is in rank daemon.cli by name, but daemon/ holds only packages (DESIGN §3).
            violations.append(Violation("unranked", rel, 1, new, "",
                                        "a loose module at daemon/'s root: daemon/ holds only packages" + today))
    for record in graph.dynamic:
        violations.append(Violation("unranked", record.path, record.lineno, moved.get(record.importer, record.importer),
                                    moved.get(record.imported, record.imported),
                                    "importlib/__import__ of a module name: import it explicitly"))
    for record in graph.imports:
        src, dst = moved[record.importer], moved[record.imported]
        if src in ENTRY:
            continue
        src_pkg, dst_pkg = package_of(src, ranks), package_of(dst, ranks)
        if src_pkg is None or dst_pkg is None or src_pkg[0] == dst_pkg[0]:
            continue
        names = _rename_note(record, src, dst)
        if dst_pkg[1] < src_pkg[1]:
            violations.append(Violation("upward", record.path, record.lineno, src, dst,
                                        f"{src_pkg[0]} (rank {src_pkg[1]}) imports {dst_pkg[0]} (rank {dst_pkg[1]}), "
                                        f"{record.where}{names}"))
        elif dst_pkg[1] == src_pkg[1]:
            violations.append(Violation("same-rank", record.path, record.lineno, src, dst,
                                        f"{src_pkg[0]} and {dst_pkg[0]} share rank {src_pkg[1]}, {record.where}{names}"))
    edges: dict[str, set[str]] = {}
    for record in graph.imports:
        edges.setdefault(record.importer, set()).add(record.imported)
    for component in strongly_connected(graph.modules, edges):
        members = set(component)
        loop = " -> ".join(moved[m] for m in shortest_cycle(component, edges))
        for record in sorted(graph.imports, key=lambda r: (r.path, r.lineno, r.imported)):
            if record.importer in members and record.imported in members:
                violations.append(Violation("cycle", record.path, record.lineno, moved[record.importer],
                                            moved[record.imported],
                                            f"{record.where}; {len(component)} modules import each other, e.g. {loop}"))
    order = {"upward": 0, "same-rank": 1, "cycle": 2, "unranked": 3}
    return sorted(set(violations), key=lambda v: (order[v.kind], v.path, v.lineno, v.imported))


def _rename_note(record: Import, src: str, dst: str) -> str:
    if src == record.importer and dst == record.imported:
        return ""
    return f"; today {record.importer} -> {record.imported}"


def find_violations(root: Path | str, mapping: Mapping[str, str] | None = None) -> list[Violation]:
    """The violations of the repo at `root` (the function the pytest test calls)."""
    return judge(collect(Path(root)), mapping)


# ---- command line ----------------------------------------------------------------------------


def _mapping_file(path: Path) -> dict:
    """A JSON file, or a Markdown file's first ```json block that holds "modules" (PLAN.md)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".md":
        return json.loads(text)
    for block in re.findall(r"```json\n(.*?)```", text, re.S):
        data = json.loads(block)
        if isinstance(data, dict) and "modules" in data:
            return data
    raise SystemExit(f"{path}: no ```json block holding \"modules\"")


def main(argv: Sequence[str] | None = None) -> int:
    """Print every violation grouped by kind; exit 1 when there is any."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default=".", help="repository root (holds daemon/, spark/, config/, rules/)")
    parser.add_argument("--mapping", help="JSON file: {old module: new module}, to check a planned layout")
    parser.add_argument("--quiet", "-q", action="store_true", help="only the summary line per kind")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not (root / "daemon").is_dir():
        print(f"{root}: no daemon/ here; give the repository root", file=sys.stderr)
        return 2
    mapping: dict[str, str] = {}
    if args.mapping:
        data = _mapping_file(Path(args.mapping))
        mapping = data.get("modules", data) if isinstance(data, dict) else {}
        mapping = {k: v for k, v in mapping.items() if not k.startswith("_")}
    graph = collect(root)
    violations = judge(graph, mapping)
    print(f"{len(graph.modules)} modules, {len(graph.imports)} imports between them"
          + (f" (modules renamed by {args.mapping})" if mapping else ""))
    for kind in ("upward", "same-rank", "cycle", "unranked"):
        of_kind = [v for v in violations if v.kind == kind]
        print(f"\n== {kind}: {len(of_kind)}")
        if not args.quiet:
            for violation in of_kind:
                print(violation.line())
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
