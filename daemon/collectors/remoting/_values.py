"""Value helpers shared by the body decoders: fastjson omits nulls, and numbers may come as strings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from daemon.collectors.remoting.fastjson import FastjsonError, loads, parse_message_queue


class BodyError(ValueError):
    """A response body that parsed but does not have the expected shape."""


class MessageQueue(NamedTuple):
    """A queue: (topic, broker name, queue id)."""

    topic: str
    broker_name: str
    queue_id: int


def as_obj(value: Any, what: str) -> Mapping[Any, Any]:
    """`value` as a mapping ({} when absent); BodyError names `what` otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BodyError(f"{what} should be an object, found {type(value).__name__}")
    return value


def as_list(value: Any, what: str) -> list[Any]:
    """`value` as a list ([] when absent); BodyError names `what` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise BodyError(f"{what} should be an array, found {type(value).__name__}")
    return list(value)


def as_int(value: Any, default: int = 0) -> int:
    """An int from a number or numeric string; `default` when absent or unreadable."""
    if value is None:
        return default
    if isinstance(value, int):  # bool included: Java never sends one here, int(True) is fine
        return int(value)
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else default
    try:
        return int(str(value).strip())
    except ValueError:
        try:
            number = float(str(value).strip())
        except ValueError:
            return default
        return int(number) if math.isfinite(number) else default


def opt_int(value: Any) -> int | None:
    """An int, or None when the key was absent."""
    return None if value is None else as_int(value)


def as_float(value: Any) -> float:
    """A float; NaN for absent or `null` (fastjson writes NaN/Infinity as null)."""
    if value is None:
        return math.nan
    try:
        return float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        return math.nan


def as_bool(value: Any) -> bool:
    """A bool; strings follow Java's Boolean.parseBoolean."""
    if isinstance(value, str):
        # Java's Boolean.parseBoolean: only "true" (any case) is true.
        return value.strip().lower() == "true"
    return bool(value)


def as_str(value: Any) -> str:
    """A str; "" when absent."""
    return "" if value is None else str(value)


def root_object(body: bytes | str, what: str) -> Mapping[Any, Any]:
    """Parse a body that must be one object; BodyError otherwise."""
    if not body:
        raise BodyError(f"{what} body is empty")
    try:
        return as_obj(loads(body), what)
    except FastjsonError as exc:
        raise BodyError(f"{what} body is not fastjson: {exc}") from None


def message_queue(key: Any) -> MessageQueue:
    """A MessageQueue from an object map key; BodyError if it is not one."""
    try:
        return MessageQueue(*parse_message_queue(key))
    except FastjsonError as exc:
        raise BodyError(str(exc)) from None


@dataclass(frozen=True)
class SubscriptionData:
    """One topic subscription of a group."""

    topic: str
    sub_string: str
    expression_type: str
    tags: tuple[str, ...] = ()


def subscription(raw: Any) -> SubscriptionData:
    """SubscriptionData from its fastjson object."""
    raw = as_obj(raw, "SubscriptionData")
    tags = tuple(as_str(t) for t in as_list(raw.get("tagsSet"), "tagsSet"))
    return SubscriptionData(
        as_str(raw.get("topic")), as_str(raw.get("subString")), as_str(raw.get("expressionType")), tags
    )
