"""Pattern search in the edited content: the content quality scorer.

Patterns are regular expressions in the syntax of Rust's `regex` crate (what Polars runs): no
look-around and no back-references. A pattern with a page is searched in that page's final
content, one without a page in the whole document. Each distinct pattern is compiled once.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from transforms.operations._json import details_json, json_items, json_string
from transforms.operations.prepare import PreparedCases, regex_error
from transforms.operations.simulate import Simulation

__all__ = ["ALL_PAGES", "EXCERPT_CHARS", "content_quality", "pattern_errors", "pattern_matches"]

ALL_PAGES = "(all pages)"
"""The page name in the issues of a pattern that has no page."""

EXCERPT_CHARS = 100
"""Characters of the searched content quoted in an issue."""

_CASE = "case_idx"


def pattern_matches(prepared: PreparedCases, simulation: Simulation) -> pl.DataFrame:
    """The prepared patterns with `text` (the content searched), `found` and `problem`.

    `problem` says why a regex does not compile (null when it does); an invalid or missing
    pattern is not found.
    """
    texts = (
        prepared.patterns.join(
            simulation.pages.rename({"content": "_page_text"}),
            on=[_CASE, "page_code"],
            how="left",
            maintain_order="left",
        )
        .with_columns(
            _document_text=simulation.documents["content"].gather(prepared.patterns[_CASE])
        )
        .with_columns(
            text=pl.when(pl.col("page").is_null())
            .then(pl.col("_document_text"))
            .otherwise(pl.col("_page_text").fill_null(""))
        )
        .drop("_page_text", "_document_text")
        .with_row_index("_row")
    )
    searched = (
        texts.filter(pl.col("regex").is_not_null())
        .group_by("regex")
        .agg("_row", found=pl.col("text").str.contains(pl.col("regex").first(), strict=False))
        .explode(["_row", "found"])
        .select("_row", "found")
    )
    matches = texts.join(searched, on="_row", how="left", maintain_order="left").drop("_row")
    invalid = matches.filter(pl.col("regex").is_not_null() & pl.col("found").is_null())
    failing = invalid["regex"].unique().to_list()
    problems = pl.DataFrame(
        {"regex": failing, "problem": [regex_error(regex) or "invalid" for regex in failing]},
        schema={"regex": pl.String, "problem": pl.String},
    )
    return matches.join(problems, on="regex", how="left", maintain_order="left").with_columns(
        pl.col("found").fill_null(False)
    )


def pattern_errors(matches: pl.DataFrame) -> pl.DataFrame:
    """The input errors of patterns that are not valid regular expressions."""
    return matches.filter(pl.col("problem").is_not_null()).select(
        _CASE,
        section=pl.lit(2, dtype=pl.Int64),
        item=pl.col("pat_pos").cast(pl.Int64),
        message=pl.format(
            "expected pattern {} ('{}') is not a valid regular expression: {}",
            pl.col("pat_pos"),
            pl.col("pattern"),
            pl.col("problem"),
        ),
    )


def content_quality(prepared: PreparedCases, matches: pl.DataFrame) -> pl.DataFrame:
    """case_idx, score (patterns found / patterns; 1 without patterns) and details (JSON)."""
    page = pl.col("page").fill_null(ALL_PAGES)
    issue = (
        pl.when(pl.col("pattern").is_null())
        .then(pl.format("Page '{}': Pattern missing", page))
        .when(pl.col("problem").is_not_null())
        .then(
            pl.format(
                "Page '{}': Invalid pattern '{}': {}", page, pl.col("pattern"), pl.col("problem")
            )
        )
        .otherwise(
            pl.format(
                "Page '{}': Pattern '{}' not found in content: '{}...'",
                page,
                pl.col("pattern"),
                pl.col("text").str.slice(0, EXCERPT_CHARS),
            )
        )
    )
    cases = prepared.cases
    found = np.bincount(
        matches[_CASE].to_numpy(),
        weights=matches["found"].to_numpy().astype(np.float64),
        minlength=cases.height,
    ).astype(np.int64)
    missed = matches.filter(~pl.col("found"))
    frame = cases.select(_CASE, "n_patterns").with_columns(
        _matched=pl.Series(found), _issues=json_items(cases, missed, json_string(issue))
    )
    total = pl.col("n_patterns")
    return frame.select(
        _CASE,
        score=pl.when(total == 0)
        .then(1.0)
        .otherwise(pl.col("_matched").cast(pl.Float64) / total.cast(pl.Float64)),
        details=details_json(
            pl.struct(matchedPatterns=pl.col("_matched"), totalPatterns=total),
            contentIssues=pl.col("_issues"),
        ),
    )
