"""Spans of traces that may go on in a later run's files, kept in the database between runs.

An export window or a rotated file can end in the middle of an agent's run: Langfuse's blob
storage export writes each observation into the file of the window it starts in, the
Collector's file exporter each span into the file open when the span ends. A nightly run then
reads the first part of such a trace and the next night's run the rest. So a run that reads
span files keeps the spans of every trace whose last span started or ended within
`open_trace_minutes` of the newest span start it read (`OPEN_SPANS`, published with the run),
and a later run that reads span files maps each of those traces again together with its
later spans (`OpenTraces.earlier`): the trace is stored whole, as one run over both nights'
files stores it. Kept spans are let go `open_trace_days` after the run that kept them
(`OPEN_UNTIL`): by wall-clock time, not by the times of another run's spans, which may come
from another export whose files say nothing of these traces.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from storage.store.duckdb_store import DuckDBStore
from transforms.otel_spans import FACT_SCHEMA

__all__ = ["OPEN_SPANS", "OPEN_UNTIL", "OpenTraces", "kept_traces", "open_traces"]

OPEN_SPANS = "open_spans.parquet"
"""The spans a run keeps for the runs after it (a run's work file, published with it)."""
OPEN_UNTIL = "open_until.parquet"
"""A run's cut-off for the spans earlier runs kept: those kept before it are let go (one
row, `until`)."""

_NEVER = datetime(9999, 1, 1, tzinfo=UTC)
_FACTS = pl.Struct(FACT_SCHEMA)
_LAST = pl.max_horizontal("start_ns", "end_ns").max().over("trace_hex")
"""A trace's last span start or end."""


def kept_traces(store: DuckDBStore) -> pl.Series:
    """The ids of the traces earlier runs kept spans of (read while a run's ledger check has
    the file attached, so the reading of span files does not attach it again for nothing)."""
    return store.sql("SELECT DISTINCT trace_hex FROM open_spans")["trace_hex"]


def open_traces(store: DuckDBStore, kept: pl.Series, window_ns: int, days: int) -> OpenTraces:
    """What a run that reads span files carries: the spans earlier runs kept of the traces
    `kept` (`kept_traces`) that its files go on with, read once its files are parked (none
    where the run keeps none, `window_ns` 0: it lets them go); `days`: how long the spans it
    keeps wait for a later run."""
    if window_ns <= 0:
        kept = kept.clear()

    def spans_of(traces: pl.Series) -> pl.DataFrame:
        going_on = traces.filter(traces.is_in(kept.implode()))
        if going_on.is_empty():
            return _no_spans()  # the file is not attached again for nothing
        try:
            return _kept_spans(store, going_on)
        finally:
            store.release()  # the run's reading goes on with its own files

    return OpenTraces(spans_of, window_ns, days, was_empty=kept.is_empty() and window_ns > 0)


def _kept_spans(store: DuckDBStore, traces: pl.Series) -> pl.DataFrame:
    """The spans earlier runs kept of `traces` (`FACT_SCHEMA` rows), a trace's spans
    together. A span kept by an older version lacks the facts added since (null)."""
    frame = store.sql_with(
        "SELECT s.span FROM open_spans s SEMI JOIN __traces t USING (trace_hex) "
        "ORDER BY s.trace_hex, s.last_ns",
        traces=traces.alias("trace_hex").to_frame(),
    )
    if frame.is_empty():
        return _no_spans()
    return frame.select(pl.col("span").str.json_decode(_FACTS)).unnest("span")


def _no_spans() -> pl.DataFrame:
    return pl.DataFrame(schema=FACT_SCHEMA)


@dataclass
class OpenTraces:
    """What a run that reads span files carries between runs: the spans earlier runs kept
    of the traces its files hold (`earlier`), merged into those traces (`joined`), and the
    spans it keeps itself (`keep`, then `write`).

    Args:
        kept_of: the spans earlier runs kept of the given trace ids (`open_traces`).
        window_ns: `open_trace_minutes` in nanoseconds; 0 keeps nothing.
        days: `open_trace_days`.
    """

    kept_of: Callable[[pl.Series], pl.DataFrame]
    window_ns: int
    days: int
    was_empty: bool = False
    """No span was kept before this run (nothing to let go)."""
    newest_ns: int | None = None
    """The newest span start of the files this run read."""
    kept: list[pl.DataFrame] = field(default_factory=list)
    _traces: list[pl.Series] = field(default_factory=list)
    _earlier: pl.DataFrame | None = None
    _joined: set[str] = field(default_factory=set)

    def read(self, traces: list[pl.Series], newest: int | None) -> None:
        """A file was read whole: the traces its spans belong to, and its newest span start
        (a file that could not be read, whose spans are left out, is not given)."""
        self._traces += traces
        if newest is not None and (self.newest_ns is None or newest > self.newest_ns):
            self.newest_ns = newest

    def next_files(self) -> None:
        """A run of files read together begins (`otel_readers.JOINED_BYTES`): the kept spans
        are looked up again for the traces its files hold."""
        self._earlier = None

    @property
    def earlier(self) -> pl.DataFrame:
        """The spans earlier runs kept of the traces the files read together hold, read once
        every one of them is parked."""
        if self._earlier is None:
            traces = (
                pl.concat(self._traces).unique() if self._traces else pl.Series([], dtype=pl.String)
            )
            self._earlier = self.kept_of(traces)
            self._traces = []
        return self._earlier

    def joined(self, bucket: pl.DataFrame) -> pl.DataFrame:
        """`bucket` (one spool bucket's facts) with the kept spans of the traces it holds put
        before its own, flagged `_earlier`, each named as a span of the first of this run's
        files that holds its trace (so its trace is handed over as a row of that file)."""
        if self.earlier.is_empty():
            return bucket
        first = (
            bucket.filter(pl.col("trace_hex").is_not_null())
            .group_by("trace_hex", maintain_order=True)
            .agg(pl.col("source_file").first(), pl.col("record_number").first())
        )
        earlier = self.earlier.drop("source_file", "record_number").join(
            first, on="trace_hex", how="inner", maintain_order="left"
        )
        if earlier.is_empty():
            return bucket
        self._joined.update(earlier["trace_hex"].unique().to_list())
        return pl.concat(
            [
                earlier.select(bucket.columns).with_columns(_earlier=pl.lit(True)),
                bucket.with_columns(_earlier=pl.lit(False)),
            ]
        )

    def counts(self) -> dict[str, int]:
        """The traces this run joined with kept spans, and those whose spans it keeps (the
        run summary's counts, where any)."""
        kept = pl.concat([frame["trace_hex"] for frame in self.kept]).n_unique() if self.kept else 0
        counts = {"traces_joined": len(self._joined), "traces_kept_open": kept}
        return {name: count for name, count in counts.items() if count}

    def keep(self, bucket: pl.DataFrame) -> None:
        """Keep the spans of `bucket`'s traces (earlier runs' kept spans included) whose last
        span started or ended within the window of the newest span start. A span the mapping
        cannot place (no id, no start) is not kept: it would be rejected again by every run
        that joins its trace."""
        if self.window_ns <= 0 or self.newest_ns is None:
            return
        since = self.newest_ns - self.window_ns
        placed = pl.all_horizontal(
            pl.col("trace_hex").is_not_null(),
            pl.col("span_hex").is_not_null(),
            pl.col("start_ns").is_not_null(),
        )
        spans = bucket.filter(placed).with_columns(last_ns=_LAST)
        open_ = spans.filter(pl.col("last_ns") >= since)
        if not open_.is_empty():
            self.kept.append(
                open_.select(
                    "trace_hex",
                    "span_hex",
                    "last_ns",
                    span=pl.struct(*FACT_SCHEMA).struct.json_encode(),
                )
            )

    def write(self, folder: Path, run_id: str) -> None:
        """The run's `OPEN_SPANS` and `OPEN_UNTIL` in `folder`, for its publication; nothing
        where the run read no span, or keeps none and none was kept before."""
        if self.newest_ns is None or (self.was_empty and not self.kept):
            return
        schema = {"trace_hex": pl.String, "span_hex": pl.String, "last_ns": pl.Int64}
        kept = (
            pl.concat(self.kept) if self.kept else pl.DataFrame(schema=schema | {"span": pl.String})
        )
        # A trace that runs of files read apart both hold: each span once (the later copy),
        # the trace's last time its latest.
        once = kept.unique(["trace_hex", "span_hex"], keep="last", maintain_order=True)
        once.select(
            "trace_hex",
            pl.col("last_ns").max().over("trace_hex"),
            pl.lit(run_id).alias("run_id"),
            "span",
        ).write_parquet(folder / OPEN_SPANS)
        # With no window, every span kept before is let go.
        until = _now() - timedelta(days=self.days) if self.window_ns > 0 else _NEVER
        pl.DataFrame({"until": [until]}, schema={"until": pl.Datetime("us", "UTC")}).write_parquet(
            folder / OPEN_UNTIL
        )


def _now() -> datetime:
    return datetime.now(UTC)
