"""OpenTelemetry spans to ReasoningTrace rows: one trace per OTel trace id (or per top-level
agent span), its steps in start order, each span counted once as mapped or dropped by a rule.

A pure mapping over Polars frames of `FACT_SCHEMA` rows (`transforms.otel_spans`): a caller
hands it every span of a set of traces at once (the import spools spans by trace id so that a
trace's spans arrive together). The rules and their order are docs/import.md.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field

import polars as pl

from transforms._chat_shapes import code_final_answer, final_answer
from transforms._otel_checks import (
    confidence_of,
    outcome_unknown_of,
    rule_and_reason,
    success_of,
)
from transforms._otel_steps import step_rows, step_spans, steps_per_group
from transforms.config.otel import OtelImportConfig

__all__ = [
    "DROP_RULES",
    "REJECTION_SCHEMA",
    "TRACE_RULES",
    "OtelMapping",
    "map_spans",
    "otel_trace_id",
    "span_targets_of",
]

DROP_RULES = (
    "agent_span",
    "not_agent_work",
    "no_text_output",
    "echoed_model_call",
    "duplicate_span",
    "invalid_span",
    "outside_agent",
    "rejected_trace",
)
"""Why a span is not a step; every span read is mapped to a step or dropped by one of these."""

TRACE_RULES = (
    "no_root_span",
    "empty_trajectory",
    "missing_objective",
    "invalid_success",
    "invalid_confidence",
)
"""Why a trace is rejected, in the order checked (the first broken is reported)."""

REJECTION_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "record_number": pl.Int64(),
    "otel_trace_id": pl.String(),
    "span_id": pl.String(),
    "trace_id": pl.String(),
    "rule": pl.String(),
    "reason": pl.String(),
}
"""One rejected trace, span or record: where it starts, its ids when known, rule and reason."""

_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "tracegrade:import:otel")
_MAX_DEPTH = 256
_ERROR = "ERROR"


@dataclass(frozen=True)
class OtelMapping:
    """What `map_spans` made of a set of spans.

    Attributes:
        traces: one row per imported trace: `trace_id`, `otel_trace_id`, `source_file`,
            `record_number` (of its root span), `created_at`, `agent_id`, `task_domain`,
            `success` (null with `outcome_unknown` where the root span records no outcome),
            `objective`, `result_summary`, `confidence` and `steps`.
        rejections: `REJECTION_SCHEMA` rows (rejected traces and invalid spans).
        spans: how many spans were mapped (`mapped`) and dropped, per rule.
    """

    traces: pl.DataFrame
    rejections: pl.DataFrame
    spans: dict[str, int] = field(default_factory=dict)


def otel_trace_id(otel_trace: str, root_span: str | None = None) -> str:
    """The trace id of an imported OTel trace (or agent run): `kp:trace:` + a UUID-5, so the
    same spans imported again give the same id."""
    name = otel_trace if root_span is None else f"{otel_trace}/{root_span}"
    return f"kp:trace:{uuid.uuid5(_NAMESPACE, name)}"


def _top_agents(spans: pl.DataFrame) -> pl.Series:
    """Per span: the id of its outermost agent span (itself when it is one and has no agent
    above it), walking parent links up to `_MAX_DEPTH` levels; null when there is none."""
    links = spans.select(
        "trace_hex",
        pl.col("span_hex").alias("_ptr"),
        "parent_hex",
        (pl.col("kind") == "agent").alias("_agent"),
    ).unique(["trace_hex", "_ptr"], keep="first")
    walk = spans.select("trace_hex", pl.col("span_hex").alias("_ptr")).with_columns(
        _top=pl.lit(None, dtype=pl.String)
    )
    for _ in range(_MAX_DEPTH):
        step = walk.join(links, on=["trace_hex", "_ptr"], how="left", maintain_order="left")
        walk = step.select(
            "trace_hex",
            pl.col("parent_hex").alias("_ptr"),
            pl.when(pl.col("_agent")).then(pl.col("_ptr")).otherwise(pl.col("_top")).alias("_top"),
        )
        if walk["_ptr"].null_count() == walk.height:
            break
    return walk["_top"]


def _grouped(spans: pl.DataFrame, config: OtelImportConfig) -> pl.DataFrame:
    """`spans` with `group` (the imported trace), `is_root` and `outcome` (null, or the rule
    that drops the span before the steps are made)."""
    valid = pl.col("trace_hex").is_not_null() & pl.col("span_hex").is_not_null()
    valid = valid & pl.col("start_ns").is_not_null()
    first = pl.struct("trace_hex", "span_hex").is_first_distinct()
    marked = spans.with_columns(
        outcome=pl.when(~valid)
        .then(pl.lit("invalid_span"))
        .when(~first)
        .then(pl.lit("duplicate_span"))
    )
    if config.group_by == "agent":
        live = marked.filter(pl.col("outcome").is_null())
        top = live.select("trace_hex", "span_hex").with_columns(_top=_top_agents(live))
        marked = marked.join(top, on=["trace_hex", "span_hex"], how="left", maintain_order="left")
        marked = marked.with_columns(
            group=pl.concat_str("trace_hex", pl.lit("/"), "_top"),
            outcome=pl.coalesce(
                "outcome", pl.when(pl.col("_top").is_null()).then(pl.lit("outside_agent"))
            ),
            is_root=pl.col("span_hex") == pl.col("_top"),
        ).drop("_top")
    else:
        known = marked.filter(pl.col("outcome").is_null()).select(
            "trace_hex", pl.col("span_hex").alias("parent_hex"), _parent=pl.lit(True)
        )
        marked = (
            marked.join(known, on=["trace_hex", "parent_hex"], how="left", maintain_order="left")
            .with_columns(group=pl.col("trace_hex"), is_root=pl.col("_parent").is_null())
            .drop("_parent")
        )
    return marked.with_columns(
        pl.when(pl.col("outcome").is_null()).then(pl.col("group")).alias("group"),
        pl.col("is_root") & pl.col("outcome").is_null(),
    )


def _roots(live: pl.DataFrame) -> pl.DataFrame:
    """One root span per group: a span without a parent first, then an orphan (its parent is
    not in the input), the earliest first."""
    return (
        live.filter(pl.col("is_root"))
        .sort("group", pl.col("parent_hex").is_not_null(), "start_ns", "span_hex")
        .group_by("group", maintain_order=True)
        .first()
        .select(
            "group",
            pl.col("trace_hex").alias("otel_trace_id"),
            pl.col("span_hex").alias("root_span"),
            "source_file",
            "record_number",
            pl.col("start_ns").alias("root_start"),
            pl.col("status").alias("root_status"),
            # a root typed as a model call that holds no model text (an app's own span that
            # Langfuse's SDK typed GENERATION): what it returned, where that is plain text
            pl.coalesce(
                "text",
                pl.when(
                    (pl.col("kind") == "llm")
                    & (pl.col("tool_output").str.strip_chars() != "")
                    & ~pl.col("tool_output").str.strip_chars_start().str.contains(r"^[\[{]")
                ).then("tool_output"),
            ).alias("root_text"),
            pl.col("success_value").alias("root_success"),
            pl.col("confidence_value").alias("root_confidence"),
        )
    )


def _final_answers(live: pl.DataFrame, tools: list[str]) -> pl.DataFrame:
    """Per group that called one of the final-answer `tools`: the answer its last such call
    was given (`final_answer`, as `import chat` reads it)."""
    called = pl.coalesce("tool_name", "name")
    last = (
        live.filter((pl.col("kind") == "tool") & called.is_in(tools))
        .sort("group", "start_ns", "span_hex")
        .group_by("group", maintain_order=True)
        .agg(pl.col("tool_input").last())
    )
    answers = [final_answer(arguments) for arguments in last["tool_input"].to_list()]
    return last.select("group", final_answer=pl.Series(answers, dtype=pl.String))


def _outer_run_answers(live: pl.DataFrame, roots: pl.DataFrame) -> pl.DataFrame:
    """Per group: the plain-text answer (not JSON) of the last agent or chain span right
    under its root to start (`outer_run_text`), for a root that holds none: an app's own span
    around a framework's run (Langfuse's SDK around a CrewAI crew, whose output is the crew's
    answer); where the app ran several, the last one's (pydantic-ai's second joke run after
    its first; the evaluator run after them answers in JSON, so not it)."""
    runs = live.filter(
        pl.col("kind").is_in(["agent", "chain"])
        & (pl.col("text").str.strip_chars() != "")
        & ~pl.col("text").str.strip_chars_start().str.contains(r"^[\[{]")
    )
    return (
        runs.join(
            roots.select("group", parent_hex="root_span"), on=["group", "parent_hex"], how="semi"
        )
        .sort("group", "start_ns", "span_hex")
        .group_by("group", maintain_order=True)
        .agg(outer_run_text=pl.col("text").last())
    )


def _code_answers(fields: pl.DataFrame, tools: list[str]) -> pl.DataFrame:
    """Per group whose last model reply calls a final-answer tool in its code (a code agent
    traced without its tool spans: smolagents through the model client alone), the literal
    the call was given (`code_answer`)."""
    if not tools:
        return fields.with_columns(code_answer=pl.lit(None, pl.String))
    called = pl.col("last_model_text").str.contains(
        "(" + "|".join(re.escape(tool) for tool in tools) + r")\s*\("
    )
    texts = fields.select(pl.when(called).then("last_model_text")).to_series().to_list()
    answers = [code_final_answer(text, tools) if text else None for text in texts]
    return fields.with_columns(code_answer=pl.Series(answers, dtype=pl.String))


_CREWAI_TASK = (
    r"(?s)^\s*Current Task: (.+?)\n\nThis is the expected criteria for your final answer:.*$"
)
"""The prompt CrewAI composes from a task (the model call's user message): the task is group 1."""

_SMOLAGENTS_PLAN = (
    r"(?s)^You are a world expert at analyzing a situation to derive facts, and plan accordingly"
    r" towards solving a task\..*\nNow begin! Here is your task:\n```\n(.+?)\n```\nFirst in part"
    r" 1, write the facts survey, then in part 2, write your plan\.\s*$"
)
"""smolagents' planning prompt (1.x, its first model call where the agent plans first): the
task, fenced at its end, is group 1."""


def _trace_fields(live: pl.DataFrame) -> pl.DataFrame:
    """Per group: the objective, the answer of its last model call, agent and domain."""
    priority = pl.when(pl.col("is_root")).then(0).when(pl.col("kind") == "llm").then(1).otherwise(2)
    ordered = live.sort("group", priority, "start_ns", "span_hex")
    root_first = ordered.sort("group", ~pl.col("is_root"), "start_ns", maintain_order=True)
    model_text = pl.col("text").filter(
        (pl.col("kind") == "llm") & (pl.col("text").str.strip_chars() != "")
    )
    # A framework's structured inputs (a JSON object or array: MLflow's function arguments)
    # are the objective only where no span holds the task as text.
    structured = pl.col("user_text").str.strip_chars_start().str.contains(r"^[\[{]")
    run = (
        pl.col("kind").is_in(["agent", "chain"])
        & ~pl.col("is_root")
        & (pl.col("user_text").str.strip_chars() != "")
        & ~structured
    )
    answered = (  # an agent's own answer in text (not a chain's state, not JSON)
        (pl.col("kind") == "agent")
        & ~pl.col("is_root")
        & (pl.col("text").str.strip_chars() != "")
        & ~pl.col("text").str.strip_chars_start().str.contains(r"^[\[{]")
    )
    fields = ordered.group_by("group", maintain_order=True).agg(
        # smolagents sends the task as "New task:\n" + task (its TaskStep), or first its
        # planning prompt with the task fenced at its end; CrewAI as "Current Task: " + task +
        # its expected output and instructions: the task alone
        objective=pl.coalesce(
            pl.col("user_text").filter(~structured).drop_nulls().first(),
            pl.col("user_text").drop_nulls().first(),
        )
        .str.replace(r"^New task:\n", "")
        .str.replace(_CREWAI_TASK, "${1}")
        .str.replace(_SMOLAGENTS_PLAN, "${1}"),
        _run_text=pl.col("user_text").filter(run).sort_by(pl.col("start_ns").filter(run)).first(),
        _root_text=pl.col("user_text").filter(pl.col("is_root")).drop_nulls().first(),
        last_model_text=model_text.sort_by(
            pl.col("start_ns").filter(
                (pl.col("kind") == "llm") & (pl.col("text").str.strip_chars() != "")
            )
        ).last(),
        # where no model call answered in text (an agent that handed its run to another over
        # A2A, whose root is the protocol's span): the outermost agent's own answer
        run_answer=pl.col("text")
        .filter(answered)
        .sort_by(pl.col("start_ns").filter(answered))
        .first(),
    )
    who = root_first.group_by("group", maintain_order=True).agg(
        agent=pl.col("agent_name").drop_nulls().first(),
        service=pl.col("service_name").drop_nulls().first(),
        agent_version=pl.col("service_version").drop_nulls().first(),
        tags=pl.col("tags").drop_nulls().first(),
        agent_span=pl.col("agent_span").drop_nulls().first(),
        domain=pl.col("domain").drop_nulls().first(),
    )
    return _composed_prompts(fields).join(who, on="group", how="left")


_RUN_WORDS = 3
"""The fewest words a run's input has to be taken over the prompt composed around it."""


def _composed_prompts(fields: pl.DataFrame) -> pl.DataFrame:
    """The objective where a model call's prompt was composed around the run's input: a
    chain or agent span below the root whose input is plain text of `_RUN_WORDS` words or more
    that the prompt holds as words of its own (a retrieval chain's question inside its
    template with the documents found) gives that text; a root span's own text stays the
    objective."""
    run = pl.col("_run_text")
    held = pl.col("objective").str.contains(
        pl.lit(r"(^|\W)") + run.str.escape_regex() + pl.lit(r"(\W|$)")
    )
    # a task or question of a few words at least, not a name a helper chain was given
    worded = run.str.count_matches(r"\S+") >= _RUN_WORDS
    composed = pl.col("_root_text").is_null() & worded & (run != pl.col("objective"))
    return fields.with_columns(
        objective=pl.when(composed & held).then(run).otherwise("objective")
    ).drop("_run_text", "_root_text")


def _tag_list(text: str) -> list[str] | None:
    """A tags attribute's text as the trace's tags: a JSON array's items (each as text), any
    other text as the one tag it is; None for an empty array or blank text."""
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if not isinstance(value, list):
        return [text] if text.strip() else None
    tags = [
        item if isinstance(item, str) else json.dumps(item) for item in value if item is not None
    ]
    return tags or None


def _table(live: pl.DataFrame, steps: pl.DataFrame, config: OtelImportConfig) -> pl.DataFrame:
    """One row per group with every trace field, the rule it breaks and the reason."""
    groups = live.group_by("group", maintain_order=True).agg(
        span_count=pl.len(),
        first_file=pl.col("source_file").first(),
        first_record=pl.col("record_number").min(),
        trace_hex=pl.col("trace_hex").first(),
    )
    roots = _roots(live)
    table = (
        groups.join(roots, on="group", how="left", maintain_order="left")
        .join(_outer_run_answers(live, roots), on="group", how="left", maintain_order="left")
        .join(
            _code_answers(_trace_fields(live), config.final_answer_tools),
            on="group",
            how="left",
            maintain_order="left",
        )
        .join(
            _final_answers(live, config.final_answer_tools),
            on="group",
            how="left",
            maintain_order="left",
        )
        .join(steps, on="group", how="left", maintain_order="left")
        .with_columns(
            success=success_of(config),
            outcome_unknown=outcome_unknown_of(config),
            confidence=confidence_of(config),
        )
    )
    ids = [otel_trace_id(group) for group in table["group"].to_list()]
    rule, reason = rule_and_reason(config)
    return table.with_columns(
        trace_id=pl.Series(ids, dtype=pl.String),
        rule=rule,
        reason=reason,
        source_file=pl.coalesce("source_file", "first_file"),
        record_number=pl.coalesce("record_number", "first_record"),
    )


def _traces(accepted: pl.DataFrame, config: OtelImportConfig) -> pl.DataFrame:
    return accepted.select(
        "trace_id",
        pl.col("trace_hex").alias("otel_trace_id"),
        "source_file",
        "record_number",
        (pl.col("root_start") // 1000)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
        .alias("created_at"),
        pl.coalesce(
            "agent", "service", "agent_span", pl.lit(config.agent_id, dtype=pl.String)
        ).alias("agent_id"),
        pl.coalesce("domain", pl.lit(config.task_domain, dtype=pl.String)).alias("task_domain"),
        "success",
        "outcome_unknown",
        "agent_version",
        pl.col("tags").map_elements(_tag_list, return_dtype=pl.List(pl.String)).alias("tags"),
        "objective",
        pl.coalesce(
            "root_text",
            "final_answer",
            "code_answer",
            "outer_run_text",
            "last_model_text",
            "run_answer",
            pl.lit(""),
        ).alias("result_summary"),
        "confidence",
        "steps",
    )


def _span_outcomes(
    spans: pl.DataFrame, rows: pl.DataFrame, rejected: pl.DataFrame
) -> dict[str, int]:
    """How many spans were mapped to steps, and dropped per rule."""
    keep = rows.select("group", "span_hex", pl.col("keep").alias("_keep"), _echo="echo")
    failed = rejected.select("group", _rejected=pl.lit(True))
    outcome = (
        spans.join(keep, on=["group", "span_hex"], how="left")
        .join(failed, on="group", how="left")
        .select(
            pl.coalesce(
                "outcome",
                pl.when(pl.col("_rejected")).then(pl.lit("rejected_trace")),
                pl.when(pl.col("kind").is_in(["agent", "chain"])).then(pl.lit("agent_span")),
                pl.when(pl.col("_echo")).then(pl.lit("echoed_model_call")),
                pl.when(pl.col("_keep")).then(pl.lit("mapped")),
                pl.when(pl.col("_keep").not_()).then(pl.lit("no_text_output")),
                pl.lit("not_agent_work"),
            ).alias("outcome")
        )
    )
    counts = dict(outcome.group_by("outcome").len().iter_rows())
    return {name: int(counts.get(name, 0)) for name in ("mapped", *DROP_RULES)}


_SPAN_CHECKS = (
    ("trace_hex", "no valid trace id (missing, or not a 16-byte id)"),
    ("span_hex", "no valid span id (missing, or not an 8-byte id)"),
    ("start_ns", "no start time"),
)
"""What makes a span invalid, each check in words; the reason names those that failed."""


def _invalid_spans(spans: pl.DataFrame) -> pl.DataFrame:
    return spans.filter(pl.col("outcome") == "invalid_span").select(
        "source_file",
        "record_number",
        pl.col("trace_hex").alias("otel_trace_id"),
        pl.col("span_hex").alias("span_id"),
        pl.lit(None, dtype=pl.String).alias("trace_id"),
        pl.lit("invalid_span").alias("rule"),
        pl.concat_str(
            pl.lit("span "),
            pl.coalesce(pl.concat_str(pl.lit("'"), "name", pl.lit("'")), pl.lit("(no name)")),
            pl.lit(" has "),
            pl.concat_list(
                pl.when(pl.col(column).is_null()).then(pl.lit(what))
                for column, what in _SPAN_CHECKS
            )
            .list.drop_nulls()
            .list.join(", "),
            pl.lit(", so it cannot be placed in a trace; fix the exporter"),
        ).alias("reason"),
    )


def map_spans(facts: pl.DataFrame, config: OtelImportConfig) -> OtelMapping:
    """Map every span of `facts` (`FACT_SCHEMA`, all spans of the traces involved) to traces.

    Returns the imported traces, the rejections (traces that break a rule, spans that cannot
    be placed) and the span counts: spans in = mapped + dropped, per rule.
    """
    spans = _grouped(facts, config)
    live = spans.filter(pl.col("outcome").is_null())
    rows = step_rows(live, config)
    table = _table(live, steps_per_group(rows, config), config)
    accepted = table.filter(pl.col("rule").is_null())
    rejected = table.filter(pl.col("rule").is_not_null())
    rejections = pl.concat(
        [
            _invalid_spans(spans),
            rejected.select(
                "source_file",
                "record_number",
                pl.col("trace_hex").alias("otel_trace_id"),
                pl.col("root_span").alias("span_id"),
                "trace_id",
                "rule",
                "reason",
            ),
        ]
    ).cast(pl.Schema(REJECTION_SCHEMA))
    return OtelMapping(
        traces=_traces(accepted, config),
        rejections=rejections,
        spans=_span_outcomes(spans, rows, rejected),
    )


def span_targets_of(
    facts: pl.DataFrame, config: OtelImportConfig
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Where the verdicts on the traces `map_spans` makes of `facts` belong: each trace's
    root span (trace_id, trace_hex, span_hex) and the span each step was made from
    (trace_id, step_id, trace_hex, span_hex)."""
    live = _grouped(facts, config).filter(pl.col("outcome").is_null())
    roots = _roots(live).select("group", trace_hex="otel_trace_id", span_hex="root_span")
    steps = step_spans(step_rows(live, config))

    def named(frame: pl.DataFrame) -> pl.DataFrame:
        ids = [otel_trace_id(group) for group in frame["group"].to_list()]
        return frame.select(pl.Series("trace_id", ids, dtype=pl.String), pl.exclude("group"))

    return named(roots), named(steps)
