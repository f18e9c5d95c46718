"""One `explains:` entry of a rule, as the rule file writes it (rules/links.py says what links mean)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class LinkSpec(BaseModel):
    """One `explains:` entry of a rule: its alerts explain alerts of `alert` that share the `on` labels."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alert: str = Field(description="the consequence: the rule whose alerts this rule's alerts explain")
    # minItems/minLength for editors; the validators below give the loader's own sentences.
    on: tuple[str, ...] = Field(description="labels that must be present and equal on cause and consequence, "
                                "e.g. [cluster, group]; only labels both rules' alerts carry",
                                json_schema_extra={"minItems": 1, "uniqueItems": True})
    why: str = Field(description="one sentence: the RocketMQ behaviour that makes the cause produce the consequence",
                     json_schema_extra={"minLength": 1})

    @field_validator("on")
    @classmethod
    def _labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            # An empty `on` would tie every alert of one rule to every alert of the other, cluster-wide.
            raise ValueError("`on` needs at least one label, e.g. [cluster, group]")
        repeated = sorted({label for label in value if value.count(label) > 1})
        if repeated:
            raise ValueError(f"label named twice in `on`: {', '.join(repeated)}")
        return value

    @field_validator("why")
    @classmethod
    def _sentence(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("`why` is one sentence saying how the cause produces the consequence")
        return value
