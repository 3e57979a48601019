"""The trace-level rules of an OTel import: success and confidence read off the root span, and
the first rule a trace breaks with its reason (docs/import.md, "Rejections"). Pure Polars over
the per-trace table `transforms.otel` builds."""

from __future__ import annotations

import polars as pl

from transforms.config.otel import OtelImportConfig

__all__ = ["confidence_of", "outcome_unknown_of", "rule_and_reason", "success_of"]

_ERROR = "ERROR"
_OK = "OK"


def success_of(config: OtelImportConfig) -> pl.Expr:
    """metadata.success from the root span, by the configured rule (null: cannot be read)."""
    if config.success == "not_error":
        return pl.col("root_status") != _ERROR
    if config.success == "ok":
        return pl.col("root_status") == _OK
    if config.success == "status":
        status = pl.col("root_status")
        return pl.when(status == _ERROR).then(False).when(status == _OK).then(True)
    value = pl.col("root_success").str.strip_chars().str.to_lowercase()
    return pl.when(value == "true").then(True).when(value == "false").then(False)


def outcome_unknown_of(config: OtelImportConfig) -> pl.Expr:
    """True where the root span records no outcome: an UNSET status ("status"), or no success
    attribute at all ("attribute"); the other rules always give one."""
    if config.success == "status":
        return ~pl.col("root_status").is_in([_ERROR, _OK]).fill_null(False)
    if config.success == "attribute":
        return pl.col("root_success").is_null()
    return pl.lit(False)


def confidence_of(config: OtelImportConfig) -> pl.Expr:
    """outcome.confidence: the root span's attribute when configured (null when it is not a
    number in [0, 1]), else the configured default."""
    if config.confidence_attribute is None:
        return pl.lit(config.default_confidence, dtype=pl.Float64)
    number = pl.col("root_confidence").cast(pl.Float64, strict=False)
    return pl.when(number.is_between(0.0, 1.0)).then(number)


def _shown(column: str) -> pl.Expr:
    """A value for a reason: quoted, cut at 60 characters; `missing` when null."""
    text = pl.col(column)
    cut = pl.when(text.str.len_chars() > 60).then(
        pl.concat_str(text.str.slice(0, 57), pl.lit("..."))
    )
    return pl.coalesce(
        pl.concat_str(pl.lit("'"), pl.coalesce(cut, text), pl.lit("'")), pl.lit("missing")
    )


def rule_and_reason(config: OtelImportConfig) -> tuple[pl.Expr, pl.Expr]:
    """The first trace rule each row breaks, and its reason (both null for a good trace)."""
    span_count = pl.col("span_count").cast(pl.String)
    checks = [
        (
            pl.col("root_span").is_null(),
            "no_root_span",
            pl.lit(
                "every span of the trace names a parent inside it (the parent links form a "
                "loop), so no span can be its root; re-export the trace"
            ),
        ),
        (
            pl.col("steps").list.len().fill_null(0) == 0,
            "empty_trajectory",
            pl.concat_str(
                pl.lit("none of the trace's "),
                span_count,
                pl.lit(
                    " spans is a model call, a tool call or a retrieval with something to show "
                    "(docs/import.md lists what becomes a step); there is nothing the agent did to score"
                ),
            ),
        ),
        (
            pl.col("objective").is_null(),
            "missing_objective",
            pl.lit(
                "no span of the trace carries a user message (gen_ai.input.messages, "
                "llm.input_messages, or input.value of an agent span), so there is no "
                "objective; record the prompt on the model or agent spans"
            ),
        ),
        (
            pl.col("success").is_null() & ~pl.col("outcome_unknown"),
            "invalid_success",
            pl.concat_str(
                pl.lit(f"success attribute {config.success_attribute} of the root span is "),
                _shown("root_success"),
                pl.lit("; it must be true or false"),
            ),
        ),
        (
            pl.col("confidence").is_null(),
            "invalid_confidence",
            pl.concat_str(
                pl.lit(f"confidence attribute {config.confidence_attribute} of the root span is "),
                _shown("root_confidence"),
                pl.lit("; confidence must be a number in [0, 1]"),
            ),
        ),
    ]
    rule: pl.Expr = pl.lit(None, dtype=pl.String)
    reason: pl.Expr = pl.lit(None, dtype=pl.String)
    for broken, name, why in reversed(checks):
        rule = pl.when(broken).then(pl.lit(name)).otherwise(rule)
        reason = pl.when(broken).then(why).otherwise(reason)
    return rule, reason
