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
import re
import zlib
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa

from transforms.synth._vocab import FAMILIES as _FAMILIES
from transforms.synth._vocab import NUMBERS as _NUMBERS
from transforms.synth._vocab import PER_TRACE as _PER_TRACE
from transforms.synth._vocab import SALAD_WORDS as _SALAD_WORDS
from transforms.synth._vocab import SHARED as _SHARED

__all__ = [
    "DEFAULT_AGENTS",
    "DEFAULT_DOMAINS",
    "STEP_TYPES",
    "TRACE_CONTEXT",
    "synthetic_traces",
    "to_json_records",
]

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

STEP_TYPES: tuple[str, ...] = ("thought", "tool_call", "observation", "error_recovery")
"""The SDK's step types, in the order of the internal type codes."""

TRACE_CONTEXT = "https://openknowledgepulse.org/schema/v1"
"""The `@context` of the SDK's JSON objects."""

_THOUGHT, _TOOL, _OBS, _ERR = 0, 1, 2, 3
_KINDS = ("objective", *STEP_TYPES, "output", "output_err", "result_ok", "result_fail", "raw")
_K = {name: i for i, name in enumerate(_KINDS)}
_FAMILY_OF = {"code": 1, "code-review": 1, "customer_service": 2, "travel": 3, "finance": 4}
_FAMILY_OF["medical"] = 5
_OFF_TOPIC, _NOISE = 6, 7
_US_PER_DAY = 86_400_000_000
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_CHUNK = 131_072
"""Traces per step-building chunk; bounds the temporary arrays."""
_N_STEPS_P = np.array([14, 18, 17, 14, 11, 8, 6, 4, 3, 3, 2], dtype=np.float64)
"""Relative frequency of 2..12 steps in a multi-step trace."""

_MAX_SLOTS = 3


class _Tables(NamedTuple):
    """Every template compiled into flat arrays, so rendering is one gather per piece."""

    literals: pl.Series
    """Literal k of template t at t * (_MAX_SLOTS + 1) + k; the last template is all null."""
    words: pl.Series
    """Every slot vocabulary, concatenated after one empty string that absent slots use."""
    offset: np.ndarray
    size: np.ndarray
    salt: np.ndarray
    per_trace: np.ndarray
    varies: np.ndarray
    pick_offset: np.ndarray
    pick_count: np.ndarray
    tool_names: pl.Series
    tool_template: np.ndarray
    tool_offset: np.ndarray
    tool_count: np.ndarray


@cache
def _tables() -> _Tables:
    texts: list[tuple[int, str]] = []
    pick = np.zeros((2, len(_FAMILIES), len(_KINDS)), dtype=np.int64)
    for f, fam in enumerate(_FAMILIES):
        for k, kind in enumerate(_KINDS):
            entries = fam.get(kind, _SHARED.get(kind, "")).split("|")
            pick[:, f, k] = len(texts), len(entries)
            texts += [(f, text) for text in entries]
    tools = [(fam.get("tools") or _FAMILIES[0]["tools"]).split("|") for fam in _FAMILIES]
    names = [spec.split("=", 1)[0] for specs in tools for spec in specs]
    tool_template = np.arange(len(names)) + len(texts)
    texts += [(f, spec.split("=", 1)[1]) for f, specs in enumerate(tools) for spec in specs]
    words, where = [""], {}
    shape = (len(texts) + 1, _MAX_SLOTS)
    offset, size = np.zeros(shape, np.int64), np.ones(shape, np.uint64)
    salt, per_trace, varies = (
        np.zeros(shape, np.uint64),
        np.zeros(shape, bool),
        np.zeros(shape, bool),
    )
    literals: list[str | None] = []
    for t, (f, text) in enumerate(texts):
        pieces = re.split(r"\{(\w+)\}", text)
        if len(pieces) > 2 * _MAX_SLOTS + 1:
            raise ValueError(f"template has more than {_MAX_SLOTS} slots: {text!r}")
        literals += pieces[0::2] + [""] * (_MAX_SLOTS + 1 - len(pieces[0::2]))
        for j, slot in enumerate(pieces[1::2]):
            owner = -1 if slot in _NUMBERS or slot == "w" else (f if slot in _FAMILIES[f] else 0)
            if (owner, slot) not in where:
                where[owner, slot] = (len(words), _vocabulary(owner, slot))
                words += where[owner, slot][1]
            offset[t, j], size[t, j] = where[owner, slot][0], len(where[owner, slot][1])
            per_trace[t, j] = slot in _PER_TRACE
            salt[t, j] = _salt(slot if per_trace[t, j] else f"{slot}@{j}")
            varies[t, j] = slot in _NUMBERS or slot == "finding"
    literals += [None] * (_MAX_SLOTS + 1)
    counts = np.array([len(specs) for specs in tools])
    return _Tables(
        pl.Series(literals, dtype=pl.String),
        pl.Series(words, dtype=pl.String),
        offset,
        size,
        salt,
        per_trace,
        varies,
        pick[0],
        pick[1],
        pl.Series(names, dtype=pl.String),
        tool_template,
        np.concatenate([[0], np.cumsum(counts)[:-1]]),
        counts.astype(np.uint64),
    )


