-- What a user would write by hand to load the same traces into DuckDB and score them: the
-- baseline of issue 48 and of bench_end_to_end.py. One script, plain SQL: the traces'
-- content stored as it is (CREATE TABLE ... AS), the value scores without the embedder
-- (novelty N = 0.5, as `tracegrade score --no-embedder`) computed from the stored rows
-- and stored, then a CHECKPOINT. No validation, no ledger, no quarantine, no levels: the
-- difference to a tracegrade run is what those cost.
--
-- Run it with the duckdb CLI (pip install duckdb-cli==1.5.5, make install does), the files
-- given as a variable:
--
--   duckdb scores.duckdb -cmd "SET VARIABLE traces = ['a.parquet', 'b.parquet']" \
--       -f bench/hand_written.sql
--
-- Into a DuckLake, attach it and USE it in -cmd first (bench_end_to_end.py --part ducklake
-- shows the line). The formulas are docs/scoring.md's; the domain profiles' weights are
-- the built-in ones (transforms/config/scoring.py), and bench_end_to_end.py compares every
-- score with tracegrade's, so a weight that drifted from them shows there as differing scores.

SET TimeZone = 'UTC';

CREATE TABLE traces AS
SELECT * FROM read_parquet(getvariable('traces'), union_by_name = true);

CREATE TABLE scores AS
WITH profiles (task_domain, w) AS (
  VALUES
    ('finance', [0.2, 0.25, 0.1, 0.45]::DOUBLE[]),
    ('code', [0.2, 0.3, 0.3, 0.2]::DOUBLE[]),
    ('medical', [0.15, 0.2, 0.1, 0.55]::DOUBLE[]),
    ('customer_service', [0.2, 0.3, 0.2, 0.3]::DOUBLE[])
), t AS (
  SELECT id AS trace_id, metadata.task_domain AS task_domain, metadata.success AS success,
    outcome.confidence AS confidence, len(steps)::DOUBLE AS n,
    len(list_distinct(list_transform(steps, lambda s: s.type)))::DOUBLE AS unique_types,
    len(list_filter(steps, lambda s: s.type = 'error_recovery'))::DOUBLE AS recoveries,
    len(list_distinct(list_transform(list_filter(steps, lambda s: s.tool IS NOT NULL),
        lambda s: s.tool.name)))::DOUBLE AS unique_tools,
    len(list_filter(steps, lambda s: s.tool IS NOT NULL)) > 0 AS has_tool,
    coalesce(len(steps) = 1 AND steps[1].type = 'thought', false) AS single_thought
  FROM traces
), f AS (
  SELECT t.*,
    least(1.0, (unique_types / 4.0) * 0.5 + (CASE WHEN recoveries > 0 THEN 0.3 ELSE 0.0 END)
      + (n / 20.0) * 0.2) AS c,
    least(1.0, (unique_tools / greatest(1.0, n)) * 3.0) AS d,
    confidence * (CASE WHEN success THEN 1.0 ELSE 0.3 END) AS o,
    coalesce(p.w, [0.25, 0.35, 0.15, 0.25]::DOUBLE[]) AS w
  FROM t LEFT JOIN profiles p USING (task_domain)
), s AS (
  SELECT *, CASE WHEN single_thought THEN 0.1
    ELSE c * w[1] + 0.5 * w[2] + d * w[3] + o * w[4] END AS r1
  FROM f
), r AS (
  SELECT *, CASE WHEN recoveries > 2 AND success THEN least(1.0, r1 + 0.1) ELSE r1 END AS r2
  FROM s
)
SELECT trace_id, c AS complexity, d AS tool_diversity, o AS outcome_confidence,
  CASE WHEN unique_tools <= 1 AND has_tool THEN greatest(0.0, r2 - 0.1) ELSE r2 END AS score
FROM r;

CHECKPOINT;
