"""Pattern search in the edited content: the content quality scorer.

Patterns are regular expressions in the syntax of Rust's `regex` crate (what Polars runs): no
look-around and no back-references. A pattern with a page is searched in that page's final
content, one without a page in the whole document. Each distinct pattern is compiled once.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from transforms.operations._json import CASE, json_items, json_string, scored_cases
from transforms.operations.prepare import PreparedCases, regex_error
from transforms.operations.simulate import Simulation

__all__ = ["ALL_PAGES", "content_quality", "pattern_errors", "pattern_matches"]

ALL_PAGES = "(all pages)"
"""The page name in the issues of a pattern that has no page."""

SEPARATOR = "\n"
"""What joins the blocks of a page (or of a whole case) into the text a pattern searches."""

EXCERPT_CHARS = 100
"""Characters of the searched content quoted in an issue."""


def _texts(document: pl.DataFrame, keys: pl.Series, key: pl.Expr) -> pl.DataFrame:
    """The final blocks of each wanted key (a page or a case) joined with newlines."""
    rows = document.with_columns(_key=key).filter(pl.col("_key").is_in(keys.implode()))
    return (
        rows.group_by("_key", maintain_order=True)
        .agg("content")
        .select("_key", text=pl.col("content").list.join(SEPARATOR))
    )


def _search(rows: pl.DataFrame) -> pl.DataFrame:
    """_row and found (null for an invalid regex), compiling each distinct regex once."""
    return (
        rows.filter(pl.col("regex").is_not_null())
        .group_by("regex")
        .agg("_row", found=pl.col("text").str.contains(pl.col("regex").first(), strict=False))
        .explode(["_row", "found"])
        .select("_row", "found")
    )


def pattern_matches(prepared: PreparedCases, simulation: Simulation) -> pl.DataFrame:
    """The prepared patterns with `text` (the content searched), `found` and `problem`.

    `problem` says why a regex does not compile (null when it does); an invalid or missing
    pattern is not found.
    """
    case = pl.col(CASE).cast(pl.Int64)
    page_key = case * prepared.page_stride + pl.col("page_code")
    patterns = prepared.patterns.with_row_index("_row").with_columns(
        _key=pl.when(pl.col("page").is_null()).then(-1 - case).otherwise(page_key)
    )
    paged, whole = patterns.filter(pl.col("_key") >= 0), patterns.filter(pl.col("_key") < 0)
    table = pl.concat(
        [
            _texts(simulation.document, paged["_key"], page_key),
            _texts(simulation.document, whole["_key"], -1 - case),
        ]
    )
    texts = patterns.join(table, on="_key", how="left", maintain_order="left").with_columns(
        pl.col("text").fill_null("")
    )
    searched = _search(texts)
    state = np.full(texts.height, -1, dtype=np.int8)
    state[searched["_row"].to_numpy()] = searched["found"].cast(pl.Int8).fill_null(-1).to_numpy()
    found = pl.Series("found", state).replace(-1, None).cast(pl.Boolean)
    matches = texts.drop("_row", "_key").with_columns(found)
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
        CASE,
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
        matches[CASE].to_numpy(),
        weights=matches["found"].to_numpy().astype(np.float64),
        minlength=cases.height,
    ).astype(np.int64)
    missed = matches.filter(~pl.col("found"))
    frame = cases.select(CASE, "n_patterns").with_columns(
        _matched=pl.Series(found), _issues=json_items(cases, missed, json_string(issue))
    )
    total = pl.col("n_patterns")
    return scored_cases(
        frame,
        pl.when(total == 0)
        .then(1.0)
        .otherwise(pl.col("_matched").cast(pl.Float64) / total.cast(pl.Float64)),
        {"matchedPatterns": pl.col("_matched"), "totalPatterns": total},
        contentIssues=pl.col("_issues"),
    )
