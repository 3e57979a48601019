"""The run summary's embedding lines: the mode, texts embedded again, texts truncated."""

from __future__ import annotations

import polars as pl

from transforms.summary import build_summary

SCORES = pl.DataFrame(
    {"task_domain": ["code"], "score": [0.5], "shareable": [False]},
)
QUARANTINE = pl.DataFrame(schema={"rule": pl.String})


def test_the_summary_names_the_mode_and_the_texts_embedded_again_or_cut() -> None:
    counts = {"texts_embedded": 7, "texts_cached": 1, "texts_other_mode": 5, "texts_truncated": 2}
    summary = build_summary(
        "r1", "completed", counts, {}, SCORES, QUARANTINE, None, "m|int8-onnxruntime|256"
    )
    lines = summary.markdown.splitlines()
    assert "| texts embedded again: their stored vector was made in another mode | 5 |" in lines
    assert "| texts embedded that were cut at max_seq_length tokens | 2 |" in lines
    assert "Embedding: model m, mode int8-onnxruntime, max_seq_length 256" in lines


def test_a_run_without_the_embedder_names_no_mode() -> None:
    summary = build_summary("r1", "completed", {}, {}, SCORES, QUARANTINE)
    assert "Embedding:" not in summary.markdown
