"""Derived mode: GRACE's factors read off the trace export itself, no extra input, no LLM.

Each plan step becomes a ConfidenceFactors row, filled the way the original's executor fills
it (grace/executor.py at ceb06343: tool counts and rate from the tool's success, source
agreement 1.0 when there are no texts to compare), then scored by the same calculator.
Rules (docs/confidence.md, Derived mode; the constants are `[confidence.derived]`):
- a tool call is a tool_call step, or an error_recovery step that names a tool (a retry);
  its result is its output_summary, else the observation that answers it (the n-th
  observation of a trace answers its n-th call without an output_summary, when it follows it);
- a call failed when the step right after it is an error_recovery step, or when its result
  reads as an error (`error_pattern`, or a JSON object with an error key, an error status,
  an error flag true or a success flag false);
- a call is a plan step of its own only when it failed or repeats an earlier call of the
  trace (same tool, same input): a successful first call is work done, not doubt, so the
  number of calls does not lower confidence (it means failure on one agent and success on
  another; docs/confidence.md, Checked elsewhere);
- a call is a search when its tool name matches `search_tool_pattern`; a search that did not
  fail has one result of relevance `search_relevance`, unless its result is empty
  (`empty_result_pattern`): then it has none;
- with `thought_steps`, each thought step (and error_recovery step without a tool: a retried
  model call) is a plan step without tools; a thought before the trace's last step is one
  plan step per line that holds a letter or a digit, at most `thought_lines_max` (what the
  agent stated, listed or weighed on its way; the last step's thought is the answer being
  written, whose length says nothing general);
- every trace ends with one `answer` step (non-search, no search results): tool counts summed
  over every call of the trace, tool_success_rate = successes / executions (1.0 without
  tools), source_count = successful calls. The trace's outcome.confidence is not a factor:
  it caps the trace's confidence (`outcome_caps`), so a lower one never gives a calmer level;
  so does `empty_answer_cap` when the final answer (outcome.result_summary) is blank;
- with `answer_support`, the answer step's query_coverage is the share of the answer's words
  (runs of `support_min_letters` letters, lowercased, distinct) found in the text the trace
  held before it: the objective and every step's content, input and output_summary, except a
  last thought (the answer being written). At least just above the coverage floor, so it
  always joins the mean and less support never scores higher; none without such words.
"""

from __future__ import annotations

import math

import polars as pl

from transforms.confidence.batch import FACTOR_SCHEMA
from transforms.confidence.exact import divide
from transforms.config.confidence import ConfidenceConfig, DerivedRules

__all__ = [
    "HELD_TEXT_FIELDS",
    "SOURCE_AGREEMENT",
    "STATEMENT_LINE",
    "STEP_KINDS",
    "WORD_GAPLESS_RANGES",
    "derived_factors",
    "outcome_caps",
    "result_is_error",
]

STEP_KINDS = ("tool_call", "thought", "answer", "factors")
"""`step_kind` of a plan step: a derived tool call, thought or answer, or a factors-table row."""

DERIVED_COLUMNS = {**FACTOR_SCHEMA, "step_kind": pl.String(), "source_step_id": pl.Int64()}
"""FACTOR_SCHEMA plus where the step came from (the trace step's step_id)."""

SOURCE_AGREEMENT = 1.0
"""The executor's source agreement when there are no source texts to compare."""

WORD_GAPLESS_RANGES = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
)
"""Kana, CJK ideographs and Hangul syllables: letters of scripts written without spaces
between words, which the answer's words leave out (a run of them is no word)."""

STATEMENT_LINE = r"(?m)^[^\n]*?[\p{L}\p{Nd}]"
"""A line of a thought that states something: one holding a letter or a decimal digit (Rust
regex syntax, matched once per line)."""

HELD_TEXT_FIELDS = ("content", "input", "output_summary")
"""The fields of a step whose text an answer can draw on (the answer's coverage)."""

_EMPTY_VALUES = ["", "null", "false", "[]", "{}"]
"""A JSON value that does not hold an error (as json_path_match writes it)."""


def _json_field(text: pl.Expr, key: str) -> pl.Expr:
    return text.str.json_path_match(f"$.{key}")


