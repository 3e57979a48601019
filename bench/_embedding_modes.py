"""The fast embedding modes against fp32 on the demo archive: the embed stage's texts/s in each
mode, and how far the novelty N of every scored trace moves when it is computed from the
mode's vectors instead of fp32's.

Each mode runs the stages stage_inputs -> plan_novelty -> embed_texts (timed) -> replay_staged
on a fresh DuckDB store over the same demo archive (tracegrade.demo.write_demo_archive, the
default scope `agent`), with its model loaded, prepared and warmed up before the timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
import polars as pl
from _common import Check, fmt_rate

from pipelines.embedder import SentenceEmbedder
from pipelines.novelty_stages import embed_texts, replay_staged
from pipelines.runs import Run
from pipelines.stages import plan_novelty
from pipelines.staging import NOVELTY, stage_inputs
from storage.store.registry import held_store
from transforms.config.scoring import ScoringFile

__all__ = ["ModeRun", "TARGET_MAX_N", "TARGET_MEAN_N", "TARGET_SPEEDUP", "mode_checks", "run_mode"]

TARGET_SPEEDUP = 3.0
TARGET_MAX_N = 0.01
TARGET_MEAN_N = 0.001


@dataclass(frozen=True)
class ModeRun:
    """One mode over the demo archive: what the embed stage did, its seconds, and N."""

    precision: str
    mode: str
    counts: dict[str, int]
    seconds: float
    novelty: pl.DataFrame

    @property
    def rate(self) -> float:
        """Texts embedded per second by the stage."""
        return self.counts["texts_embedded"] / self.seconds


def run_mode(archive: list[Path], work: Path, precision: str, prepared: Path) -> ModeRun:
    """Score the archive's novelty in `precision` on a fresh database under `work`."""
    import time

    settings = ScoringFile.model_validate(
        {"embedding": {"precision": precision, "prepared_dir": str(prepared)}}
    )
    SentenceEmbedder(settings.embedding).encode(["warm-up text"] * 64)
    with held_store(work / f"{precision}.duckdb") as store:
        handle = store.begin_run(
            "bench_embedding modes",
            version=version("tracegrade"),
            model=settings.embedding.model_key(),
            config=settings.model_dump(mode="json"),
            config_hash=settings.config_hash,
        )
        folder = work / f"{precision}.work"
        folder.mkdir()
        run = Run(str(store.path), handle.run_id, handle.run_seq, str(folder))
        stage_inputs(store, run, [str(path) for path in archive])
        plan_novelty(store, run, settings, embed=True)
        started = time.perf_counter()
        counts = embed_texts(store, run, settings)
        seconds = time.perf_counter() - started
        replay_staged(store, run, settings)
        novelty = pl.read_parquet(run.path(NOVELTY), columns=["trace_id", "novelty"])
    print(f"{precision} ({settings.embedding.mode()}): {counts}, embed stage {seconds:.2f} s")
    return ModeRun(precision, settings.embedding.mode(), counts, seconds, novelty.sort("trace_id"))


def n_difference(reference: ModeRun, other: ModeRun) -> np.ndarray:
    """|N(other) - N(reference)| for every trace both scored."""
    joined = reference.novelty.join(other.novelty, on="trace_id", suffix="_other")
    if joined.height != reference.novelty.height:
        raise SystemExit(f"{other.mode} scored other traces than fp32")
    return np.abs(joined["novelty"].to_numpy() - joined["novelty_other"].to_numpy())


def mode_checks(reference: ModeRun, other: ModeRun) -> list[Check]:
    """The rows of one fast mode against fp32: speed, the N differences, the truncated texts."""
    delta = n_difference(reference, other)
    speedup = other.rate / reference.rate
    name = f"{other.precision} ({other.mode})"
    return [
        Check(
            f"demo archive embed stage, {name} / fp32 (texts/s)",
            fmt_rate(other.rate),
            fmt_rate(reference.rate),
            f"{speedup:.2f}x",
            f">= {TARGET_SPEEDUP:.0f}x",
            speedup >= TARGET_SPEEDUP,
        ),
        Check(
            f"max |N diff| {name} vs fp32 ({len(delta):,} traces)",
            f"{delta.max():.4f}",
            "",
            "",
            f"<= {TARGET_MAX_N}",
            bool(delta.max() <= TARGET_MAX_N),
        ),
        Check(
            f"mean |N diff| {name} vs fp32",
            f"{delta.mean():.5f}",
            "",
            "",
            f"<= {TARGET_MEAN_N}",
            bool(delta.mean() <= TARGET_MEAN_N),
        ),
        Check(
            f"traces with |N diff| > 0.01, {name}",
            f"{int((delta > 0.01).sum()):,}",
            "",
            "",
            "",
            None,
        ),
    ]
