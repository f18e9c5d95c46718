"""Time zone names as the config writes them, checked when the file loads rather than when first used."""

from __future__ import annotations

import re
from datetime import UTC, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_ADVICE = "write an IANA name such as Europe/Berlin or Asia/Shanghai"


def iana_zone(name: str) -> ZoneInfo:
    """The zone called `name`; ValueError with a sentence for anything that is not one zone."""
    try:
        return ZoneInfo(name)
    except IsADirectoryError:
        # zoneinfo reads the key as a path under its TZPATH: `Asia` is the folder of Asia's zones.
        raise ValueError(f"{name!r} is a region, not a time zone; {_ADVICE}") from None
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown time zone {name!r}; {_ADVICE}") from None


def zone_of(name: str) -> timezone | ZoneInfo:
    """`UTC`, `GMT+8`, `+08:00` or an IANA name as a tzinfo; ValueError for anything else."""
    text = name.strip()
    match = re.fullmatch(r"(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d\d))?", text)
    if match:
        sign = 1 if match[1] == "+" else -1
        offset = timedelta(hours=int(match[2]), minutes=int(match[3] or 0))
        if offset > timedelta(hours=14) or int(match[3] or 0) >= 60:
            raise ValueError(f"{name!r}: a zone's offset is at most 14 hours, minutes under 60 (e.g. GMT+8, +05:30)")
        return timezone(sign * offset)
    if text.upper() in ("UTC", "GMT", "Z"):
        return UTC
    try:
        # iana_zone tells a region folder (`Asia`, which zoneinfo opens as a directory) and any
        # other unreadable key from a zone, so every caller gets a ValueError with a sentence.
        return iana_zone(text)
    except ValueError as exc:
        raise ValueError(f"{exc}, or an offset such as GMT+8 or +08:00") from None
