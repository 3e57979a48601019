"""Device, batch size and precision of the sentence embedder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from pipelines.embedder import SentenceEmbedder
from pipelines.errors import EmbedderError
from transforms.config.scoring import EmbeddingConfig

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "Review PR #42 for security issues Analyzing diff for injection vectors",
    "Reconcile the March ledger against bank statements",
    "Summarise the patient's discharge notes for the GP",
]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_auto_takes_the_cpu_and_its_batch_size_without_a_gpu() -> None:
    embedder = SentenceEmbedder(EmbeddingConfig(device="auto"))
    assert (embedder.device, embedder.batch_size) == ("cpu", 64)
    with pytest.raises(EmbedderError, match="device = 'cuda' but no CUDA device"):
        _ = SentenceEmbedder(EmbeddingConfig(device="cuda")).device
    with pytest.raises(EmbedderError, match="precision = 'fp16' needs a CUDA device"):
        SentenceEmbedder(EmbeddingConfig(device="auto", precision="fp16")).load()


_BF16_CHILD = """
import json, sys
import numpy as np
from pipelines.embedder import SentenceEmbedder
from transforms.config.scoring import EmbeddingConfig
texts = json.loads(sys.argv[1])
reference = SentenceEmbedder(EmbeddingConfig(device="auto")).encode(texts)
half = SentenceEmbedder(EmbeddingConfig(precision="bf16", device="auto")).encode(texts)
cosines = (reference @ reference.T) - (half @ half.T)
print(json.dumps({
    "dtype": str(half.dtype), "same_shape": half.shape == reference.shape,
    "norms": np.linalg.norm(half, axis=1).tolist(), "worst": float(np.abs(cosines).max()),
}))
"""
"""A torch model loaded in bf16 leaves this process's TorchScript ONNX exporter unable to
export the fp32 model for the CPU modes ("ScalarType ComplexDouble is an unexpected tensor
scalar type", torch 2.13): the bf16 model is compared in a process of its own, so the CPU-mode
tests that run later in this worker are not affected. A run uses one precision; docs/scaling.md
says so."""


@pytest.mark.slow
def test_bf16_vectors_stay_close_to_fp32() -> None:
    # device "auto" keeps bf16 in torch (cuda, or the CPU here); the OpenVINO mode of
    # device "cpu" is tested in tests/scoring/test_embedding_modes.py
    done = subprocess.run(
        [sys.executable, "-c", _BF16_CHILD, json.dumps(TEXTS)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["dtype"] == "float32" and found["same_shape"]
    assert np.allclose(found["norms"], 1.0, atol=1e-5)
    assert 0 < found["worst"] < 0.01


@pytest.mark.slow
def test_progress_moves_with_each_batch_of_the_encoder_and_changes_no_vector() -> None:
    """The embedding line moved in steps of a store chunk (2,048 texts: `0/4371` for two
    minutes); it now moves per encoder batch, and the batches and vectors stay the same."""
    texts = [f"{TEXTS[i % 3]} variant {i} " + "word " * (i % 17) for i in range(50)]
    embedder = SentenceEmbedder(EmbeddingConfig(device="cpu", batch_size=8))
    steps: list[int] = []
    vectors, _ = embedder.encode_counted(texts, steps.append)
    assert steps == [8, 8, 8, 8, 8, 8, 2]
    quiet, _ = embedder.encode_counted(texts)
    assert np.array_equal(vectors, quiet)


def test_a_stage_with_nothing_to_do_prints_no_progress_line() -> None:
    """A rerun printed `scoring: 0/0 (100%)` twice."""
    import io

    from pipelines.progress import progress_sink, stage_progress
    from tracegrade.cli.progress import LogProgress

    out = io.StringIO()
    with LogProgress(out) as sink, progress_sink(sink):
        stage_progress("scoring", 0)(0)
        advance = stage_progress("embedding", 4)
        advance(2)
        advance(2)
    lines = out.getvalue().splitlines()
    assert [line.split(" ", 1)[1].split(";")[0] for line in lines] == [
        "embedding: 0/4 (0%)",
        "embedding: 2/4 (50%)",
        "embedding: 4/4 (100%)",
    ]
