"""Realistic trace exports for the end-to-end benchmarks: about 2.5 KB of JSON a trace, 5 to 20
steps with sentences of text, tools, several agents and domains, a few error recoveries.

The synthetic traces of `transforms.synth` are small (about 120 bytes a trace in Parquet); a
fleet's exports carry text. Texts are drawn word by word from a vocabulary, so they compress
like text; `unique` traces are made and then repeated under new ids and times.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["realistic_traces", "write_realistic_parquet"]

_VOCABULARY = 6000
_TOOLS = [
    f"tool_{name}"
    for name in (
        "search",
        "read_file",
        "write_file",
        "sql",
        "http_get",
        "calendar",
        "email",
        "crm_lookup",
        "refund",
        "ticket",
        "price_quote",
        "inventory",
        "geocode",
        "translate",
        "summarize",
        "run_tests",
        "git_diff",
        "deploy",
        "metrics",
        "pager",
        "wiki",
        "kb_search",
        "ocr",
        "invoice",
    )
]
_AGENTS = [f"agent-{i:02d}" for i in range(12)]
_DOMAINS = ["code", "finance", "medical", "customer_service", "legal", "ops", None]
_TYPES = ["thought", "tool_call", "observation", "error_recovery"]


def _words(rng: np.random.Generator) -> pl.Series:
    letters = np.array(list("etaoinshrdlucmfwypvbgkjqxz"))
    lengths = rng.integers(2, 11, _VOCABULARY)
    return pl.Series(
        "word",
        ["".join(rng.choice(letters, size=length)) for length in lengths],
        dtype=pl.String,
    )


def _sentences(
    rng: np.random.Generator, words: pl.Series, count: int, low: int, high: int
) -> pl.Series:
    """`count` texts of low..high words each, drawn with Zipf-like word frequencies."""
    sizes = rng.integers(low, high + 1, count)
    ranks = np.minimum(rng.zipf(1.3, int(sizes.sum())) - 1, _VOCABULARY - 1)
    flat = words.gather(ranks)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    lists = (
        pl.Series("text", flat)
        .to_frame()
        .with_columns(group=pl.Series(np.repeat(np.arange(count), sizes)))
    )
    joined = lists.group_by("group", maintain_order=True).agg(pl.col("text").str.join(" "))
    assert offsets[-1] == flat.len()
    return joined["text"]


def _steps(rng: np.random.Generator, words: pl.Series, n: int) -> pl.Series:
    counts = rng.integers(5, 21, n)
    total = int(counts.sum())
    kinds = rng.choice(4, size=total, p=[0.35, 0.3, 0.3, 0.05])
    tools = rng.integers(0, len(_TOOLS), total)
    content = _sentences(rng, words, total, 8, 20)
    outputs = _sentences(rng, words, total, 2, 8)
    frame = pl.DataFrame(
        {
            "owner": np.repeat(np.arange(n), counts),
            "step_id": np.concatenate([np.arange(c) for c in counts]),
            "type": pl.Series(_TYPES).gather(kinds),
            "content": content,
            "tool_name": pl.Series(_TOOLS).gather(tools),
            "output_summary": outputs,
            "latency_ms": rng.gamma(2.0, 300.0, total),
        }
    )
    is_call = pl.col("type") == "tool_call"
    steps = frame.select(
        "owner",
        pl.struct(
            "step_id",
            "type",
            "content",
            tool=pl.when(is_call).then(pl.struct(name="tool_name")),
            input=pl.when(is_call).then(pl.format('{{"q": "{}"}}', pl.col("output_summary"))),
            output_summary=pl.when(is_call).then(pl.col("output_summary")),
            latency_ms=pl.when(is_call).then(pl.col("latency_ms")),
        ).alias("step"),
    )
    return steps.group_by("owner", maintain_order=True).agg("step")["step"]


def realistic_traces(n: int, *, seed: int = 0, unique: int = 100_000) -> pl.DataFrame:
    """`n` traces in the nested export shape, `unique` of them distinct (the rest repeat
    their content under new ids and event times)."""
    rng = np.random.default_rng(seed)
    words = _words(rng)
    distinct = min(n, unique)
    base = pl.DataFrame(
        {
            "objective": _sentences(rng, words, distinct, 8, 25),
            "steps": _steps(rng, words, distinct),
            "result_summary": _sentences(rng, words, distinct, 8, 30),
        }
    )
    repeat = np.arange(n) % distinct
    start = datetime(2026, 1, 1, tzinfo=UTC)
    seconds = np.sort(rng.uniform(0, 30 * 86400, n))
    success = rng.random(n) < 0.7
    return base[repeat].select(
        id=pl.format("kp:trace:{}-{}", pl.lit(f"{seed:04d}"), pl.int_range(n)),
        metadata=pl.struct(
            created_at=pl.Series([start + timedelta(seconds=float(s)) for s in seconds]),
            agent_id=pl.Series(_AGENTS).gather(rng.integers(0, len(_AGENTS), n)),
            task_domain=pl.Series(_DOMAINS).gather(rng.integers(0, len(_DOMAINS), n)),
            success=pl.Series(success),
            quality_score=pl.lit(0.0),
        ),
        task=pl.struct("objective"),
        steps="steps",
        outcome=pl.struct(
            "result_summary", confidence=pl.Series(np.round(rng.uniform(0.2, 1.0, n), 3))
        ),
    )


def write_realistic_parquet(path: Path, n: int, *, seed: int = 0) -> Path:
    """Write `n` realistic traces as one Parquet export (row groups of 100,000 rows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    realistic_traces(n, seed=seed).write_parquet(path, row_group_size=100_000)
    return path
