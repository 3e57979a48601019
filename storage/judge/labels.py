"""The stored judgements beside labels people gave the same answers, for `tracegrade judge
--evaluate` (`transforms.judge.agreement`): the newest `ok` score of each answer and metric,
and of the overall score, with the answer's label from a labels file or a SQL expression over
the stored traces (as `confidence --evaluate` takes them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from storage.confidence.labels import file_labels, unreadable_labels
from storage.errors import InputError
from storage.store.statements import Statements

__all__ = ["OVERALL", "judged_with_labels"]

OVERALL = "overall"
"""The name the overall score (the weighted mean of the metrics) goes by."""

_JUDGED = (
    "SELECT item_id, metric AS name, score FROM latest_judge_results "
    "WHERE status = 'ok' AND score IS NOT NULL "
    f"UNION ALL SELECT item_id, '{OVERALL}' AS name, overall_score AS score "
    "FROM latest_judge_scores WHERE status = 'ok' AND overall_score IS NOT NULL"
)


@dataclass
class LabelledScores:
    """Scores and labels of the answers that have both, by metric (and `OVERALL`)."""

    scores: dict[str, list[float]] = field(default_factory=dict)
    labels: dict[str, list[float]] = field(default_factory=dict)
    judged: int = 0
    """Answers with an ok score of any metric."""
    unlabelled: int = 0
    """Of them, answers without a label (left out)."""

    @property
    def scale(self) -> tuple[float, ...]:
        """The label values seen, lowest first."""
        return tuple(sorted({label for values in self.labels.values() for label in values}))

    def problem(self, labels: str) -> str | None:
        """Why these labels give no agreement (none matched, one value only), else None."""
        if not self.scores:
            return (
                f"none of the {self.judged:,} judged answers has a label in {labels!r}: check "
                "that its ids are the answers' ids (trace_id, or the table's id)"
            )
        if len(self.scale) < 2:
            return f"every label is {self.scale[0]:g}: agreement needs at least two label values"
        return None


def _label_query(store: Statements, labels: str) -> str:
    """A SELECT of one (trace_id, label DOUBLE) per labelled trace."""
    path = Path(labels)
    if path.is_file():
        query = file_labels(store, path, cast="DOUBLE")
    else:
        query = f"SELECT trace_id, ({labels})::DOUBLE AS label FROM traces"
    twice = store.rows(
        f"SELECT trace_id, min(label), max(label) FROM ({query}) WHERE label IS NOT NULL "
        "GROUP BY trace_id HAVING min(label) <> max(label) ORDER BY trace_id LIMIT 1"
    )
    if twice:
        trace, low, high = twice[0]
        raise InputError(f"trace {trace} is labelled both {low:g} and {high:g}; give it one label")
    return (
        f"SELECT trace_id, any_value(label) AS label FROM ({query}) WHERE label IS NOT NULL "
        "GROUP BY trace_id"
    )


def judged_with_labels(store: Statements, labels: str) -> LabelledScores:
    """Every metric's (and the overall score's) ok scores beside the answers' labels.

    Raises:
        InputError: the labels cannot be read, a label is not a whole number, a trace has two
            labels, or the database holds no judgement.
    """
    tables = {name for (name,) in store.rows("SELECT table_name FROM information_schema.tables")}
    if "latest_judge_results" not in tables:
        raise InputError(
            "the database holds no judgement: tracegrade judge --db DB judges the stored traces"
        )
    try:
        rows = store.rows(
            f"SELECT j.name, j.score, l.label, j.item_id FROM ({_JUDGED}) j "
            f"LEFT JOIN ({_label_query(store, labels)}) l ON l.trace_id = j.item_id "
            "ORDER BY j.name, j.item_id"
        )
    except duckdb.Error as exc:
        raise unreadable_labels(labels, exc) from None
    found = LabelledScores()
    judged: set[str] = set()
    unlabelled: set[str] = set()
    for name, score, label, item in rows:
        judged.add(item)
        if label is None:
            unlabelled.add(item)
            continue
        if not math.isfinite(label) or label != math.floor(label):
            raise InputError(
                f"labels must be whole numbers (0/1, or a scale such as 1 to 5); trace {item} "
                f"has {label:g}"
            )
        found.scores.setdefault(name, []).append(float(score))
        found.labels.setdefault(name, []).append(float(label))
    found.judged, found.unlabelled = len(judged), len(unlabelled)
    return found
