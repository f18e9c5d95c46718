"""Time zone names as the config writes them, checked when the file loads rather than when first used."""

from __future__ import annotations

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
