"""The notification route tree, time intervals and the heartbeat, in Alertmanager's shape."""

from __future__ import annotations

import re
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, field_validator

from config.matchers import parse_matcher
from config.zones import iana_zone
from rules.durations import Duration

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CLOCK = re.compile(r"^(?:[01]\d|2[0-3]):[0-5]\d$|^24:00$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RouteConfig(_Strict):
    """One node of the tree: which alerts it takes (matchers), where they go, how they are grouped.

    Unset fields are inherited from the parent. An alert goes down the first child that matches,
    and on to later siblings only if that child has `continue: true`; a node whose children all
    miss takes the alert itself.
    """

    receiver: str | None = Field(None, description="receiver name; inherited when unset")
    matchers: list[str] = Field(default_factory=list, description='e.g. [severity="critical", cluster=~"prod.*"]')
    continue_: bool = Field(False, alias="continue", description="also try the next sibling routes")
    group_by: list[str] | None = Field(None, description="labels that make one notification group")
    group_wait: Duration | None = Field(None, description="wait this long after a group's first alert")
    group_interval: Duration | None = Field(None, description="at most one update of a group this often")
    repeat_interval: Duration | None = Field(None, description="remind of a group still firing this often")
    mute_time_intervals: list[str] = Field(default_factory=list, description="names of time_intervals: silent then")
    active_time_intervals: list[str] = Field(default_factory=list, description="names of time_intervals: only then")
    routes: list[RouteConfig] = Field(default_factory=list)

    @field_validator("matchers")
    @classmethod
    def _matchers(cls, value: list[str]) -> list[str]:
        for text in value:
            parse_matcher(text)
        return value


class TimeRange(_Strict):
    """From start_time to end_time on a day, `HH:MM` (end exclusive; 24:00 is the end of the day)."""

    start_time: str
    end_time: str

    @field_validator("start_time", "end_time")
    @classmethod
    def _clock(cls, value: str) -> str:
        if not _CLOCK.match(value):
            raise ValueError(f"{value!r} is not a time of day; write HH:MM, e.g. 09:00 or 17:30")
        return value


class TimeIntervalSpec(_Strict):
    """When: every listed condition must hold; an empty list means any."""

    times: list[TimeRange] = Field(default_factory=list)
    weekdays: list[str] = Field(default_factory=list, description="monday, or ranges like monday:friday")
    days_of_month: list[str] = Field(default_factory=list, description="1, 1:15, -1 for the last day")
    months: list[str] = Field(default_factory=list, description="january, 1:3, ...")
    location: str = Field("UTC", description="time zone the times are in, e.g. Asia/Shanghai")

    @field_validator("weekdays")
    @classmethod
    def _weekdays(cls, value: list[str]) -> list[str]:
        for item in value:
            for day in item.lower().split(":"):
                if day not in WEEKDAYS:
                    raise ValueError(f"{day!r} is not a weekday; write monday ... sunday or monday:friday")
        return value

    @field_validator("location")
    @classmethod
    def _zone(cls, value: str) -> str:
        iana_zone(value)
        return value


class TimeIntervalConfig(_Strict):
    """A named set of time windows routes can mute or activate on."""

    name: str = Field(min_length=1)
    time_intervals: list[TimeIntervalSpec] = Field(min_length=1)


class HeartbeatConfig(_Strict):
    """The dead man's switch: an always-firing alert sent to `receiver` every `interval`."""

    receiver: str = Field(min_length=1, description="its own receiver, e.g. a webhook to a dead man's switch service")
    interval: Duration = Field(default=timedelta(minutes=5), description="how often it is sent")
