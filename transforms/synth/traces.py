"""Synthetic KnowledgePulse traces at fleet scale, for demos, tests and benchmarks.

`synthetic_traces` returns the nested `ReasoningTrace` frame exactly as a Parquet
export carries it (SPEC section 1), built with numpy and Polars column operations
only, so a million traces take seconds. Texts come from templates whose slots are
filled from per-domain vocabularies. About a fifth of the traces repeat a recent
trace of the same agent, exactly or with other numbers (novelty near 0), 4% are
off-topic requests and 1% word salad (novelty up to about 0.7 against a full
cache), so embedded novelty spreads over the [0, 1] range.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from transforms.synth._hashing import mix, salt, unit
from transforms.synth._steps import steps
from transforms.synth._templates import FAMILY_OF, KIND, NOISE, OFF_TOPIC, STEP_TYPES, pick, render

__all__ = ["STEP_TYPES", "TRACE_CONTEXT", "synthetic_traces", "to_json_records"]

DEFAULT_AGENTS: tuple[str, ...] = (
    "coder-01",
    "support-02",
    "travel-desk-03",
    "analyst-04",
    "triage-05",
    "generalist-06",
)
"""Agent ids; agent i works mostly in `domains[i % len(domains)]`."""

DEFAULT_DOMAINS: tuple[str | None, ...] = (
    "code",
    "customer_service",
    "travel",
    "finance",
    "medical",
    None,
    "code-review",
    "default",
)
"""The five weight profiles, a missing domain, and two names that fall back to default."""

TRACE_CONTEXT = "https://openknowledgepulse.org/schema/v1"
"""The `@context` of the SDK's JSON objects."""

_US_PER_DAY = 86_400_000_000


def synthetic_traces(
    n: int,
    *,
    seed: int = 0,
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
    days: float = 30.0,
    agents: Sequence[str] = DEFAULT_AGENTS,
    domains: Sequence[str | None] = DEFAULT_DOMAINS,
    id_prefix: str = "kp:trace:",
) -> pl.DataFrame:
    """Generate `n` traces in the nested shape of a Parquet export.

    Columns: `id`, `metadata{created_at, agent_id, task_domain, success,
    quality_score}`, `task{objective}`, `steps[{step_id, type, content,
    tool{name}, input, output_summary, latency_ms}]`, `outcome{result_summary,
    confidence}`. Event times fall in `[start, start + days)` at irregular,
    diurnal, bursty spacing, in a roughly but not strictly chronological row
    order, with some equal timestamps. Equal arguments give an equal frame.

    Args:
        n: Number of traces.
        seed: Seed of every random choice, ids included.
        start: Start of the event-time window; a naive value is taken as UTC.
        days: Length of the window in days.
        agents: Agent ids, used with Zipf-like frequencies.
        domains: Task domains; None leaves `task_domain` null.
        id_prefix: Prefix of every id, followed by a UUID-formatted hex.

    Returns:
        The traces, one row each.
    """
    _check_arguments(n, days, agents, domains)
    rng = np.random.default_rng(seed)
    agent, domain, family = _assignments(rng, n, len(agents), domains)
    key, variant, domain, family = _repeat_recent(rng, agent, domain, family)
    times = _event_times(rng, n, days, agent)
    step_lists, n_err = steps(key, variant, family)
    success = rng.random(n) < np.where(n_err > 0, 0.7, 0.88)
    flat = pl.DataFrame(
        {
            "id": _ids(seed, n, id_prefix),
            "created_at": _created_at(start, times),
            "agent_id": pl.Series(list(agents), dtype=pl.String).gather(agent),
            "task_domain": pl.Series(list(domains), dtype=pl.String).gather(domain),
            "success": success,
            "quality_score": np.zeros(n),
            **_trace_texts(key, variant, family, success),
            "confidence": _confidences(rng, success),
        }
    )
    return _nested(flat, step_lists)


def _check_arguments(
    n: int, days: float, agents: Sequence[str], domains: Sequence[str | None]
) -> None:
    """Raise ValueError unless there is something to generate traces from."""
    if n < 0 or days <= 0 or not agents or not domains:
        raise ValueError(
            f"need n >= 0, days > 0 and at least one agent and domain; got n={n}, "
            f"days={days}, {len(agents)} agents, {len(domains)} domains"
        )


