"""Whole-set checks of `explains:` links (rules/links.py): names, labels, cycles.

They need every rule at once, so the loader runs them after all files are loaded and the
overrides after `rule_overrides` are applied; each problem names the link by its rule and index
so the caller can point at the line that declared it.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rules.kinds.base import RuleBase
from rules.links import alert_labels

LinkRef = tuple[str, int]  # (rule holding the link, index in its `explains`)


@dataclass(frozen=True)
class LinkProblem:
    """A problem with one link: `field` is the path under the link, e.g. ("on", 1); () = the link itself."""

    rule: str
    index: int
    field: tuple[str | int, ...]
    message: str
    cycle: tuple[LinkRef, ...] = ()  # for a cycle: every link on it, starting with (rule, index)


def link_problems(rules: Sequence[RuleBase], known: Collection[str]) -> list[LinkProblem]:
    """Every problem of the links of `rules`; `known` = names a link may use besides the loaded rules."""
    by_name = {rule.alert: rule for rule in rules}
    problems: list[LinkProblem] = []
    for rule in rules:
        problems.extend(_rule_problems(rule, by_name, known))
    problems.extend(_cycles(rules, by_name))
    return problems


def _rule_problems(rule: RuleBase, by_name: dict[str, RuleBase], known: Collection[str]) -> list[LinkProblem]:
    problems: list[LinkProblem] = []
    seen: set[str] = set()
    for i, spec in enumerate(rule.explains):
        name = spec.alert
        if name == rule.alert:
            problems.append(LinkProblem(rule.alert, i, ("alert",), "a rule does not explain its own alerts; "
                                        "`explains` names another rule"))
            continue
        if name in seen:
            problems.append(LinkProblem(rule.alert, i, ("alert",), f"a second link to {name!r}: one link per "
                                        "pair of rules, with every shared label in its `on`"))
            continue
        seen.add(name)
        effect = by_name.get(name)
        if effect is None and name not in known:
            vocabulary = sorted((set(by_name) | set(known)) - {rule.alert})  # never suggest a self link
            close = difflib.get_close_matches(name, vocabulary, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "no loaded or built-in rule has that name"
            problems.append(LinkProblem(rule.alert, i, ("alert",), f"unknown rule {name!r}; {hint}"))
            continue
        # A rule that is known but not loaded (a pack file left out, a disabled rule) cannot be
        # checked for labels: its link never matches anyway.
        sides = (rule,) if effect is None else (rule, effect)
        for j, label in enumerate(spec.on):
            message = _label_problem(label, sides)
            if message:
                problems.append(LinkProblem(rule.alert, i, ("on", j), message))
    return problems


def _label_problem(label: str, sides: tuple[RuleBase, ...]) -> str | None:
    for side in sides:
        carried = alert_labels(side)
        if label not in carried:
            return (f"{side.alert}'s alerts have no label {label!r}, so this link never matches; "
                    f"they carry {', '.join(sorted(carried))}")
    values = {side.labels[label] for side in sides if label in side.labels}
    if len(sides) == 2 and all(label in side.labels for side in sides) and len(values) > 1:
        return (f"{label!r} is a static label of both rules with different values "
                f"({' and '.join(sorted(values))}), so this link never matches")
    return None


def _cycles(rules: Sequence[RuleBase], by_name: dict[str, RuleBase]) -> list[LinkProblem]:
    """One problem per strongly connected set of rules, at a link on one concrete cycle through it."""
    edges = {rule.alert: [(spec.alert, i) for i, spec in enumerate(rule.explains)
                          if spec.alert in by_name and spec.alert != rule.alert] for rule in rules}
    problems = []
    for component in _components(edges):
        if len(component) < 2:
            continue
        order = [rule.alert for rule in rules if rule.alert in component]
        cycle = _cycle_from(order[0], edges, component)
        names = [cause for cause, _ in cycle] + [cycle[0][0]]
        start, index = cycle[0]
        problems.append(LinkProblem(start, index, (), f"causal cycle: {' explains '.join(names)}; a cause "
                                    "cannot be its own consequence, remove one of these links", tuple(cycle)))
    return problems


def _cycle_from(start: str, edges: dict[str, list[tuple[str, int]]], within: set[str]) -> list[LinkRef]:
    """A shortest cycle from `start` back to itself inside `within`, as the links it follows."""
    came: dict[str, LinkRef] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target, index in edges[node]:
                if target not in within:
                    continue
                if target == start:
                    path = [(node, index)]
                    while path[0][0] != start:
                        path.insert(0, came[path[0][0]])
                    return path
                if target not in came:
                    came[target] = (node, index)
                    following.append(target)
        frontier = following
    return []  # unreachable: every member of a strongly connected set lies on a cycle through `start`


def _components(edges: dict[str, list[tuple[str, int]]]) -> list[set[str]]:
    """Strongly connected sets of rules (Tarjan's algorithm, iterative: rule sets can be long)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = edges[node]
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child][0]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found