_MAYBE_OBJECT = r"^\s*\{"
"""Text that may be a JSON object (whitespace, then a brace): only such a result can hold a
key. Others are not handed to the JSON parser at all, eight times a result (the keys below),
which took a fifth of deriving the factors of realistic traces."""


def result_is_error(result: pl.Expr, rules: DerivedRules) -> pl.Expr:
    """Whether a tool result (text, possibly a JSON object) reports a failure; null is not."""
    checks = [result.str.contains(rules.error_pattern)]
    obj = pl.when(result.str.contains(_MAYBE_OBJECT)).then(result)
    for key in rules.error_keys:
        value = _json_field(obj, key)
        checks.append(value.is_not_null() & ~value.str.strip_chars().is_in(_EMPTY_VALUES))
    statuses = [status.lower() for status in rules.error_statuses]
    checks += [
        _json_field(obj, key).str.to_lowercase().is_in(statuses) for key in rules.status_keys
    ]
    checks += [_json_field(obj, key) == "true" for key in rules.error_flags]
    checks += [_json_field(obj, key) == "false" for key in rules.success_flags]
    return pl.any_horizontal(check.fill_null(False) for check in checks)


def _step_rows(traces: pl.LazyFrame) -> pl.LazyFrame:
    """One row per trace step: _trace, trace_id, pos, and the step's fields; traces without
    steps none."""
    numbered = traces.with_row_index("_trace")
    return (
        numbered.select(
            "_trace",
            "trace_id",
            pos=pl.int_ranges(0, pl.col("steps").list.len(), dtype=pl.Int64),
            step=pl.col("steps"),
        )
        .explode(["pos", "step"])
        .filter(pl.col("pos").is_not_null())
        .unnest("step")
    )


def _next_in_trace(value: pl.Expr) -> pl.Expr:
    """`value` of the next step of the same trace in `_step_rows` (null for a trace's last
    step). Those rows hold each trace's steps together, in order, so a shift of the whole
    frame finds it: a window per trace took several times as long."""
    return pl.when(pl.col("_trace").shift(-1) == pl.col("_trace")).then(value.shift(-1))


def _count_in_trace(flag: pl.Expr) -> pl.Expr:
    """How many steps of the trace up to this one (itself included) have `flag`, in
    `_step_rows` (a trace's steps together, in order): the running count over the frame less
    its value before the trace's first step."""
    ones = flag.cast(pl.Int64)
    running = ones.cum_sum()
    first = (pl.col("_trace") != pl.col("_trace").shift(1)).fill_null(True)
    return running - pl.when(first).then(running - ones).forward_fill()


def _trace_key(number: str) -> pl.Expr:
    """`_trace` and the count `number` as one join key (one integer key joins faster than
    two); both are below 2**32 (the row index of a frame, a trace's steps)."""
    return pl.col("_trace").cast(pl.UInt64) * (1 << 32) + pl.col(number).cast(pl.UInt64)