def _assignments(
    rng: np.random.Generator, n: int, n_agents: int, domains: Sequence[str | None]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each trace's agent, domain and template family, before any repeat.

    Agents are Zipf-like; 80% of traces are in their agent's own domain; 4% are off-topic
    and 1% word salad, whatever their domain.
    """
    agent_p = 1.0 / np.arange(1, n_agents + 1) ** 0.7
    agent = rng.choice(n_agents, size=n, p=agent_p / agent_p.sum())
    domain = np.where(rng.random(n) < 0.8, agent % len(domains), rng.integers(0, len(domains), n))
    family = np.array([FAMILY_OF.get(d or "", 0) for d in domains])[domain]
    odd = rng.random(n)
    family = np.select([odd < 0.01, odd < 0.05], [NOISE, OFF_TOPIC], family)
    return agent, domain, family


def _created_at(start: datetime, times: np.ndarray) -> pl.Series:
    """Naive UTC datetimes `times` microseconds after `start` (a naive start is UTC)."""
    aware = start if start.tzinfo else start.replace(tzinfo=UTC)
    start_us = (aware - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    return pl.Series(start_us + times).cast(pl.Datetime("us"))


def _trace_texts(
    key: np.ndarray, variant: np.ndarray, family: np.ndarray, success: np.ndarray
) -> dict[str, pl.Series | np.ndarray]:
    """objective, empty (about 0.2% of objectives are blanked) and result_summary."""
    trace_hash = mix(key ^ salt("trace"))
    result_kind = np.where(success, KIND["result_ok"], KIND["result_fail"])
    return {
        "objective": render(pick(family, KIND["objective"], trace_hash), trace_hash, key, variant),
        "empty": unit(mix(trace_hash ^ salt("empty"))) < 0.002,
        "result_summary": render(
            pick(family, result_kind, trace_hash), mix(trace_hash ^ salt("r")), key, variant
        ),
    }


def _nested(flat: pl.DataFrame, step_lists: pl.Series) -> pl.DataFrame:
    """The flat trace columns and the steps nested as a Parquet export carries them."""
    return flat.select(
        "id",
        pl.struct(
            pl.col("created_at").dt.replace_time_zone("UTC"),
            "agent_id",
            "task_domain",
            "success",
            "quality_score",
        ).alias("metadata"),
        pl.struct(
            pl.when("empty").then(pl.lit("")).otherwise("objective").alias("objective")
        ).alias("task"),
        pl.lit(step_lists).alias("steps"),
        pl.struct("result_summary", "confidence").alias("outcome"),
    )


def to_json_records(df: pl.DataFrame) -> list[dict[str, Any]]:
    """Convert a nested trace frame to the SDK's JSON objects, for JSONL files.

    Adds `@context` and `@type`, writes `created_at` as ISO-8601 UTC with `Z`
    (milliseconds, or microseconds when they are not whole milliseconds), parses
    `steps.input` back to an object when it holds a JSON object, and omits null
    optional fields (`agent_id`, `task_domain`, step fields, `tool`) as the SDK
    does. Null required fields stay null, so broken records stay visible.
    """
    return [_json_record(row) for row in df.to_dicts()]


def _json_record(row: dict[str, Any]) -> dict[str, Any]:
    meta = dict(row["metadata"])
    created = meta["created_at"]
    if isinstance(created, datetime):
        utc = (created if created.tzinfo else created.replace(tzinfo=UTC)).astimezone(UTC)
        spec = "milliseconds" if utc.microsecond % 1000 == 0 else "microseconds"
        meta["created_at"] = utc.replace(tzinfo=None).isoformat(timespec=spec) + "Z"
    for optional in ("agent_id", "task_domain"):
        if meta.get(optional) is None:
            meta.pop(optional, None)
    steps = []
    for step in row["steps"] or []:
        out = {k: v for k, v in step.items() if v is not None and k != "tool"}
        if step.get("tool") is not None:
            out["tool"] = {k: v for k, v in step["tool"].items() if v is not None}
        text = out.get("input")
        if isinstance(text, str) and text.startswith("{"):
            with suppress(ValueError):
                out["input"] = json.loads(text)
        steps.append(out)
    return {
        "@context": TRACE_CONTEXT,
        "@type": "ReasoningTrace",
        "id": row["id"],
        "metadata": meta,
        "task": row["task"],
        "steps": steps,
        "outcome": row["outcome"],
    }


def _repeat_recent(
    rng: np.random.Generator, agent: np.ndarray, domain: np.ndarray, family: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Content keys and variants: ~10% of traces copy a recent trace of their agent, ~10% with new numbers.

    The copied trace lies at most 999 traces back in the agent's own sequence,
    inside the SDK cache window, so the copies get novelty near zero.
    """
    n = len(agent)
    idx = np.arange(n)
    key = rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
    draw = rng.random(n)
    lag = np.minimum(rng.geometric(1 / 40, n), 999)
    order = np.argsort(agent, kind="stable")
    position = idx - np.searchsorted(agent[order], agent[order], side="left")
    src = np.empty(n, dtype=np.int64)
    src[order] = np.where(position >= lag, order[np.maximum(idx - lag, 0)], order)
    repeat = (draw < 0.2) & (src != idx)
    exact = repeat & (draw < 0.1)
    src = np.where(repeat, src, idx)
    own = np.where(repeat & ~exact, mix(key ^ salt("variant")), np.uint64(0))
    final_key, final_var = key, own
    while True:
        next_key = np.where(repeat, final_key[src], key)
        next_var = np.where(exact, final_var[src], own)
        if np.array_equal(next_key, final_key) and np.array_equal(next_var, final_var):
            break
        final_key, final_var = next_key, next_var
    root = src
    while not np.array_equal(root[root], root):
        root = root[root]
    return final_key, final_var, domain[root], family[root]


def _event_times(rng: np.random.Generator, n: int, days: float, agent: np.ndarray) -> np.ndarray:
    """Microsecond offsets in [0, days): diurnal, weekly and bursty, loosely ordered, some equal.

    Agents log at microsecond, millisecond or second precision, so same-second
    traces of one agent share a timestamp.
    """
    grid = np.linspace(0.0, days, max(int(days * 1440), 2) + 1)
    day = grid.astype(np.int64)
    rate = (1.0 + 0.7 * np.sin(2 * np.pi * (grid - 0.375))) * np.where(day % 7 >= 5, 0.5, 1.0)
    rate *= rng.lognormal(0.0, 0.3, day[-1] + 1)[day]
    for centre in rng.uniform(0.0, days, max(int(days * 2), 1)):
        rate += 4.0 * (np.abs(grid - centre) < 0.01)
    cdf = np.concatenate([[0.0], np.cumsum(rate[1:] + rate[:-1])])
    offsets = np.interp(np.sort(rng.random(n)), cdf / cdf[-1], grid) * _US_PER_DAY
    times = np.minimum(offsets.astype(np.int64), int(days * _US_PER_DAY) - 1)
    jitter = rng.normal(0.0, 3.0, n) + np.where(rng.random(n) < 0.005, rng.uniform(0, 2000, n), 0)
    times = times[np.argsort(np.arange(n) + jitter, kind="stable")]
    unit = np.array([1, 1000, 1_000_000])[agent % 3]
    times = times // unit * unit
    same = np.flatnonzero(rng.random(n) < 0.005)
    same = same[same > 0]
    times[same] = times[same - 1]
    return times


def _confidences(rng: np.random.Generator, success: np.ndarray) -> np.ndarray:
    """Self-reported confidence: high when the task succeeded, with exact 0.0 and 1.0 edges."""
    size = len(success)
    value = np.where(success, rng.beta(8.0, 2.0, size), rng.beta(2.0, 4.0, size))
    edge = rng.random(size)
    return np.round(np.where(edge < 0.005, 1.0, np.where(edge < 0.008, 0.0, value)), 2)


def _ids(seed: int, n: int, prefix: str) -> pl.Series:
    """`prefix` + a version-4-formatted UUID hashed from the seed and the row index."""
    base = mix(np.full(1, seed % (1 << 64), dtype=np.uint64) ^ salt("ids"))
    hi = mix(base ^ np.arange(n, dtype=np.uint64))
    lo = mix(hi ^ salt("lo"))
    raw = np.stack([hi, lo], axis=1).astype(">u8").view(np.uint8).reshape(n, 16)
    nibbles = np.stack([raw >> 4, raw & 15], axis=2).reshape(n, 32)
    nibbles[:, 12] = 4
    nibbles[:, 16] = 8 | (nibbles[:, 16] & 3)
    hexed = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles]
    dash = np.full((n, 1), ord("-"), dtype=np.uint8)
    head = np.broadcast_to(
        np.frombuffer(prefix.encode(), dtype=np.uint8), (n, len(prefix.encode()))
    )
    chars = np.concatenate(
        [
            head,
            hexed[:, :8],
            dash,
            hexed[:, 8:12],
            dash,
            hexed[:, 12:16],
            dash,
            hexed[:, 16:20],
            dash,
            hexed[:, 20:],
        ],
        axis=1,
    )
    width = chars.shape[1]
    array = pa.LargeStringArray.from_buffers(
        n,
        pa.py_buffer(np.arange(0, (n + 1) * width, width, dtype=np.int64)),
        pa.py_buffer(np.ascontiguousarray(chars)),
    )
    return pl.Series("id", array, dtype=pl.String)
