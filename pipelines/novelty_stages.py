"""The embedding and novelty replay stages of a scoring run (plain functions of paths and keys)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import polars as pl

from pipelines.embedder import SentenceEmbedder
from pipelines.progress import stage_progress
from pipelines.runs import Run
from pipelines.staging import NOVELTY, PLAN
from storage.store.duckdb_store import DuckDBStore
from storage.store.hashing import embedding_keys
from storage.store.staging_store import staged_rows
from transforms.config.scoring import ScoringFile
from transforms.novelty import NoveltyResult, replay_novelty
from transforms.replay import trace_text

__all__ = ["Replay", "embed_texts", "pending_texts", "put_vectors", "replay_staged"]

Vectors = npt.NDArray[np.float32]

CHUNK_TEXTS_MIN = 1024
"""Fewest texts per stored chunk (else 32 batches): a crash loses at most one chunk's work."""


def _texts_for(store: DuckDBStore, run: Run, plan: pl.DataFrame) -> pl.DataFrame:
    """trace_id and novelty text of every plan row (fresh rows from staging, others stored)."""
    fresh_ids = plan.filter("fresh")["trace_id"]
    fresh = staged_rows(store, run.run_id, ["trace_id", "objective", "steps"], ids=fresh_ids)
    fresh = fresh.select("trace_id", trace_text())
    history = plan.filter(~pl.col("fresh")).select("trace_id")
    if history.is_empty():
        return fresh
    stored = store.traces_for(history["trace_id"], ["trace_id", "objective", "steps"])
    return pl.concat([fresh, stored.select("trace_id", trace_text())])


def _other_modes(store: DuckDBStore, settings: ScoringFile, text_shas: pl.Series) -> int:
    """How many of `text_shas` have a stored vector of another mode of the same model (made
    under another precision or length): those texts are embedded again in this run's mode."""
    prefix = f"{settings.embedding.model}|"
    current = settings.embedding.model_key()
    others = [key for key in store.embedding_models() if key.startswith(prefix) and key != current]
    found = pl.Series("text_sha", [], dtype=pl.String)
    for other in others:
        keys = embedding_keys(other, text_shas)
        missing = store.missing_embeddings(keys)
        stored = text_shas.filter(~keys.is_in(missing.implode()))
        found = pl.concat([found, stored]).unique()
    return found.len()


def pending_texts(
    store: DuckDBStore, run: Run, settings: ScoringFile
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The plan's texts with no stored vector (embedding_key, text; longest first), and counts:
    texts_embedded, texts_cached, and texts_other_mode (to embed, but stored in another mode)."""
    model_key = settings.embedding.model_key()
    plan = pl.read_parquet(run.path(PLAN), columns=["trace_id", "text_sha", "fresh"])
    keys = plan.with_columns(embedding_key=embedding_keys(model_key, plan["text_sha"]))
    distinct = keys["embedding_key"].n_unique()
    missing = store.missing_embeddings(keys["embedding_key"])
    if missing.is_empty():
        todo = pl.DataFrame(schema={"embedding_key": pl.String, "text": pl.String})
        return todo, {"texts_embedded": 0, "texts_cached": distinct}
    wanted = keys.join(pl.DataFrame({"embedding_key": missing}), on="embedding_key").unique(
        "embedding_key", keep="first", maintain_order=True
    )
    todo = (
        wanted.join(_texts_for(store, run, wanted), on="trace_id")
        .sort(pl.col("text").str.len_chars(), descending=True)
        .select("embedding_key", "text")
    )
    counts = {"texts_embedded": todo.height, "texts_cached": distinct - todo.height}
    other_mode = _other_modes(store, settings, wanted["text_sha"])
    return todo, counts | ({"texts_other_mode": other_mode} if other_mode else {})


def embed_texts(store: DuckDBStore, run: Run, settings: ScoringFile) -> dict[str, int]:
    """Embed every plan text whose vector is not stored yet, longest first, committing per chunk
    (and letting go of the database file after each commit).

    A writer thread stores each chunk while the next one is encoded (and, where the model does
    not count them itself, counts the chunk's truncated texts while it is encoded); counts add
    texts_truncated, the texts longer than max_seq_length tokens.
    """
    todo, counts = pending_texts(store, run, settings)
    store.release()  # loading the model and encoding need no file: others may open it
    if todo.is_empty():
        return counts
    embedder = SentenceEmbedder(settings.embedding)
    embedder.load()  # here, not first on the writer thread
    advance = stage_progress("embedding", todo.height)
    model_key = settings.embedding.model_key()

    def store_chunk(keys: list[str], vectors: Vectors, cut: int | Future[int]) -> int:
        store.put_embeddings(keys, vectors, model=model_key, run_id=run.run_id)
        store.release()  # between chunks other processes may open the file
        return cut if isinstance(cut, int) else cut.result()

    truncated = 0
    with ThreadPoolExecutor(1, thread_name_prefix="embedding-writer") as writer:
        written: Future[int] | None = None
        for part in todo.iter_slices(max(embedder.batch_size * 32, CHUNK_TEXTS_MIN)):
            texts = part["text"].to_list()
            counting = (
                None if embedder.counts_truncation else writer.submit(embedder.truncated, texts)
            )
            vectors, cut = embedder.encode_counted(texts, advance)  # per encoder batch
            truncated += written.result() if written is not None else 0
            keys = part["embedding_key"].to_list()
            count = counting if counting is not None else (cut or 0)
            written = writer.submit(store_chunk, keys, vectors, count)
        truncated += written.result() if written is not None else 0
    return counts | {"texts_truncated": truncated}


def put_vectors(
    store: DuckDBStore,
    run: Run,
    settings: ScoringFile,
    chunks: Iterable[tuple[list[str], npt.NDArray[np.float32]]],
    total: int,
) -> None:
    """Store each chunk's vectors under its keys as it arrives (a crash keeps the chunks
    stored), advancing the embedding progress over `total` texts."""
    advance = stage_progress("embedding", total)
    for keys, vectors in chunks:
        store.put_embeddings(keys, vectors, model=settings.embedding.model_key(), run_id=run.run_id)
        store.release()
        advance(len(keys))


Replay = Callable[..., NoveltyResult]
"""`replay_novelty`, or anything with its signature and result (a distributed replay)."""


def replay_staged(
    store: DuckDBStore, run: Run, settings: ScoringFile, replay: Replay = replay_novelty
) -> dict[str, int]:
    """Replay the novelty caches over the plan's rows; writes novelty.parquet for the targets."""
    plan = pl.read_parquet(
        run.path(PLAN), columns=["trace_id", "text_sha", "target", "window_start"]
    )
    keys = embedding_keys(settings.embedding.model_key(), plan["text_sha"])
    result = replay(
        store.vectors(keys), plan["window_start"].to_numpy(), targets=plan["target"].to_numpy()
    )
    novelty = plan.select(
        "trace_id",
        novelty=pl.Series(result.novelty),
        novelty_window=pl.Series(result.window).cast(pl.Int32),
    ).filter(plan["target"])
    novelty.with_columns(
        novelty_source=pl.when(pl.col("novelty_window") > 0)
        .then(pl.lit("embedding"))
        .otherwise(pl.lit("empty_cache"))
    ).write_parquet(run.path(NOVELTY))
    return {"rows_replayed": novelty.height}
