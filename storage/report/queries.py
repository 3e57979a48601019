"""The SQL behind the HTML report: every figure is an aggregate computed in DuckDB (bins, daily
medians, counts), never one row per trace, so the report's size does not grow with the table.

Medians and percentiles are exact, the same quantile as the run summary's and every artifact's
(`storage.report.quantiles`: Polars' "linear" interpolation, over a sort that spills to disk, so
it fits the store's 512 MB at 10,000,000 traces where DuckDB's `quantile_cont` does not).

Each query reads `__window`, a one-row table of the report's bounds (`since`, `until`,
timestamps, UTC), groups time by `__unit` (day, week or month, so a long window keeps the page
small), and reads the tables it names; `storage.report.store` runs only the queries whose
tables exist.
"""

from __future__ import annotations

from storage.report.quantiles import quantiles_sql
from storage.schema.confidence import newest_levels
from storage.schema.scoring import newest_score_rows

__all__ = [
    "SECTION_TABLES",
    "LIST_SQL",
    "QUERIES",
    "TABLE_ROWS",
    "fast_form",
    "latest_sql",
    "levels_sql",
]

SCORE_BINS = 20
"""Bins of the score, novelty and judge histograms over [0, 1] (judge scores over [0, 100])."""

TOP_AGENTS = 8
"""Agents drawn on their own in the daily charts; the rest are one line, "(other agents)"."""

LOW_NOVELTY = 0.2
"""Novelty below this counts as low: the trace nearly repeats an earlier one of its scope."""

SECTION_TABLES = {
    "levels": "confidence_traces",
    "judge": "judge_results",
    "quarantine": "quarantine",
    "runs": "runs",
    "operations": "operation_scores",
}
"""The table behind each section that may be empty although the database has scores: whether
it holds any row at all (not only in the report's window) says whether the section's step
never ran. The tables themselves, not their `latest_` views, which rank every row to be read."""

TABLE_ROWS = 15
"""Rows shown per table of traces; the table says how many it leaves out."""


def latest_sql(kept: bool) -> str:
    """The window's latest scores, read once into a temporary table that the score queries
    share; `kept`: the database keeps them (`storage.store.commit.keeps_latest_scores`), else
    they are found in the history (`newest_score_rows`: on a DuckLake of 1,000,000 traces the
    old view's ranking ran out of the store's 256 MB, and the report was not written)."""
    newest = "latest_scores" if kept else newest_score_rows("scores")
    return f"""
CREATE OR REPLACE TEMP TABLE __latest AS
SELECT trace_id, created_at, agent_id, task_domain, profile, score, novelty, shareable, overrides,
       w_complexity * complexity AS c_part, w_novelty * novelty AS n_part,
       w_tool_diversity * tool_diversity AS d_part,
       w_outcome_confidence * outcome_confidence AS o_part
FROM {newest}, __window
WHERE created_at >= since AND created_at < until
"""


def levels_sql(one_source: bool) -> str:
    """Each trace's newest level, for the traces in the window, into `__levels`; `one_source`:
    the database holds levels of one source (`storage.confidence.store.one_level_source`), so
    each trace's one row is its newest (at 10,000,000 traces 4.0 s, against 10.1 s grouped)."""
    newest = newest_levels(
        "confidence_traces SEMI JOIN __latest USING (trace_id)", one_source=one_source
    )
    return f"CREATE OR REPLACE TEMP TABLE __levels AS SELECT * FROM {newest}"


_LEVELS = newest_levels("confidence_traces")

_AGENT_DAY_MEDIANS = quantiles_sql(
    "s", ("day", "agent"), {"median_score": ("score", 0.5), "median_novelty": ("novelty", 0.5)}
)
_DOMAIN_QUANTILES = quantiles_sql(
    "s",
    ("domain",),
    {
        "median_score": ("score", 0.5),
        "p90_score": ("score", 0.9),
        "median_novelty": ("novelty", 0.5),
    },
)

