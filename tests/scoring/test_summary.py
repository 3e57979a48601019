"""The run summary's embedding lines: the mode, texts embedded again, texts truncated."""

from __future__ import annotations

import polars as pl

from transforms.summary import build_summary

DOMAINS = pl.DataFrame(
    {
        "domain": ["code"],
        "traces": [1],
        "p10": [0.5],
        "median": [0.5],
        "p90": [0.5],
        "shareable": [0.0],
        "shared": [0],
    },
)
QUARANTINE = pl.DataFrame(schema={"rule": pl.String})


def test_the_summary_names_the_mode_and_the_texts_embedded_again_or_cut() -> None:
    counts = {"texts_embedded": 7, "texts_cached": 1, "texts_other_mode": 5, "texts_truncated": 2}
    summary = build_summary(
        "r1", "completed", counts, {}, DOMAINS, QUARANTINE, None, "m|int8-onnxruntime|256"
    )
    lines = summary.markdown.splitlines()
    assert "| texts embedded again: their stored vector was made in another mode | 5 |" in lines
    assert "| texts embedded that were cut at max_seq_length tokens | 2 |" in lines
    assert "Embedding: model m, mode int8-onnxruntime, max_seq_length 256" in lines


def test_a_run_without_the_embedder_names_no_mode() -> None:
    summary = build_summary("r1", "completed", {}, {}, DOMAINS, QUARANTINE)
    assert "Embedding:" not in summary.markdown


def test_the_shareable_rate_counts_every_domain_and_the_table_hides_the_count() -> None:
    domains = pl.concat(
        [
            DOMAINS,
            DOMAINS.with_columns(
                domain=pl.lit("math"),
                traces=pl.lit(3, pl.Int64),
                shareable=1.0,
                shared=pl.lit(3, pl.Int64),
            ),
        ]
    )
    summary = build_summary("r1", "completed", {}, {}, domains, QUARANTINE)
    assert "Shareable rate of the traces scored in this run: 75.0%" in summary.markdown
    assert "shared" not in summary.domains.columns
    assert summary.domains["traces"].to_list() == [1, 3]


def test_a_run_that_scored_nothing_has_no_rate() -> None:
    summary = build_summary("r1", "completed", {}, {}, DOMAINS.clear(), QUARANTINE)
    assert "Shareable rate of the traces scored in this run: n/a" in summary.markdown
