"""Alertmanager-style label matchers: `name="v"`, `name!="v"`, `name=~"re"`, `name!~"re"`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_MATCHER = re.compile(r'^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op>=~|!~|!=|=)\s*(?P<value>"(?:[^"\\]|\\.)*"|[^"\s]*)\s*$')


@dataclass(frozen=True)
class Matcher:
    """One label condition; `alertname` is the rule's name, a missing label is the empty string."""

    name: str
    op: str
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when `labels` satisfy this matcher (regexes match the whole value, as in Prometheus)."""
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        hit = re.fullmatch(self.value, actual) is not None
        return hit if self.op == "=~" else not hit

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.name}{self.op}"{escaped}"'


def parse_matcher(text: str) -> Matcher:
    """`group="orders"` or `severity=~"warning|critical"` as a Matcher; ValueError says what is wrong."""
    m = _MATCHER.match(text)
    if m is None:
        raise ValueError(f'cannot read matcher {text!r}; write name="value", name!="value", name=~"regex" or name!~"regex"')
    value = m["value"]
    if value.startswith('"'):
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    if m["op"] in ("=~", "!~"):
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"matcher {text!r}: invalid regex: {exc}") from None
    return Matcher(m["name"], m["op"], value)


def matches_all(matchers: Iterable[Matcher], labels: Mapping[str, str]) -> bool:
    """True when every matcher matches `labels`."""
    return all(m.matches(labels) for m in matchers)


def alert_labels(rule: str, labels: Mapping[str, str], severity: str | None) -> dict[str, str]:
    """The labels matchers see: the alert's own plus `alertname` and `severity`."""
    return {**labels, "alertname": rule, "severity": severity or ""}
