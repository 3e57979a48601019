"""The rule-based metric of the original's test_custom_metrics.py, as a tracegrade metric:
the original's async evaluate() becomes score()."""

from tracegrade.judge import BaseMetric, MetricScore


class LengthBasedMetric(BaseMetric):
    """Longer answers score higher, in three steps (no LLM call)."""

    def score(self, user_query: str, submission: str) -> MetricScore:
        if len(submission) < 50:
            return MetricScore(30.0, "Response too short")
        if len(submission) < 200:
            return MetricScore(70.0, "Response adequate length")
        return MetricScore(95.0, "Response comprehensive length")