def _calls(steps: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """The tool-call rows of `_step_rows` with `ok`, `search`, `found` and `step` (a plan step
    of its own: failed, or a repeat of an earlier call)."""
    rules = config.derived
    kind = pl.col("type")
    is_call = (kind == "tool_call") | (
        (kind == "error_recovery") & pl.col("tool_name").is_not_null()
    )
    awaits = is_call & pl.col("output_summary").is_null()
    observation = kind == "observation"
    marked = steps.with_columns(
        _retried=(_next_in_trace(kind) == "error_recovery").fill_null(False),
        _is_call=is_call,
        _k=pl.when(awaits).then(_count_in_trace(awaits)),
        _obs_k=pl.when(observation).then(_count_in_trace(observation)),
    )
    answers = marked.filter(pl.col("_obs_k").is_not_null()).select(
        _key=_trace_key("_obs_k"), _obs_pos="pos", _obs_text="content"
    )
    # A repeat is found by one distinct over the calls, not by a window per trace.
    calls = (
        marked.filter("_is_call")
        .with_columns(
            _repeat=~pl.struct("_trace", "tool_name", "input").is_first_distinct(),
            _key=_trace_key("_k"),
        )
        .join(answers, on="_key", how="left", maintain_order="left")
        .drop("_key")
    )
    answered = pl.col("_obs_pos") > pl.col("pos")
    result = pl.coalesce("output_summary", pl.when(answered).then(pl.col("_obs_text")))
    search = pl.col("tool_name").str.contains(config.search_tool_pattern).fill_null(False)
    return (
        calls.with_columns(_result=result)
        .with_columns(
            ok=~(pl.col("_retried") | result_is_error(pl.col("_result"), rules)),
            search=search,
            _empty=pl.col("_result").str.contains(rules.empty_result_pattern).fill_null(False),
        )
        .with_columns(
            found=pl.col("search") & pl.col("ok") & ~pl.col("_empty"),
            step=~pl.col("ok") | pl.col("_repeat"),
        )
    )


def _answer_words_pattern(min_letters: int) -> str:
    """The regex (Rust syntax) of an answer's words: runs of letters outside
    WORD_GAPLESS_RANGES, at least `min_letters` long."""
    gapless = "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in WORD_GAPLESS_RANGES)
    return f"[\\p{{L}}--[{gapless}]]{{{min_letters},}}"


def _answer_coverage(traces: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """_trace and coverage of the traces whose answer has words: the share of them found in
    what the trace held before it, raised to just above the coverage floor. No rows without a
    result_summary column or with `answer_support` off (a left join gives the others null)."""
    numbered = traces.with_row_index("_trace")
    names = traces.collect_schema().names()
    rules = config.derived
    if not rules.answer_support or "result_summary" not in names:
        return pl.LazyFrame(schema={"_trace": pl.UInt32, "coverage": pl.Float64})
    steps = pl.col("steps")
    ends_in_thought = (steps.list.last().struct.field("type") == "thought").fill_null(False)
    before = steps.list.head(steps.list.len() - ends_in_thought.cast(pl.Int64))
    step_texts = before.list.eval(
        pl.concat_str(
            [pl.element().struct.field(f) for f in HELD_TEXT_FIELDS],
            separator="\n",
            ignore_nulls=True,
        )
    ).list.join("\n")
    objective = pl.col("objective") if "objective" in names else pl.lit(None, pl.String)
    held = pl.concat_str([objective, step_texts], separator="\n", ignore_nulls=True)
    words = (
        pl.col("result_summary")
        .str.to_lowercase()
        .str.extract_all(_answer_words_pattern(rules.support_min_letters))
        .list.unique()
    )
    found = (
        numbered.select("_trace", held=held.str.to_lowercase(), word=words)
        .explode("word")
        .filter(pl.col("word").is_not_null())
        .group_by("_trace")
        .agg(share=pl.col("held").str.contains(pl.col("word"), literal=True).mean())
    )
    least = math.nextafter(config.query_coverage_floor, math.inf)
    return found.select("_trace", coverage=pl.max_horizontal("share", least))


def _thought_rows(steps: pl.LazyFrame, rules: DerivedRules) -> pl.LazyFrame:
    """The plan steps of thoughts and model-call retries (error_recovery without a tool) in
    `_step_rows`: one per statement line of a thought before the trace's last step (at least
    one, at most `thought_lines_max`, all at the thought's position), one for any other."""
    kind = pl.col("type")
    thought = kind == "thought"
    reasoning = thought | ((kind == "error_recovery") & pl.col("tool_name").is_null())
    before_last = _next_in_trace(pl.col("pos")).is_not_null()
    lines = pl.col("content").fill_null("").str.count_matches(STATEMENT_LINE)
    count = pl.when(thought & before_last).then(lines.clip(1, rules.thought_lines_max)).otherwise(1)
    return (
        steps.with_columns(_count=count)
        .filter(reasoning)
        .select(
            "_trace",
            "trace_id",
            pl.col("pos").repeat_by("_count"),
            "step_id",
            ok=True,
            search=False,
            found=False,
            kind=pl.lit("thought"),
        )
        .explode("pos")
    )


def _plan_rows(traces: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """Every plan step (_trace, step_index, source_step_id, kind, ok, search, found), the
    answer rows (with the trace's calls, successes and coverage) last in each trace."""
    steps = _step_rows(traces)
    keep = ["_trace", "trace_id", "pos", "step_id", "ok", "search", "found"]
    calls = _calls(steps, config).select(*keep, "step", kind=pl.lit("tool_call"))
    parts = [calls.filter("step").drop("step")]
    if config.derived.thought_steps:
        parts.append(_thought_rows(steps, config.derived))
    counts = calls.group_by("_trace").agg(calls=pl.len(), successes=pl.col("ok").sum())
    answers = (
        traces.with_row_index("_trace")
        .select("_trace", "trace_id", pos=pl.col("steps").list.len().cast(pl.Int64))
        .join(counts, on="_trace", how="left", maintain_order="left")
        .join(_answer_coverage(traces, config), on="_trace", how="left", maintain_order="left")
        .with_columns(pl.col("calls", "successes").fill_null(0).cast(pl.Int64))
        .with_columns(
            step_id=pl.lit(None, pl.Int64),
            ok=True,
            search=False,
            found=False,
            kind=pl.lit("answer"),
        )
    )
    plan = pl.concat(parts, how="diagonal_relaxed").with_columns(
        calls=pl.lit(None, pl.Int64),
        successes=pl.lit(None, pl.Int64),
        coverage=pl.lit(None, pl.Float64),
    )
    return pl.concat([plan, answers], how="diagonal_relaxed").sort("_trace", "pos")


def _factors(relevance: float) -> dict[str, pl.Expr]:
    """The ConfidenceFactors columns of tool-call, thought and answer rows."""
    kind, ok, search, found = pl.col("kind"), pl.col("ok"), pl.col("search"), pl.col("found")
    answer, call = kind == "answer", kind == "tool_call"
    calls, successes = pl.col("calls"), pl.col("successes")
    rate = pl.when(calls > 0).then(divide(successes, calls)).otherwise(1.0)
    return {
        "search_result_count": found.cast(pl.Int64),
        "search_avg_score": pl.when(found).then(relevance).otherwise(0.0),
        "search_max_score": pl.when(found).then(relevance).otherwise(0.0),
        "search_score_variance": pl.when(found).then(0.0).otherwise(1.0),
        "source_agreement": pl.lit(SOURCE_AGREEMENT),
        "source_count": pl.when(answer).then(successes).otherwise(0),
        "llm_self_confidence": pl.lit(None, pl.Float64),
        "tool_success_rate": pl.when(answer)
        .then(rate)
        .when(call)
        .then(ok.cast(pl.Float64))
        .otherwise(1.0),
        "tool_execution_count": pl.when(answer).then(calls).when(call).then(1).otherwise(0),
        "tool_success_count": pl.when(answer)
        .then(successes)
        .when(call)
        .then(ok.cast(pl.Int64))
        .otherwise(0),
        "query_coverage": pl.col("coverage"),
        "is_search_step": search,
    }


def derived_factors(traces: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """Plan steps with their factors, from trace_id and steps (step_id, type, tool_name,
    input, content, output_summary), and result_summary and objective where the frame has
    them; one `answer` step per trace, so a trace with no steps still gets one. A null factor
    (self-confidence; query coverage but the answer's) is left for the original's default.

    Rows come trace by trace in input order, each trace's plan steps in step order with its
    answer step last (`trace_levels(..., ordered=True)` relies on this).
    """
    return (
        _plan_rows(traces, config)
        .select(
            "trace_id",
            step_index="pos",
            **_factors(config.derived.search_relevance),
            step_kind="kind",
            source_step_id="step_id",
        )
        .select(pl.col(name).cast(dtype) for name, dtype in DERIVED_COLUMNS.items())
    )


def outcome_caps(traces: pl.LazyFrame, rules: DerivedRules) -> pl.LazyFrame:
    """trace_id and cap, the most derived confidence a trace gets: its outcome.confidence, and
    at most `empty_answer_cap` when its result_summary is blank (a null one was not recorded:
    no cap; a frame without the column has none)."""
    cap = pl.col("confidence").cast(pl.Float64)
    if "result_summary" in traces.collect_schema().names():
        blank = pl.col("result_summary").str.strip_chars() == ""
        cap = (
            pl.when(blank.fill_null(False))
            .then(pl.min_horizontal(cap, pl.lit(rules.empty_answer_cap)))
            .otherwise(cap)
        )
    return traces.select("trace_id", cap=cap)
