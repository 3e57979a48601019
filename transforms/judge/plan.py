"""What a judge run has to do: every (submission, metric) with its cache key, the cached ones,
and the token and cost estimates that `--dry-run` prints before anything is called.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import polars as pl

from transforms.judge.keys import cache_key
from transforms.judge.metrics import LLMJudgeMetric
from transforms.judge.resolve import JudgeConfig, ResolvedMetric

__all__ = [
    "Estimate",
    "JudgeSink",
    "PlannedItem",
    "PlannedJudgement",
    "SubmittedBatch",
    "cost_usd",
    "estimate",
    "estimated_tokens",
    "plan_items",
    "planned_item",
]

_CHARS_PER_TOKEN = 4.0
"""A provider-neutral estimate; real usage is recorded from each response."""


class JudgeSink(Protocol):
    """Where judgements go and come from (the DuckDB store in production)."""

    def reusable(self, keys: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Stored ok / invalid_input results by cache key (the latest of each item)."""
        ...

    def stored_score_keys(self, item_ids: list[str]) -> dict[str, str]:
        """Score key of each item's latest overall row."""
        ...

    def write_results(self, rows: list[dict[str, Any]]) -> None:
        """Insert finished judgements (one transaction)."""
        ...

    def write_scores(self, rows: list[dict[str, Any]]) -> None:
        """Insert overall scores (one transaction)."""
        ...


@dataclass(frozen=True)
class SubmittedBatch:
    """A batch handed to a provider's batch API, as the store records it before anything else
    happens: its id, the run and model, the provider's handle, and its requests by call id."""

    batch_id: str
    run_id: str
    model: str
    handle: dict[str, Any]
    requests: dict[str, Any]


def is_blank(text: str | None) -> bool:
    """An empty or whitespace-only submission: rejected without a call (seed FR-013)."""
    return text is None or not text.strip()


@dataclass
class PlannedJudgement:
    """One (submission, metric) and what is known before calling."""

    metric: ResolvedMetric
    cache_key: str
    cached: dict[str, Any] | None
    copied: bool = False
    """`cached` is another submission's identical judgement (same texts): it is reused without
    a call and stored again under this submission."""
    share_key: str | None = None
    """The cache key of a near-duplicate answer's judgement of this metric, which this one
    takes once it is known (`PlannedItem.shared_from`)."""

    @property
    def needs_call(self) -> bool:
        """An LLM metric with no reusable stored result, and none shared."""
        return self.cached is None and self.share_key is None and self.metric.metric.uses_llm


@dataclass
class PlannedItem:
    """One submission and its judgements, in metric order."""

    item_id: str
    user_query: str
    submission: str
    judgements: list[PlannedJudgement] = field(default_factory=list)
    shared_from: str | None = None
    """The near-duplicate answer (its item id) whose judgements this one shares."""

    @property
    def blank(self) -> bool:
        """The submission is empty or whitespace only."""
        return is_blank(self.submission)


def planned_item(
    item_id: str, user_query: str, submission: str, config: JudgeConfig
) -> PlannedItem:
    """One submission with a judgement per configured metric, each with its cache key."""
    item = PlannedItem(item_id, user_query, submission)
    for metric in config.metrics:
        cls = type(metric.metric)
        key = cache_key(
            user_query,
            submission,
            metric.name,
            f"{cls.__module__}:{cls.__qualname__}",
            cls.prompt_version,
            metric.instruction,
            metric.model,
            metric.parameters,
        )
        item.judgements.append(PlannedJudgement(metric, key, None))
    return item


def plan_items(items: pl.DataFrame, config: JudgeConfig, sink: JudgeSink) -> list[PlannedItem]:
    """Every item with its judgements' cache keys and the stored results that can be reused."""
    planned = [
        planned_item(str(row["item_id"]), row["user_query"] or "", row["submission"] or "", config)
        for row in items.iter_rows(named=True)
    ]
    keys = [j.cache_key for item in planned for j in item.judgements]
    found = sink.reusable(keys) if keys else {}
    for item in planned:
        for judgement in item.judgements:
            rows = found.get(judgement.cache_key, [])
            own = [row for row in rows if row["item_id"] == item.item_id]
            candidates = own or rows
            judgement.cached = candidates[0] if candidates else None
            judgement.copied = bool(rows) and not own
    return planned