def _vocabulary(owner: int, slot: str) -> list[str]:
    if slot in _NUMBERS:
        low, high = _NUMBERS[slot]
        return [str(value) for value in range(low, high + 1)]
    if slot == "w":
        return _SALAD_WORDS.split()
    return _FAMILIES[owner][slot].split("|")


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
    if n < 0 or days <= 0 or not agents or not domains:
        raise ValueError(
            f"need n >= 0, days > 0 and at least one agent and domain; got n={n}, "
            f"days={days}, {len(agents)} agents, {len(domains)} domains"
        )
    rng = np.random.default_rng(seed)
    agent_p = 1.0 / np.arange(1, len(agents) + 1) ** 0.7
    agent = rng.choice(len(agents), size=n, p=agent_p / agent_p.sum())
    domain = np.where(rng.random(n) < 0.8, agent % len(domains), rng.integers(0, len(domains), n))
    family = np.array([_FAMILY_OF.get(d or "", 0) for d in domains])[domain]
    odd = rng.random(n)
    family = np.select([odd < 0.01, odd < 0.05], [_NOISE, _OFF_TOPIC], family)
    key, variant, domain, family = _repeat_recent(rng, agent, domain, family)
    times = _event_times(rng, n, days, agent)
    aware = start if start.tzinfo else start.replace(tzinfo=UTC)
    start_us = (aware - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    steps, n_err = _steps(key, variant, family)
    success = rng.random(n) < np.where(n_err > 0, 0.7, 0.88)
    trace_hash = _mix(key ^ _salt("trace"))
    result_kind = np.where(success, _K["result_ok"], _K["result_fail"])
    flat = pl.DataFrame(
        {
            "id": _ids(seed, n, id_prefix),
            "created_at": pl.Series(start_us + times).cast(pl.Datetime("us")),
            "agent_id": pl.Series(list(agents), dtype=pl.String).gather(agent),
            "task_domain": pl.Series(list(domains), dtype=pl.String).gather(domain),
            "success": success,
            "quality_score": np.zeros(n),
            "objective": _render(
                _pick(family, _K["objective"], trace_hash), trace_hash, key, variant
            ),
            "empty": _unit(_mix(trace_hash ^ _salt("empty"))) < 0.002,
            "result_summary": _render(
                _pick(family, result_kind, trace_hash), _mix(trace_hash ^ _salt("r")), key, variant
            ),
            "confidence": _confidences(rng, success),
        }
    )
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
        pl.lit(steps).alias("steps"),
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


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer: a well-mixed uint64 hash of each element."""
    x = x + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _salt(name: str) -> np.uint64:
    return np.uint64((zlib.crc32(name.encode()) * 0x100000001B3) % (1 << 64))


def _unit(h: np.ndarray) -> np.ndarray:
    """Uniform floats in [0, 1) from uint64 hashes."""
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _pick(family: np.ndarray, kind: np.ndarray | int, h: np.ndarray) -> np.ndarray:
    """Template ids: one template of the row's family and kind, chosen by the hash."""
    tables = _tables()
    count = tables.pick_count[family, kind].astype(np.uint64)
    return tables.pick_offset[family, kind] + (h % count).astype(np.int64)


def _render(
    tid: np.ndarray, row_hash: np.ndarray, key: np.ndarray, variant: np.ndarray
) -> pl.Series:
    """Fill template `tid[i]` for each row; null where `tid[i]` is -1.

    Per-trace slots hash the trace key, so the objective and the steps name the
    same entity; other slots hash the row and the slot position. Numbers and
    findings also hash the variant, which is what makes near-duplicates.
    """
    tables = _tables()
    t = np.where(tid < 0, len(tables.offset) - 1, tid)
    first = t * (_MAX_SLOTS + 1)
    columns = {"l0": tables.literals.gather(first)}
    for j in range(_MAX_SLOTS):
        if not np.any(tables.offset[t, j]):
            break
        size = tables.size[t, j]
        h = _mix(np.where(tables.per_trace[t, j], key, row_hash) ^ tables.salt[t, j])
        h = np.where(tables.varies[t, j], _mix(h ^ variant), h)
        columns[f"v{j}"] = tables.words.gather(tables.offset[t, j] + (h % size).astype(np.int64))
        columns[f"l{j + 1}"] = tables.literals.gather(first + j + 1)
    return (
        pl.DataFrame(columns).select(pl.format("{}" * len(columns), *columns).alias("")).to_series()
    )


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
    own = np.where(repeat & ~exact, _mix(key ^ _salt("variant")), np.uint64(0))
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


def _step_types(
    pos: np.ndarray, length: np.ndarray, arch: np.ndarray, u1: np.ndarray, u2: np.ndarray
) -> np.ndarray:
    """Type codes: ReAct loops, free mixes, error-recovery runs, single thoughts."""
    react = np.where(pos % 2 == 1, _TOOL, _OBS)
    react = np.where((pos == length - 1) & (length >= 4) & (u1 < 0.5), _THOUGHT, react)
    react = np.where((pos > 0) & (u2 < 0.06), _ERR, react)
    free = np.searchsorted(np.array([0.35, 0.6, 0.9]), u1, side="right")
    run = np.where(pos < 6, np.where(pos % 2 == 0, _TOOL, _ERR), np.where(pos % 2, _TOOL, _OBS))
    kind = np.select([arch == 3, arch == 4], [free, run], react)
    first = np.where(arch == 4, _TOOL, np.where(u2 < 0.85, _THOUGHT, _TOOL))
    kind = np.where(pos == 0, first, kind)
    return np.where(arch == 1, _THOUGHT, kind).astype(np.int64)


def _steps(
    key: np.ndarray, variant: np.ndarray, family: np.ndarray
) -> tuple[pl.Series, np.ndarray]:
    """The `steps` list column and each trace's error_recovery count, in bounded-memory chunks.

    Steps depend only on the content key, so repeated traces repeat their steps.
    """
    chunks, n_err = [], []
    for lo in range(0, max(len(key), 1), _CHUNK):
        part = slice(lo, lo + _CHUNK)
        arrow, errors = _steps_chunk(key[part], variant[part], family[part])
        chunks.append(pl.Series("steps", arrow))
        n_err.append(errors)
    return pl.concat(chunks, rechunk=False), np.concatenate(n_err)


def _steps_chunk(
    key: np.ndarray, variant: np.ndarray, family: np.ndarray
) -> tuple[pa.LargeListArray, np.ndarray]:
    n = len(key)
    tables = _tables()
    shape = _mix(key ^ _salt("shape"))
    arch = np.searchsorted(np.array([0.03, 0.06, 0.74, 0.92]), _unit(shape), side="right")
    cumulative = np.cumsum(_N_STEPS_P) / _N_STEPS_P.sum()
    multi = 2 + np.searchsorted(cumulative, _unit(_mix(shape ^ _salt("n"))), side="right")
    n_steps = np.select([arch == 0, arch == 1, arch == 4], [0, 1, np.maximum(multi, 6)], multi)
    offsets = np.concatenate([[0], np.cumsum(n_steps)])
    trace = np.repeat(np.arange(n), n_steps)
    pos = np.arange(offsets[-1]) - offsets[trace]
    h = _mix(key[trace] ^ (pos.astype(np.uint64) + np.uint64(1)) * _GOLDEN)
    u1, u2, u3 = _unit(h), _unit(_mix(h ^ _salt("u2"))), _unit(_mix(h ^ _salt("u3")))
    kind = _step_types(pos, n_steps[trace], arch[trace], u1, u2)
    has_tool = np.select(
        [kind == _TOOL, kind == _ERR, kind == _OBS], [u3 >= 0.01, u3 < 0.1, u3 < 0.02], u3 < 0.005
    )
    fam, tkey, tvar = family[trace], key[trace], variant[trace]
    single = _unit(_mix(shape ^ _salt("single")))[trace] < 0.3
    which = np.where(single, _mix(shape[trace] ^ _salt("tool")), _mix(h ^ _salt("tool")))
    tool = tables.tool_offset[fam] + (which % tables.tool_count[fam]).astype(np.int64)
    has_content = np.select(
        [fam == _NOISE, kind == _TOOL, kind == _THOUGHT, kind == _OBS],
        [u2 < 0.2, u2 < 0.35, u1 < 0.97, u1 < 0.95],
        True,
    )
    content = _render(np.where(has_content, _pick(fam, kind + 1, h), -1), h, tkey, tvar)
    out_kind = np.where(kind == _ERR, _K["output_err"], _K["output"])
    output = _render(np.where(has_tool & (u1 < 0.9), _pick(fam, out_kind, h), -1), h, tkey, tvar)
    raw = _unit(_mix(h ^ _salt("raw"))) < 0.03
    input_tid = np.where(raw, _pick(fam, _K["raw"], h), tables.tool_template[tool])
    inputs = _render(np.where(has_tool & (u2 < 0.92), input_tid, -1), h, tkey, tvar)
    u4 = _unit(_mix(h ^ _salt("u4")))
    gauss = np.sqrt(-2.0 * np.log1p(-u4)) * np.cos(2.0 * np.pi * u1)
    latency = np.where(kind == _THOUGHT, 800.0 * np.exp(0.5 * gauss), 250.0 * np.exp(0.9 * gauss))
    timed = np.where(kind == _THOUGHT, u2 < 0.4, has_tool & (u2 < 0.97))
    structs = pl.DataFrame(
        {
            "step_id": pos.astype(np.int64),
            "type": pl.Series(STEP_TYPES).gather(kind),
            "content": content,
            "name": tables.tool_names.gather(tool),
            "has_tool": has_tool,
            "input": inputs,
            "output_summary": output,
            "latency_ms": pl.Series(
                np.where(timed, np.round(latency, 1), np.nan), nan_to_null=True
            ),
        }
    ).select(
        pl.struct(
            "step_id",
            "type",
            "content",
            pl.when("has_tool").then(pl.struct("name")).alias("tool"),
            "input",
            "output_summary",
            "latency_ms",
        )
    )
    arrow = pa.LargeListArray.from_arrays(
        pa.array(offsets.astype(np.int64)),
        structs.to_series().rechunk().to_arrow(compat_level=pl.CompatLevel.newest()),
    )
    return arrow, np.bincount(trace, weights=kind == _ERR, minlength=n).astype(np.int64)


def _confidences(rng: np.random.Generator, success: np.ndarray) -> np.ndarray:
    """Self-reported confidence: high when the task succeeded, with exact 0.0 and 1.0 edges."""
    size = len(success)
    value = np.where(success, rng.beta(8.0, 2.0, size), rng.beta(2.0, 4.0, size))
    edge = rng.random(size)
    return np.round(np.where(edge < 0.005, 1.0, np.where(edge < 0.008, 0.0, value)), 2)


def _ids(seed: int, n: int, prefix: str) -> pl.Series:
    """`prefix` + a version-4-formatted UUID hashed from the seed and the row index."""
    base = _mix(np.full(1, seed % (1 << 64), dtype=np.uint64) ^ _salt("ids"))
    hi = _mix(base ^ np.arange(n, dtype=np.uint64))
    lo = _mix(hi ^ _salt("lo"))
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