QUERIES: dict[str, tuple[tuple[str, ...], str]] = {
    "score_bins": (
        ("latest_scores",),
        f"""
        SELECT coalesce(task_domain, '(none)') || ' / ' || profile AS series,
               least(floor(score * {SCORE_BINS}), {SCORE_BINS - 1}) / {SCORE_BINS} AS bin,
               count(*) AS traces
        FROM __latest GROUP BY ALL ORDER BY series, bin
        """,
    ),
    "agent_days": (
        ("latest_scores",),
        f"""
        WITH top AS (
            SELECT agent_id FROM __latest WHERE agent_id IS NOT NULL
            GROUP BY agent_id ORDER BY count(*) DESC, agent_id LIMIT {TOP_AGENTS}
        ), s AS (
            SELECT CAST(date_trunc('__unit', created_at) AS DATE) AS day,
                   CASE WHEN agent_id IN (SELECT agent_id FROM top) THEN agent_id
                        ELSE '(other agents)' END AS agent,
                   score, novelty
            FROM __latest
        ), q AS (
            {_AGENT_DAY_MEDIANS}
        )
        SELECT day, '__unit' AS unit, agent, count(*) AS traces,
               any_value(q.median_score) AS median_score,
               any_value(q.median_novelty) AS median_novelty,
               avg(CAST(novelty < {LOW_NOVELTY} AS DOUBLE)) AS low_novelty_share
        FROM s JOIN q USING (day, agent) GROUP BY day, agent ORDER BY agent, day
        """,
    ),
    "contributions": (
        ("latest_scores",),
        """
        SELECT coalesce(task_domain, '(none)') AS domain, count(*) AS traces,
               avg(c_part) AS C, avg(n_part) AS N, avg(d_part) AS D, avg(o_part) AS O,
               avg(score) AS mean_score
        FROM __latest GROUP BY ALL ORDER BY traces DESC, domain
        """,
    ),
    "domains": (
        ("latest_scores",),
        f"""
        WITH s AS (
            SELECT coalesce(task_domain, '(none)') AS domain, score, novelty, shareable
            FROM __latest
        ), q AS (
            {_DOMAIN_QUANTILES}
        )
        SELECT domain, count(*) AS traces, any_value(q.median_score) AS median_score,
               any_value(q.p90_score) AS p90_score,
               any_value(q.median_novelty) AS median_novelty,
               avg(CAST(shareable AS DOUBLE)) AS shareable_rate
        FROM s JOIN q USING (domain) GROUP BY domain ORDER BY traces DESC, domain
        """,
    ),
    "level_days": (
        ("latest_scores", "confidence_traces"),
        """
        SELECT CAST(date_trunc('__unit', s.created_at) AS DATE) AS day, '__unit' AS unit, c.level, count(*) AS traces
        FROM __latest s JOIN __levels c USING (trace_id)
        GROUP BY ALL ORDER BY day, level
        """,
    ),
    "judge_bins": (
        ("latest_judge_results",),
        f"""
        SELECT metric, least(floor(score / 100 * {SCORE_BINS}), {SCORE_BINS - 1})
                   * 100 / {SCORE_BINS} AS bin, count(*) AS results
        FROM latest_judge_results, __window
        WHERE judged_at >= since AND judged_at < until AND score IS NOT NULL
        GROUP BY ALL ORDER BY metric, bin
        """,
    ),
    "judge_status": (
        ("latest_judge_results",),
        """
        SELECT metric, status, count(*) AS results
        FROM latest_judge_results, __window
        WHERE judged_at >= since AND judged_at < until
        GROUP BY ALL ORDER BY metric, status
        """,
    ),
    "judge_cost": (
        ("judge_results",),
        """
        SELECT CAST(date_trunc('__unit', judged_at) AS DATE) AS day, '__unit' AS unit, coalesce(model, '(none)') AS model,
               sum(coalesce(cost_usd, 0)) AS cost_usd, count(*) AS calls
        FROM judge_results, __window
        WHERE judged_at >= since AND judged_at < until
        GROUP BY ALL ORDER BY day, model
        """,
    ),
    "quarantine_days": (
        ("quarantine", "runs"),
        """
        SELECT CAST(date_trunc('__unit', r.started_at) AS DATE) AS day, '__unit' AS unit, q.rule, count(*) AS rows
        FROM quarantine q JOIN runs r USING (run_id), __window
        WHERE r.started_at >= since AND r.started_at < until
        GROUP BY ALL ORDER BY day, rule
        """,
    ),
    "run_stages": (
        ("runs",),
        """
        WITH recent AS (
            SELECT * FROM runs, __window
            WHERE started_at >= since AND started_at < until AND timings IS NOT NULL
            ORDER BY run_seq DESC LIMIT 60
        )
        SELECT run_seq, flow, status, started_at, t.stage,
               CAST(json_extract(timings, '$."' || t.stage || '"') AS DOUBLE) AS seconds
        FROM recent, unnest(json_keys(timings)) AS t(stage)
        ORDER BY run_seq, stage
        """,
    ),
    "run_rows": (
        ("runs",),
        """
        SELECT run_seq, flow, status, started_at, coalesce(rows_read, 0) AS rows_read,
               coalesce(rows_scored, 0) AS rows_scored,
               coalesce(rows_quarantined, 0) AS rows_quarantined,
               epoch(finished_at - started_at) AS seconds
        FROM runs, __window WHERE started_at >= since AND started_at < until
        ORDER BY run_seq DESC LIMIT 60
        """,
    ),
    "operation_scorers": (
        ("latest_operation_scores",),
        """
        SELECT scorer_set, scorer, count(*) AS cases, sum(CAST(passed AS INT)) AS passed,
               sum(CAST(NOT passed AS INT)) AS failed, round(avg(score), 4) AS mean_score,
               any_value(threshold) AS threshold
        FROM latest_operation_scores GROUP BY ALL ORDER BY scorer_set, scorer
        """,
    ),
    "judge_metrics": (
        ("latest_judge_results",),
        """
        SELECT metric, count(*) AS results, sum(CAST(status = 'ok' AS INT)) AS ok,
               sum(CAST(status <> 'ok' AS INT)) AS not_ok, round(avg(score), 2) AS mean_score,
               round(sum(coalesce(cost_usd, 0)), 4) AS cost_usd
        FROM latest_judge_results, __window
        WHERE judged_at >= since AND judged_at < until
        GROUP BY ALL ORDER BY metric
        """,
    ),
}
"""Name -> (the tables or views it needs, its query)."""

