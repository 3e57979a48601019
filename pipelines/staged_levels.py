"""Derived levels computed in the scoring run's read pass, from the staged rows while they are
in memory: the same columns the value score is computed from, read once.

Each batch of valid rows is held until DERIVED_CHUNK_TRACES rows (`confidence_stages`) have come, then its levels are
computed and written as work files keyed by the rows' staging order (`_order`): an id can
appear twice in a run (a duplicate settled later), so the id alone does not name a row. After
the commit, the confidence stage takes the levels of the traces the run stored
(`confidence_stages.derived_stage` with `StagedParts`); rows that were settled as duplicates,
found unchanged or rejected with their file are never taken.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import polars as pl

from pipelines import confidence_stages
from pipelines.confidence_stages import (
    COMPUTED_STEPS,
    COMPUTED_TRACES,
    StagedParts,
    level_frames,
    write_level_part,
)
from transforms.confidence.derived import derived_factors, outcome_caps
from transforms.config.confidence import ConfidenceConfig

__all__ = ["STAGED_LEVELS", "StagedLevels", "staged_levels"]

STAGED_LEVELS = "staged-levels"
"""The folder of a run's work folder that holds the levels computed while staging."""

_INPUT = (
    "_order",
    "trace_id",
    "content_hash",
    "confidence",
    "result_summary",
    "objective",
    "steps",
)
"""The staged columns derived mode reads."""

_PARTS = (COMPUTED_STEPS, COMPUTED_TRACES)


def staged_levels(
    rows: pl.DataFrame, config: ConfidenceConfig
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The scored plan steps and the levels of staged `rows` (with `_order`), each row with
    its `_order`, trace_id and (levels) input_hash, the content hash it was computed from."""
    keyed = rows.lazy().select(
        pl.col("_order").cast(pl.String).alias("trace_id"),
        "confidence",
        "result_summary",
        "objective",
        "steps",
    )
    scored, traces = level_frames(
        derived_factors(keyed, config),
        config,
        ordered=True,
        caps=outcome_caps(keyed, config.derived),
    )
    ids = rows.select("_order", "trace_id", input_hash="content_hash")

    def named(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
        return (
            frame.with_columns(_order=pl.col("trace_id").cast(pl.Int64))
            .drop("trace_id")
            .join(ids.select("_order", *columns), on="_order", how="left", maintain_order="left")
        )

    return named(scored, ["trace_id"]), named(traces, ["trace_id", "input_hash"])


class StagedLevels:
    """Takes each staged batch (`add`), writes the levels of every DERIVED_CHUNK_TRACES rows
    as a numbered pair of parts in `folder`; `flush` computes the rest and waits for them.

    A chunk is computed on a thread of its own while the read pass goes on with the next
    batches (Polars works outside the GIL, the read pass's hashing inside it); at most one
    chunk is in flight, so memory holds one more chunk, not the input.
    """

    def __init__(self, config: ConfidenceConfig, run_id: str, folder: Path) -> None:
        self.config = config
        self.run_id = run_id
        self.folder = folder
        self._held: list[pl.DataFrame] = []
        self._rows = 0
        self._parts = 0
        self._worker: ThreadPoolExecutor | None = None
        self._in_flight: Future[None] | None = None

    def parts(self, fresh: Path) -> StagedParts:
        """The parts written, with the run's file of fresh traces, for the confidence stage."""
        return StagedParts(self.folder, fresh)

    def add(self, rows: pl.DataFrame) -> None:
        """Hold a batch of valid staged rows (with `_order`); compute whole chunks."""
        if not rows.height:
            return
        self._held.append(rows.select(_INPUT))
        self._rows += rows.height
        chunk = confidence_stages.DERIVED_CHUNK_TRACES
        while self._rows >= chunk:
            self._compute(chunk)

    def flush(self) -> None:
        """Compute what is still held; return once every part is written (a chunk's error
        is raised here or by the next `add`)."""
        try:
            if self._rows:
                self._compute(self._rows)
            self._wait()
        finally:
            if self._worker is not None:
                self._worker.shutdown(wait=True, cancel_futures=True)
                self._worker = None

    def _wait(self) -> None:
        if self._in_flight is not None:
            done, self._in_flight = self._in_flight, None
            done.result()

    def _compute(self, rows: int) -> None:
        held = pl.concat(self._held, rechunk=False) if len(self._held) > 1 else self._held[0]
        chunk, rest = held.head(rows), held.slice(rows)
        self._held, self._rows = ([rest], rest.height) if rest.height else ([], 0)
        self.folder.mkdir(parents=True, exist_ok=True)
        number = f"{self._parts:05d}"
        self._parts += 1
        self._wait()
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="staged-levels")
        self._in_flight = self._worker.submit(self._write, chunk, number)

    def _write(self, chunk: pl.DataFrame, number: str) -> None:
        scored, traces = staged_levels(chunk, self.config)
        steps, levels = (self.folder / name.replace("*", number) for name in _PARTS)
        write_level_part(scored, traces, self.config, "derived", self.run_id, (steps, levels))
