"""The rule-based metric of the original's test_custom_metrics.py, as a tracegrade metric:
the original's async evaluate() becomes score()."""

from tracegrade.judge import BaseMetric, RuleScore


class LengthBasedMetric(BaseMetric):
    """Longer answers score higher, in three steps (no LLM call)."""

    def score(self, user_query: str, submission: str) -> RuleScore:
        if len(submission) < 50:
            return RuleScore(30.0, "Response too short")
        if len(submission) < 200:
            return RuleScore(70.0, "Response adequate length")
        return RuleScore(95.0, "Response comprehensive length")