_FAILING_REASON = """
    coalesce(
        details->>'$.unmatchedOperations[0].reason',
        details->>'$.failedOperations[0].reason',
        details->>'$.contentIssues[0]',
        CASE WHEN json_array_length(details->'$.incorrectTargets') > 0
             THEN 'target ' || coalesce(details->>'$.incorrectTargets[0].actual.targetBlockId',
                                        '(none)') || ' instead of '
                  || coalesce(details->>'$.incorrectTargets[0].expected.targetBlockId', '(none)')
        END,
        CASE WHEN json_array_length(details->'$.newBlocks') > 0
             THEN 'new block (' || (details->>'$.newBlocks[0].reason') || ')' END,
        CASE WHEN json_array_length(details->'$.unexpectedDeletions') > 0
             THEN 'unexpected deletion' END,
        CASE WHEN json_array_length(details->'$.unspecifiedChanges') > 0
             THEN 'unspecified change' END,
        '(see details)')
"""

LIST_SQL: dict[str, tuple[tuple[str, ...], str]] = {
    "novel_shareable": (
        ("latest_scores",),
        "SELECT trace_id, agent_id, task_domain, round(novelty, 3) AS novelty, "
        "round(score, 3) AS score FROM latest_scores WHERE shareable{window} "
        "ORDER BY novelty DESC, trace_id",
    ),
    "lowest_scores": (
        ("latest_scores",),
        "SELECT trace_id, agent_id, task_domain, profile, round(score, 3) AS score, "
        "overrides FROM latest_scores WHERE true{window} ORDER BY score, trace_id",
    ),
    "escalate": (
        ("latest_scores", "confidence_traces"),
        "SELECT c.trace_id, s.agent_id, s.task_domain, round(c.aggregate, 3) AS confidence, "
        f"c.reason FROM {' '.join(_LEVELS.split())} c JOIN latest_scores s USING (trace_id) "
        "WHERE c.level = 'ESCALATE'{window} ORDER BY c.aggregate, c.trace_id",
    ),
    "failing_cases": (
        ("latest_operation_scores",),
        "SELECT case_id, scorer_set, scorer, round(score, 3) AS score, threshold, "
        f"{' '.join(_FAILING_REASON.split())} AS first_reason "
        "FROM latest_operation_scores WHERE NOT passed ORDER BY scorer_set, scorer, case_id",
    ),
    "judge_failures": (
        ("latest_judge_results",),
        "SELECT item_id, metric, status, error, model FROM latest_judge_results "
        "WHERE status <> 'ok'{judged} ORDER BY metric, item_id",
    ),
}
"""Tables of rows: name -> (tables needed, the query that lists every row, shown to the reader
so the rest can be listed with `tracegrade sql`; `{window}` and `{judged}` take the report's
date bounds as literal conditions). The report runs them over `__latest` and `__levels`
(`fast_form`), which hold the same rows."""


def fast_form(query: str) -> str:
    """`query` over the temporary tables the report has already filled."""
    return query.replace(" ".join(_LEVELS.split()), "__levels").replace("latest_scores", "__latest")
