"""Span files read back to say where verdicts belong: each trace's root span and the span each
step was made from, as the OTel import maps them (`transforms.otel.span_targets_of`). Used to
put scores back on spans: Phoenix annotations, OTLP evaluation events, Langfuse scores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from transforms.config.otel import OtelImportConfig

__all__ = ["file_targets"]

_ROOTS = {"trace_id": pl.String, "trace_hex": pl.String, "span_hex": pl.String}
_STEPS = {"trace_id": pl.String, "step_id": pl.Int64, "trace_hex": pl.String, "span_hex": pl.String}


def file_targets(
    paths: Sequence[Path], config: OtelImportConfig | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The root spans (trace_id, trace_hex, span_hex) and the step spans (trace_id, step_id,
    trace_hex, span_hex) of the traces in the span files `paths`, read with `config` (the
    OTel import's defaults when None)."""
    from storage.spans.otel_files import iter_span_chunks
    from transforms.otel import span_targets_of
    from transforms.otel_spans import span_facts

    config = config or OtelImportConfig()
    facts = [
        span_facts(chunk.spans, config)
        for path in paths
        for chunk in iter_span_chunks(path, config)
    ]
    if not facts:
        return pl.DataFrame(schema=_ROOTS), pl.DataFrame(schema=_STEPS)
    return span_targets_of(pl.concat(facts), config)
