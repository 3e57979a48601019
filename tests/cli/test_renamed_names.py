"""Public names renamed for one name per concept (issue 45, must-have 2) still work for one
release, each with a DeprecationWarning that names the new name."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [("tracegrade", "Settings", "ScoringFile"), ("tracegrade.judge", "MetricScore", "RuleScore")],
)
def test_an_old_name_is_the_new_one_and_says_so(module: str, old: str, new: str) -> None:
    package = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is now {module}\.{new}"):
        found = getattr(package, old)
    assert found is getattr(package, new)


def test_a_custom_metric_written_against_the_old_name_still_scores() -> None:
    with pytest.warns(DeprecationWarning):
        from tracegrade.judge import MetricScore
    from tracegrade.judge import BaseMetric

    class Short(BaseMetric):
        def score(self, user_query: str, submission: str) -> MetricScore:
            return MetricScore(100.0 - len(submission), "shorter is better")

    assert Short().score("q", "abc").score == 97.0


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="Setting"):
        importlib.import_module("tracegrade").Setting  # noqa: B018
    with pytest.raises(AttributeError, match="Score"):
        importlib.import_module("tracegrade.judge").Score  # noqa: B018
