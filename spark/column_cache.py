"""Columns kept from one cycle to the next.

A Column is an unresolved expression: the same one can go into every cycle's DataFrames. Building
one costs JVM round trips (a py4j call, a reflective lookup of the function, and a delete when the
Python object dies): ~19k round trips and 1.2-1.5 s to plan the built-in pack at 16k queue series.
Most Columns depend only on a rule's declaration, not on `now`, so they are built once per rule
and reused every cycle.

    value = per_rule(rule, "value", lambda: compile_expression(rule.value.tree, table).cast("double"))
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from rules.expressions import calls_now
from rules.kinds.base import RuleBase

T = TypeVar("T")

# Entries are small (a few JVM expression objects); the built-in pack uses ~1-2k. The bound only
# matters when rule files are reloaded many times: Columns of old declarations age out.
MAX_ENTRIES = 20_000

_lock = threading.Lock()
_entries: OrderedDict[Hashable, object] = OrderedDict()


def cached(key: Hashable, build: Callable[[], T]) -> T:
    """What build() returned the first time `key` was asked for (built now if it was not, or aged out)."""
    with _lock:
        if key in _entries:
            _entries.move_to_end(key)
            return _entries[key]  # type: ignore[return-value]
    value = build()  # outside the lock: builds nest (a rule's struct asks for its expressions)
    with _lock:
        _entries[key] = value
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return value


def rule_key(rule: RuleBase) -> str | None:
    """The rule's whole declaration as text (equal keys build equal Columns); None when it calls now()."""
    if any(calls_now(e.tree) for e in rule.expressions().values()):
        return None
    return f"{type(rule).__name__}:{rule.model_dump_json()}"


def per_rule(rule: RuleBase, part: Hashable, build: Callable[[], T]) -> T:
    """build() once per rule declaration and `part`; every time for a rule calling now()."""
    key = rule_key(rule)
    return build() if key is None else cached((key, part), build)


def clear() -> None:
    """Forget every kept Column (the Spark session they were built for is stopping)."""
    with _lock:
        _entries.clear()
