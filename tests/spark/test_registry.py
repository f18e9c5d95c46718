"""Both halves of a rule kind exist: its declaration in rules/ and its plan in spark/."""

import rules.kinds
import spark.kinds


def test_every_declared_kind_has_a_plan_and_vice_versa():
    assert set(rules.kinds.KINDS) == set(spark.kinds.KINDS)
