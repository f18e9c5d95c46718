"""The zone of a log's timestamps: a region folder or any other non-zone is a sentence, never an OSError.

zoneinfo reads a key as a path under its TZPATH, so `Asia` (the folder of Asia's zones) raised
IsADirectoryError out of `rocketwatch analyze --client-tz Asia` and the live log collector.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from config.zones import zone_of
from daemon.collectors.logparse import make_line_parser

NOT_ZONES = ("Asia", "America", "Etc", "Europe/", "Mars/Olympus_Mons", "/etc/localtime", "../UTC", "zone.tab", "")


@pytest.mark.parametrize("name", NOT_ZONES)
def test_a_name_that_is_no_zone_is_a_sentence_naming_it(name: str) -> None:
    with pytest.raises(ValueError) as raised:
        zone_of(name)
    message = str(raised.value)
    assert repr(name) in message and "GMT+8" in message and "Asia/Shanghai" in message


def test_a_region_is_told_apart_from_an_unknown_name() -> None:
    with pytest.raises(ValueError, match=r"^'Asia' is a region, not a time zone; write an IANA name"):
        zone_of("Asia")


def test_a_client_log_parser_in_a_region_says_so() -> None:
    # What `analyze --client-tz Asia` and a `logs:` source with `tz: Asia` build.
    with pytest.raises(ValueError, match="'Asia' is a region"):
        make_line_parser("client", "prod", "app-1", tz="Asia")


@pytest.mark.parametrize(("name", "offset"), [
    ("Asia/Shanghai", timedelta(hours=8)), ("GMT+8", timedelta(hours=8)), ("+05:30", timedelta(hours=5, minutes=30)),
    ("UTC", timedelta(0)),
])
def test_zones_and_offsets_still_read(name: str, offset: timedelta) -> None:
    assert zone_of(name).utcoffset(datetime(2026, 3, 1)) == offset
