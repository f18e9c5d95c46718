"""Write Python values the way fastjson 1.2.69 (RocketMQ 4.9.7) writes Java objects (ref §3.1).

The simulator must emit bodies a tolerant client has to cope with, so this writer reproduces the
non-standard parts on purpose: non-string map keys are written raw (`{0:"a"}`), a map keyed by a
bean writes the bean as the key (`{{"brokerName":…}:{…}}`), bean properties are sorted, nulls are
omitted, doubles use Java's `Double.toString` text and NaN/Infinity become `null`.

Java's hash containers iterate in bucket order, not insertion order; `hash_order` reproduces that
order for HashMap/HashSet/ConcurrentHashMap so that a body lists its entries as a broker would.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

T = TypeVar("T")


class Bean(dict[str, Any]):
    """A Java bean: fastjson writes its properties sorted by name and skips null ones."""


class JavaMap(list[tuple[Any, Any]]):
    """A Java map as (key, value) pairs in iteration order; keys may be beans (unhashable here)."""


def java_string_hash(s: str) -> int:
    """Java `String.hashCode()` as a signed 32-bit int."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return _signed(h)


def _signed(h: int) -> int:
    h &= 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_long_hash(v: int) -> int:
    """Java `Long.hashCode()`."""
    v &= 0xFFFFFFFFFFFFFFFF
    return _signed(v ^ (v >> 32))


def message_queue_hash(topic: str, broker_name: str, queue_id: int) -> int:
    """`MessageQueue.hashCode()` (Eclipse-generated: brokerName, queueId, topic)."""
    result = 1
    result = 31 * result + java_string_hash(broker_name)
    result = 31 * result + queue_id
    result = 31 * result + java_string_hash(topic)
    return _signed(result)


def _table_size(initial_capacity: int) -> int:
    n = 1
    while n < initial_capacity:
        n <<= 1
    return max(n, 1)


def hash_order(
    keys: Iterable[T], hash_of: Callable[[T], int], initial_capacity: int = 16, concurrent: bool = False
) -> list[T]:
    """The iteration order of a Java HashMap/HashSet (or ConcurrentHashMap) holding `keys`.

    Keys are given in insertion order. The table doubles whenever the size passes 3/4 of it;
    resizing keeps the relative order of keys sharing a bucket, so the final order is the bucket
    index of the final table, ties kept in insertion order.
    """
    items = list(keys)
    # ConcurrentHashMap(n) sizes its table for n + n/2 + 1 entries; HashMap(n) for n.
    n = _table_size(initial_capacity + initial_capacity // 2 + 1 if concurrent else initial_capacity)
    while len(items) > n * 3 // 4:
        n <<= 1

    def bucket(k: T) -> int:
        h = hash_of(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (n - 1)

    return sorted(items, key=bucket)  # sorted() is stable: ties keep insertion order


def string_hash_order(keys: Iterable[str], initial_capacity: int = 16, concurrent: bool = False) -> list[str]:
    """`hash_order` for String keys."""
    return hash_order(keys, java_string_hash, initial_capacity, concurrent)


def java_double(value: float) -> str:
    """Java `Double.toString` text (fastjson writes doubles with it); NaN/Infinity → `null`."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    mag = abs(value)
    sign = "-" if value < 0 else ""
    digits, exp = _shortest_digits(mag)  # value = 0.d1d2d3… × 10^exp
    if 1e-3 <= mag < 1e7:
        if exp <= 0:
            return f"{sign}0.{'0' * -exp}{digits}"
        int_part = digits[:exp].ljust(exp, "0")
        frac = digits[exp:] or "0"
        return f"{sign}{int_part}.{frac}"
    # Computerized scientific notation: d.ddddE±n, at least one fraction digit.
    frac = digits[1:] or "0"
    return f"{sign}{digits[0]}.{frac}E{exp - 1}"


def _shortest_digits(mag: float) -> tuple[str, int]:
    # repr gives the shortest round-tripping digits, which is what Java prints for these values.
    sign, digit_tuple, exponent = Decimal(repr(mag)).as_tuple()
    digits = "".join(map(str, digit_tuple))
    stripped = digits.lstrip("0")
    assert isinstance(exponent, int)
    exp = len(digits) + exponent - (len(digits) - len(stripped))
    return (stripped.rstrip("0") or "0"), exp


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)  # fastjson writes non-ASCII raw (UTF-8 on the wire)
    out.append('"')
    return "".join(out)


def _write(value: Any, out: list[str], standard: bool) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(java_double(value))
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, Bean):
        _write_entries(sorted(value.items()), out, standard)
    elif isinstance(value, Mapping | JavaMap):
        entries = list(value.items()) if isinstance(value, Mapping) else list(value)
        if standard:
            entries.sort(key=lambda kv: str(kv[0]))
        _write_entries(entries, out, standard)
    elif isinstance(value, Iterable):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, standard)
        out.append("]")
    else:
        raise TypeError(f"fastjson writer cannot write {type(value).__name__}")


def _write_entries(entries: list[tuple[Any, Any]], out: list[str], standard: bool) -> None:
    out.append("{")
    first = True
    for key, val in entries:
        if val is None:
            continue  # fastjson omits null-valued properties and map entries
        if not first:
            out.append(",")
        first = False
        if isinstance(key, str):
            out.append(_string(key))
        elif standard and isinstance(key, int):
            out.append(_string(str(key)))
        else:
            # MapSerializer writes a non-String key with the key's own serializer: a number raw,
            # a bean (MessageQueue) as a whole object.
            _write(key, out, standard)
        out.append(":")
        _write(val, out, standard)
    out.append("}")


def to_json(value: Any, standard: bool = False) -> str:
    """Serialize `value` as fastjson would; `standard` = the BrowserCompatible/MapSortField mode."""
    out: list[str] = []
    _write(value, out, standard)
    return "".join(out)


def to_bytes(value: Any, standard: bool = False) -> bytes:
    """`to_json` encoded as UTF-8, ready to be a frame body."""
    return to_json(value, standard).encode("utf-8")
