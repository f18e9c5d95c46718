"""Fields every rule kind shares: identity, table, grouping, timing, labels and the runbook text."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rules.durations import Duration
from rules.expressions import Expression, calls_now, validate
from rules.findings import RuleTiming
from rules.link_spec import LinkSpec
from rules.tables import TABLES, VIEWS, Table
from rules.templates import template_names, template_problems

Reduce = Literal["max", "min", "sum", "avg", "count", "count_distinct"]

# Names a template may use besides the `by` and table columns: filled in by the evaluation.
TEMPLATE_VALUES = ("value", "threshold", "severity")
TEMPLATE_FIELDS = ("summary", "diagnosis", "next_steps", "first_step", "runbook_url")
FIRST_STEP_MAX_CHARS = 160
_ALERT_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_LABEL_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

# A problem found after the fields parsed: (path of the field inside the rule, message).
Problem = tuple[tuple[str | int, ...], str]


class RuleBase(BaseModel):
    """What every rule has, whatever its kind."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    alert: str = Field(description="rule name, CamelCase; the `alertname` of its alerts")
    table: str = Field(description="sample table (or view) the rule reads")
    by: tuple[str, ...] | None = Field(None, description="label columns of one alert; default: the table's key")
    reduce: Reduce = Field("max", description="how values combine when `by` is coarser than the table key")
    for_: Duration = Field(timedelta(0), alias="for", description="how long the condition must hold to fire")
    keep_firing_for: Duration = Field(timedelta(0), description="how long to keep firing after it clears")
    stale_after: Duration | None = Field(None, description="newest sample older than this is no_data")
    labels: dict[str, str] = Field(default_factory=dict, description="static labels added to every alert")
    exclude: dict[str, str] = Field(
        default_factory=dict, description="column -> regex (full match); matching series are ignored"
    )
    summary: str = Field(description="one line: what is wrong and where, with {column} placeholders and "
                         "{if condition}...{elif condition}...{else}...{end} blocks (rules/templates.py)")
    diagnosis: str = Field(description="why it probably is: the mechanism, in the operator's words; "
                           "{if condition}...{else}...{end} states only what the row says")
    next_steps: str = Field(description="what to do now, concretely; same placeholders and blocks")
    first_step: str = Field("", max_length=FIRST_STEP_MAX_CHARS,
                            description="the one thing to do first, one templated sentence of at most 160 characters; "
                            "it opens the page, beside what, where and how bad")
    runbook_url: str = Field("", description="a link to the team's runbook for this alert (placeholders allowed); "
                             "shown on the page when set")
    explains: tuple[LinkSpec, ...] = Field(
        (), description="rules whose alerts this rule's alerts explain (rules/links.py): each link names the "
        "consequence (`alert`), the labels both share (`on`) and the RocketMQ behaviour behind it (`why`)")

    @field_validator("alert")
    @classmethod
    def _camel_case(cls, value: str) -> str:
        if not _ALERT_NAME.match(value):
            raise ValueError(f"alert name must be CamelCase letters and digits, like ProcessQueueSpanTooLong; got {value!r}")
        return value

    # Template names a kind computes besides value/threshold/severity (e.g. peer's `peer_value`).
    extra_template_values: ClassVar[tuple[str, ...]] = ()
    # The fields whose expressions the kind computes when a cycle's rows are folded into kept state
    # (spark/kinds/<kind>.py), not when it judges: evaluated once, at the cycle's fold, they cannot
    # read now(), which `check` refuses there.
    folded_fields: ClassVar[tuple[str, ...]] = ()

    @field_validator("table")
    @classmethod
    def _known_table(cls, value: str) -> str:
        if value not in TABLES and value not in VIEWS:
            raise ValueError(
                f"unknown table {value!r}; known tables: {', '.join(sorted(TABLES))}; "
                f"views: {', '.join(sorted(VIEWS))}"
            )
        return value

    @field_validator("labels")
    @classmethod
    def _label_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [k for k in value if not _LABEL_NAME.match(k)]
        if bad:
            raise ValueError(f"label names must be lower_snake_case: {', '.join(bad)}")
        return value

    @property
    def table_def(self) -> Table:
        """The table (or view) this rule reads."""
        return TABLES[self.table] if self.table in TABLES else VIEWS[self.table]

    @property
    def is_view(self) -> bool:
        """True when the rule reads a view computed from several tables (spark/views.py)."""
        return self.table in VIEWS

    def _folded_now(self, field: str) -> str:
        kind = getattr(self, "kind", "")
        return (f"rule {self.alert}: `{field}` calls now(), but a {kind} rule computes `{field}` on each sample as "
                f"its cycle is folded into kept state, not when it is judged; compare with the sample's own "
                f"collection time `ts` instead of now() (README: upgrade notes)")

    def window(self) -> timedelta:
        """How far back before `now` the rule needs samples besides the stale lookback; kinds with `over:` extend it."""
        return timedelta(0)

    @property
    def template_values(self) -> tuple[str, ...]:
        """Names a template may use that the evaluation fills in (not table columns)."""
        return TEMPLATE_VALUES + self.extra_template_values

    @property
    def group_by(self) -> tuple[str, ...]:
        """The columns that make one alert instance: `by`, or the table's key."""
        return self.by if self.by is not None else self.table_def.key

    @property
    def reduces(self) -> bool:
        """True when `by` is coarser than the table key, so several series feed one alert."""
        return not set(self.table_def.key) <= set(self.group_by)

    @property
    def timing(self) -> RuleTiming:
        """Hold times for the tracker."""
        return RuleTiming(name=self.alert, for_=self.for_, keep_firing_for=self.keep_firing_for)

    def expressions(self) -> dict[tuple[str | int, ...], Expression]:
        """Every expression of the rule by its field path; kinds extend this."""
        return {}

    def template_inputs(self) -> tuple[str, ...]:
        """Table columns the templates name (value/threshold/severity excluded), `by` columns first."""
        names: list[str] = list(self.group_by)
        for field in TEMPLATE_FIELDS:
            for name in template_names(getattr(self, field)):
                if name not in names and name not in self.template_values and self.table_def.column(name):
                    names.append(name)
        return tuple(names)

    def check(self) -> list[Problem]:
        """Problems that need the table catalog: unknown columns in expressions, by, exclude, templates."""
        table = self.table_def
        problems: list[Problem] = []
        for path, expr in self.expressions().items():
            problems.extend((path, msg) for msg in validate(expr.tree, table))
            if path[0] in self.folded_fields and calls_now(expr.tree):
                problems.append((path, self._folded_now(str(path[0]))))
        for i, name in enumerate(self.by or ()):
            if table.column(name) is None:
                problems.append((("by", i), f"unknown column {name!r}; columns of {table.name}: {', '.join(table.column_names)}"))
        for name in self.labels:
            if name in self.group_by:
                problems.append((("labels", name), f"label {name!r} would overwrite the `by` column of the same name"))
        for name, pattern in self.exclude.items():
            if table.column(name) is None:
                problems.append((("exclude", name), f"unknown column {name!r} in table {table.name}"))
            try:
                re.compile(pattern)
            except re.error as exc:
                problems.append((("exclude", name), f"invalid regex {pattern!r}: {exc}"))
        allowed = set(self.group_by) | set(table.column_names) | set(self.template_values)
        for field in TEMPLATE_FIELDS:
            problems.extend(((field,), msg) for msg in template_problems(getattr(self, field), allowed))
        return problems