def estimated_tokens(
    metric: ResolvedMetric, item: PlannedItem, default_output: int
) -> tuple[int, int]:
    """Estimated (input, output) tokens of one call: the prompt at ~4 characters a token, and
    `estimated_output_tokens` (capped by max_tokens) for the answer."""
    assert isinstance(metric.metric, LLMJudgeMetric)
    try:
        prompt = metric.instruction + metric.metric.user_prompt(item.user_query, item.submission)
    except Exception:  # a custom metric's own bug, recorded by the call; estimate from the texts
        prompt = metric.instruction + item.user_query + item.submission
    output = default_output if metric.max_tokens is None else min(metric.max_tokens, default_output)
    return int(len(prompt) / _CHARS_PER_TOKEN) + 1, output


def cost_usd(
    config: JudgeConfig, model: str, input_tokens: int, output_tokens: int, *, batch: bool
) -> float | None:
    """Cost of the tokens at the configured price (None when the model has no price)."""
    price = config.settings.prices.get(model)
    if price is None:
        return None
    cost = (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6
    return cost * (price.batch_discount if batch else 1.0)


@dataclass
class Estimate:
    """What `--dry-run` reports."""

    submissions: int
    judgements: int
    cached: int
    blank: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    unpriced_models: list[str]
    by_model: dict[str, dict[str, float]]
    shared: int = 0
    """Judgements a near-duplicate answer's will give (no call)."""

    def lines(self) -> list[str]:
        """A readable report."""
        out = [
            f"submissions: {self.submissions:,}",
            f"judgements: {self.judgements:,} ({self.cached:,} already judged or repeated, "
            f"{self.blank:,} of blank submissions rejected without a call"
            + (f", {self.shared:,} shared from near-duplicate answers" if self.shared else "")
            + ")",
            f"calls to make: {self.calls:,} (first attempts; retries come on top)",
            f"estimated tokens: {self.input_tokens:,} in, {self.output_tokens:,} out",
            f"estimated cost: ${self.cost_usd:.4f}"
            + (
                f" (no price for {', '.join(self.unpriced_models)})" if self.unpriced_models else ""
            ),
        ]
        for model, row in self.by_model.items():
            out.append(
                f"  {model}: {int(row['calls']):,} calls, {int(row['input_tokens']):,} in, "
                f"{int(row['output_tokens']):,} out, ${row['cost_usd']:.4f}"
            )
        return out


def estimate(planned: list[PlannedItem], config: JudgeConfig) -> Estimate:
    """Calls, tokens and cost a run over `planned` would spend (nothing is called)."""
    batch = config.settings.mode == "batch"
    default_output = config.settings.estimated_output_tokens
    by_model: dict[str, dict[str, float]] = {}
    unpriced: list[str] = []
    cached = blank = calls = shared = 0
    keys: set[str] = set()
    for item in planned:
        for judgement in item.judgements:
            if judgement.cached is not None:
                cached += 1
                continue
            if judgement.share_key is not None:
                shared += 1
                continue
            if not judgement.needs_call:
                continue
            if item.blank:
                blank += 1
                continue
            if judgement.cache_key in keys:
                cached += 1  # the same texts earlier in this run: judged once
                continue
            keys.add(judgement.cache_key)
            metric = judgement.metric
            assert metric.model is not None
            tokens_in, tokens_out = estimated_tokens(metric, item, default_output)
            row = by_model.setdefault(
                metric.model,
                {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0},
            )
            row["calls"] += 1
            row["input_tokens"] += tokens_in
            row["output_tokens"] += tokens_out
            calls += 1
    for model, row in by_model.items():
        cost = cost_usd(
            config, model, int(row["input_tokens"]), int(row["output_tokens"]), batch=batch
        )
        if cost is None:
            unpriced.append(model)
        row["cost_usd"] = cost or 0.0
    return Estimate(
        submissions=len(planned),
        judgements=sum(len(item.judgements) for item in planned),
        cached=cached,
        blank=blank,
        calls=calls,
        input_tokens=int(sum(r["input_tokens"] for r in by_model.values())),
        output_tokens=int(sum(r["output_tokens"] for r in by_model.values())),
        cost_usd=sum(r["cost_usd"] for r in by_model.values()),
        unpriced_models=unpriced,
        by_model=by_model,
        shared=shared,
    )
