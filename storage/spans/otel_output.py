"""Imported OTel traces out: nested trace Parquet (what `tracegrade score` reads), the import
report, and canonical rows for a scoring run that reads span files directly.

Both files are written to a temporary file beside the target and renamed into place, so a
crash or a bad input file leaves the previous files (or none), never half of one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from storage.inputs.canonical import CANONICAL_SCHEMA, STEP_DTYPE, content_hashes
from storage.inputs.chat_files import TRACE_ARROW_SCHEMA
from storage.store.whole_files import replacing
from transforms.otel import REJECTION_SCHEMA
from transforms.trace_schema import STEP, STEP_FILE_FIELDS, Field, file_groups

__all__ = ["canonical_rows", "otel_report_path", "otel_trace_writer", "write_otel_report"]

_ISO_UTC = "%Y-%m-%dT%H:%M:%S%.6fZ"


def otel_report_path(out: str | Path) -> Path:
    """The default report beside `out`: `traces.parquet` -> `traces.import-report.csv`."""
    path = Path(out)
    return path.with_name(f"{path.stem}.import-report.csv")


def _nested_steps() -> pl.Expr:
    """Mapped steps (`tool_name`, no `tool_present`) as a trace file nests them (`tool{name}`,
    null where the step has no tool)."""
    step = pl.element().struct.field
    groups: dict[str, list[Field]] = {}
    for f in STEP_FILE_FIELDS:
        groups.setdefault(f.path[0], []).append(f)
    fields = [
        step(members[0].name).alias(key)
        if len(members[0].path) == 1
        else pl.when(step(members[0].name).is_not_null())
        .then(pl.struct(*(step(f.name).alias(f.path[1]) for f in members)))
        .alias(key)
        for key, members in groups.items()
    ]
    return pl.col("steps").list.eval(pl.struct(*fields)).fill_null([])


def nested_traces(traces: pl.DataFrame) -> pa.Table:
    """Mapped traces (`transforms.otel.OtelMapping.traces`) as `TRACE_ARROW_SCHEMA` rows."""
    columns = [
        _nested_steps().alias(key)
        if key == "steps"
        else pl.struct(*(pl.col(f.name).alias(f.path[1]) for f in fields)).alias(key)
        if len(fields[0].path) == 2
        else pl.col(fields[0].name).alias(key)
        for key, fields in file_groups().items()
    ]
    return traces.select(columns).to_arrow().cast(TRACE_ARROW_SCHEMA)


class OtelTraceWriter:
    """Appends mapped traces to a Parquet file, a frame at a time."""

    def __init__(self, path: Path) -> None:
        self._writer = pq.ParquetWriter(path, TRACE_ARROW_SCHEMA)
        self.rows = 0
        """Traces written so far."""
        self.succeeded = 0
        """Traces written with metadata.success true."""
        self.unknown = 0
        """Traces written with no outcome (metadata.outcome_unknown)."""

    def add(self, traces: pl.DataFrame) -> None:
        """Append `traces` (`OtelMapping.traces` rows)."""
        if traces.is_empty():
            return
        self._writer.write_table(nested_traces(traces))
        self.rows += traces.height
        self.succeeded += int(traces["success"].fill_null(False).sum())
        self.unknown += int(traces["outcome_unknown"].sum())

    def close(self) -> None:
        """Finish the file."""
        self._writer.close()


@contextmanager
def otel_trace_writer(out: str | Path) -> Iterator[OtelTraceWriter]:
    """An `OtelTraceWriter` on a temporary file renamed onto `out` when the block succeeds."""
    with replacing(Path(out)) as temporary:
        writer = OtelTraceWriter(temporary)
        try:
            yield writer
        finally:
            writer.close()


def write_otel_report(rejections: Sequence[pl.DataFrame], out: str | Path) -> Path:
    """Write the rejections (`REJECTION_SCHEMA` frames) as CSV, atomically; header only when
    there are none."""
    target = Path(out)
    frames = [
        frame.cast(pl.Schema(REJECTION_SCHEMA)) for frame in rejections if not frame.is_empty()
    ]  # type: ignore[arg-type]
    report = pl.concat(frames) if frames else pl.DataFrame(schema=REJECTION_SCHEMA)
    report = report.sort(
        "source_file", "record_number", "otel_trace_id", nulls_last=True, maintain_order=True
    )
    with replacing(target) as temporary:
        report.write_csv(temporary)
    return target


_STEP = pl.Struct({f.name: STEP_DTYPE.to_schema()[f.name] for f in STEP_FILE_FIELDS})
"""A mapped step: a canonical step without `tool_present` (a step has a tool when it names
one)."""


def _no_traces() -> pl.DataFrame:
    """A mapped-traces frame with no rows, for a piece of a file that gave no trace."""
    schema = {k: v for k, v in CANONICAL_SCHEMA.items() if k != "steps"}
    return pl.DataFrame(schema={**schema, "steps": pl.List(_STEP)})


def _rejected_rows(rejections: pl.DataFrame, source: str) -> pl.DataFrame:
    """Rejections as canonical rows that carry their rule as `read_rule`."""
    return rejections.select(
        pl.lit(source).alias("source_file"),
        "trace_id",
        pl.col("rule").alias("read_rule"),
        pl.concat_str(
            "reason",
            pl.lit(" ("),
            pl.coalesce(
                pl.concat_str(pl.lit("OTel trace "), "otel_trace_id", pl.lit(", ")), pl.lit("")
            ),
            pl.lit("line or row "),
            pl.col("record_number").cast(pl.String),
            pl.lit(")"),
        ).alias("read_reason"),
    )


def canonical_rows(
    traces: pl.DataFrame | None, rejections: pl.DataFrame, source: str, first_row: int
) -> pl.DataFrame:
    """Mapped traces and rejections as canonical rows of `source` (`CANONICAL_SCHEMA`), so a
    scoring run reads span files like trace files. Rows are numbered from `first_row`: the
    traces first, then the rejections (each with its rule as `read_rule`)."""
    step = pl.element().struct.field
    steps = pl.col("steps").list.eval(
        pl.struct(
            step("tool_name").is_not_null().alias(f.name)
            if f.name == "tool_present"
            else step(f.name)
            for f in STEP
        )
    )
    good = (_no_traces() if traces is None else traces).with_columns(
        pl.lit(source).alias("source_file"),
        pl.col("created_at").dt.to_string(_ISO_UTC).alias("created_at_raw"),
        steps.fill_null([]).cast(CANONICAL_SCHEMA["steps"]),
    )
    good = good.with_columns(content_hash=content_hashes(good))
    rows = pl.concat([good, _rejected_rows(rejections, source)], how="diagonal_relaxed")
    numbered = rows.with_columns(
        row_number=pl.int_range(first_row, first_row + rows.height, dtype=pl.Int64),
        steps=pl.col("steps").fill_null([]),
    )
    return numbered.select(
        pl.col(name).cast(dtype)
        if name in numbered.columns
        else pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in CANONICAL_SCHEMA.items()
    )
