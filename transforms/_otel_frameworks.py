"""What frameworks write in their own shapes into OpenInference's and their own span
attributes, worked out in Python for the spans that hold them, for `transforms.otel_spans`:
OpenLLMetry's entity arguments and results, Haystack's runs and model calls, LangChain's and
LlamaIndex's serialised outputs. Each adds its text columns to the span frame (`_row`-keyed),
null where a span holds none."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from transforms._crewai import crew_output
from transforms._haystack import replies_text, run_answer, run_objective
from transforms._langchain import output_said
from transforms._llama_index import tool_output_text
from transforms._openllmetry import entity_arguments, entity_result

__all__ = ["framework_texts", "haystack_kind"]

_GENERATOR = pl.col("haystack.component.type").str.ends_with("ChatGenerator")
"""A Haystack pipeline's chat generator: a model call."""


def framework_texts(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` (span rows with their `kind`) with `_tl_input`, `_tl_output` (OpenLLMetry),
    `_hs_user`, `_hs_text` (Haystack), `_fw_output` and `_fw_task` (LangChain, LlamaIndex,
    CrewAI)."""
    return _framework_outputs(_haystack_texts(_openllmetry_texts(frame)))


def haystack_kind() -> pl.Expr:
    """What Haystack's spans are (`transforms._haystack`): an agent step's model call or a
    pipeline's chat generator, a tool call, an agent's run."""
    return (
        pl.when(pl.col("haystack.agent.step.llm.output").is_not_null() | _GENERATOR)
        .then(pl.lit("llm"))
        .when(pl.col("haystack.tool.name").is_not_null())
        .then(pl.lit("tool"))
        .when(pl.col("haystack.agent.input").is_not_null())
        .then(pl.lit("agent"))
    )


def _haystack_texts(frame: pl.DataFrame) -> pl.DataFrame:
    """`_hs_user`, `_hs_text`: a Haystack run's task and answer, a model call's replies (and a
    chat generator's first user message), JSON that Python reads (`transforms._haystack`); null
    elsewhere."""
    given = pl.coalesce(
        "haystack.agent.input", pl.when(_GENERATOR).then("haystack.component.input")
    )
    got = pl.col("haystack.agent.output")
    replies = pl.coalesce(
        "haystack.agent.step.llm.output", pl.when(_GENERATOR).then("haystack.component.output")
    )
    picked = frame.filter(given.is_not_null() | got.is_not_null() | replies.is_not_null())
    rows = [
        (row, run_objective(asked), replies_text(said) if said is not None else run_answer(ended))
        for row, asked, ended, said in picked.select(
            "_row", given.alias("_in"), got.alias("_out"), replies.alias("_said")
        ).iter_rows()
    ]
    return _with_texts(frame, ("_hs_user", "_hs_text"), rows)


def _with_texts(
    frame: pl.DataFrame, names: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> pl.DataFrame:
    """`frame` with text columns `names`: set on the rows given (`_row` and a text each,
    worked out in Python), null elsewhere."""
    if not rows:
        return frame.with_columns(pl.lit(None, pl.String).alias(name) for name in names)
    schema: dict[str, pl.DataType] = {
        "_row": frame.schema["_row"],
        **{name: pl.String() for name in names},
    }
    texts = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.join(texts, on="_row", how="left", maintain_order="left")


def _openllmetry_texts(frame: pl.DataFrame) -> pl.DataFrame:
    """`_tl_input`, `_tl_output`: what a tool's or a run's OpenLLMetry arguments and result
    say (`entity_arguments`, `entity_result`: JSON that Python reads), null elsewhere."""
    given, got = pl.col("traceloop.entity.input"), pl.col("traceloop.entity.output")
    picked = frame.filter(
        pl.col("kind").is_in(["tool", "agent", "chain"]) & (given.is_not_null() | got.is_not_null())
    )
    rows = [
        (
            row,
            entity_arguments(arguments) if arguments is not None and kind == "tool" else None,
            entity_result(result) if result is not None else None,
        )
        for row, kind, arguments, result in picked.select("_row", "kind", given, got).iter_rows()
    ]
    return _with_texts(frame, ("_tl_input", "_tl_output"), rows)


def _framework_outputs(frame: pl.DataFrame) -> pl.DataFrame:
    """`_fw_output`, `_fw_task`: what a run's or tool's `output.value` says where a framework's
    own serialisation is written there (OpenInference's instrumentations): LangChain's (a
    LangGraph state's last model message, a tool's `ToolMessage`; `transforms._langchain`), a
    LlamaIndex `ToolOutput` (`transforms._llama_index`), or a CrewAI crew's or task's output
    (its answer, and the task it was given; `transforms._crewai`); null elsewhere."""
    output = pl.col("output.value")
    picked = frame.filter(
        pl.col("kind").is_in(["tool", "agent", "chain"])
        & output.str.contains(r'^\{"(messages|type|lc|blocks|raw|description)"').fill_null(False)
    )
    rows = []
    for row, text in picked.select("_row", output).iter_rows():
        try:
            value = json.loads(text)  # decoded once for the three readings
        except ValueError:
            continue
        task, answer = crew_output(value)
        rows.append((row, answer or output_said(value) or tool_output_text(value), task))
    return _with_texts(frame, ("_fw_output", "_fw_task"), rows)
