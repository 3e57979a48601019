"""The derived confidence of labelled traces under other factor weights, for fitting the
weights to labels (`tracegrade confidence --fit LABELS --fit-weights`).

The traces' factors are derived once (`transforms.confidence.derived`); each set of weights
scores them again through the same calculator as a run (`transforms.confidence.batch`), so the
confidence under the configured weights is the stored one. Scorings are kept for the last
`_KEPT` sets of weights: the search of every fold starts from the same weights.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
import polars as pl

from transforms.confidence.batch import step_scores, trace_levels
from transforms.confidence.derived import derived_factors, outcome_caps
from transforms.confidence.level_agreement import Floats
from transforms.config.confidence import ConfidenceConfig, ConfidenceWeights

__all__ = ["ReweightedConfidence"]

_KEPT = 128


class ReweightedConfidence:
    """The derived confidence of `traces` (trace_id, objective, result_summary, confidence
    and steps, as derived mode reads them) under any factor weights, in the frame's order.

    Args:
        traces: the labelled traces, one row each.
        config: the configuration every other constant comes from.
    """

    def __init__(self, traces: pl.DataFrame, config: ConfidenceConfig) -> None:
        self._ids = traces.select("trace_id")
        self._config = config
        self._factors = derived_factors(traces.lazy(), config).collect()
        self._caps = outcome_caps(traces.lazy(), config.derived).collect()
        self._kept: OrderedDict[tuple[tuple[str, float], ...], Floats] = OrderedDict()

    @property
    def configured(self) -> dict[str, float]:
        """The configuration's own weights, where a search starts."""
        return self._config.weights.model_dump()

    def __call__(self, weights: Mapping[str, float]) -> Floats:
        """Each trace's confidence (the capped aggregate its level is decided on) under
        `weights`, every other constant the configuration's."""
        key = tuple(sorted(weights.items()))
        if key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key]
        config = self._config.model_copy(update={"weights": ConfidenceWeights(**weights)})
        scored = step_scores(self._factors.lazy(), config)
        levels = trace_levels(scored, config, ordered=True, caps=self._caps.lazy())
        aligned = self._ids.join(
            levels.select("trace_id", "aggregate").collect(),
            on="trace_id",
            how="left",
            maintain_order="left",
        )
        scores = aligned["aggregate"].to_numpy().astype(np.float64)
        scores.setflags(write=False)  # kept: a caller's change would change every later call
        self._kept[key] = scores
        if len(self._kept) > _KEPT:
            self._kept.popitem(last=False)
        return scores
