"""The `steps` column of synthetic traces: types, texts, tools and latencies of every step.

A trace's steps depend only on its content key (and variant, for the numbers in its texts),
through hashes rather than a random stream, so a repeated trace repeats its steps and the
column can be built in bounded-memory chunks that give the same result as one pass.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa

from transforms.synth._hashing import GOLDEN, mix, salt, unit
from transforms.synth._templates import KIND, NOISE, STEP_TYPES, pick, render, tables

__all__ = ["steps"]

_THOUGHT, _TOOL, _OBS, _ERR = 0, 1, 2, 3
_CHUNK = 131_072
"""Traces per step-building chunk; bounds the temporary arrays."""
_N_STEPS_P = np.array([14, 18, 17, 14, 11, 8, 6, 4, 3, 3, 2], dtype=np.float64)
"""Relative frequency of 2..12 steps in a multi-step trace."""


class _Draws(NamedTuple):
    """Per step of a chunk: its trace and position, its hashes and what was drawn from them."""

    trace: np.ndarray
    """Row of the step's trace in the chunk."""
    pos: np.ndarray
    """Position of the step in its trace."""
    h: np.ndarray
    """The step's hash; u1 and u2 are uniform floats drawn from it."""
    u1: np.ndarray
    u2: np.ndarray
    kind: np.ndarray
    """Step type code (the position in STEP_TYPES)."""
    has_tool: np.ndarray
    tool: np.ndarray
    """The tool's row in the template tables (meaningful where has_tool)."""
    family: np.ndarray
    key: np.ndarray
    variant: np.ndarray
    """The trace's family, content key and variant, repeated per step."""


def steps(key: np.ndarray, variant: np.ndarray, family: np.ndarray) -> tuple[pl.Series, np.ndarray]:
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
    """One chunk of the `steps` column as Arrow, and each trace's error_recovery count."""
    offsets, draws = _step_draws(key, variant, family)
    arrow = pa.LargeListArray.from_arrays(
        pa.array(offsets.astype(np.int64)),
        _step_structs(draws).rechunk().to_arrow(compat_level=pl.CompatLevel.newest()),
    )
    errors = np.bincount(draws.trace, weights=draws.kind == _ERR, minlength=len(key))
    return arrow, errors.astype(np.int64)


def _step_counts(shape: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each trace's architecture and step count, drawn from its shape hash.

    Architectures: 0 no steps, 1 a single thought, 2 a ReAct loop, 3 a free mix, 4 an
    error-recovery run.
    """
    arch = np.searchsorted(np.array([0.03, 0.06, 0.74, 0.92]), unit(shape), side="right")
    cumulative = np.cumsum(_N_STEPS_P) / _N_STEPS_P.sum()
    multi = 2 + np.searchsorted(cumulative, unit(mix(shape ^ salt("n"))), side="right")
    n_steps = np.select([arch == 0, arch == 1, arch == 4], [0, 1, np.maximum(multi, 6)], multi)
    return arch, n_steps


def _step_draws(
    key: np.ndarray, variant: np.ndarray, family: np.ndarray
) -> tuple[np.ndarray, _Draws]:
    """The list offsets of a chunk's traces and the draws of each of their steps."""
    shape = mix(key ^ salt("shape"))
    arch, n_steps = _step_counts(shape)
    offsets = np.concatenate([[0], np.cumsum(n_steps)])
    trace = np.repeat(np.arange(len(key)), n_steps)
    pos = np.arange(offsets[-1]) - offsets[trace]
    h = mix(key[trace] ^ (pos.astype(np.uint64) + np.uint64(1)) * GOLDEN)
    u1, u2, u3 = unit(h), unit(mix(h ^ salt("u2"))), unit(mix(h ^ salt("u3")))
    kind = _step_types(pos, n_steps[trace], arch[trace], u1, u2)
    has_tool = np.select(
        [kind == _TOOL, kind == _ERR, kind == _OBS], [u3 >= 0.01, u3 < 0.1, u3 < 0.02], u3 < 0.005
    )
    fam = family[trace]
    tool = _tools(shape, h, trace, fam)
    return offsets, _Draws(
        trace, pos, h, u1, u2, kind, has_tool, tool, fam, key[trace], variant[trace]
    )


def _tools(shape: np.ndarray, h: np.ndarray, trace: np.ndarray, fam: np.ndarray) -> np.ndarray:
    """Each step's tool among its family's tools; about 30% of traces use one tool throughout."""
    compiled = tables()
    single = unit(mix(shape ^ salt("single")))[trace] < 0.3
    which = np.where(single, mix(shape[trace] ^ salt("tool")), mix(h ^ salt("tool")))
    return compiled.tool_offset[fam] + (which % compiled.tool_count[fam]).astype(np.int64)


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


def _step_texts(d: _Draws) -> tuple[pl.Series, pl.Series, pl.Series]:
    """Each step's content, output_summary and input; null where the step has none."""
    compiled = tables()
    has_content = np.select(
        [d.family == NOISE, d.kind == _TOOL, d.kind == _THOUGHT, d.kind == _OBS],
        [d.u2 < 0.2, d.u2 < 0.35, d.u1 < 0.97, d.u1 < 0.95],
        True,
    )
    content = render(
        np.where(has_content, pick(d.family, d.kind + 1, d.h), -1), d.h, d.key, d.variant
    )
    out_kind = np.where(d.kind == _ERR, KIND["output_err"], KIND["output"])
    output = render(
        np.where(d.has_tool & (d.u1 < 0.9), pick(d.family, out_kind, d.h), -1),
        d.h,
        d.key,
        d.variant,
    )
    raw = unit(mix(d.h ^ salt("raw"))) < 0.03
    input_tid = np.where(raw, pick(d.family, KIND["raw"], d.h), compiled.tool_template[d.tool])
    inputs = render(np.where(d.has_tool & (d.u2 < 0.92), input_tid, -1), d.h, d.key, d.variant)
    return content, output, inputs


def _latencies(d: _Draws) -> pl.Series:
    """Each step's latency_ms: log-normal, slower for thoughts; null where it was not timed."""
    u4 = unit(mix(d.h ^ salt("u4")))
    gauss = np.sqrt(-2.0 * np.log1p(-u4)) * np.cos(2.0 * np.pi * d.u1)
    latency = np.where(d.kind == _THOUGHT, 800.0 * np.exp(0.5 * gauss), 250.0 * np.exp(0.9 * gauss))
    timed = np.where(d.kind == _THOUGHT, d.u2 < 0.4, d.has_tool & (d.u2 < 0.97))
    return pl.Series(np.where(timed, np.round(latency, 1), np.nan), nan_to_null=True)


def _step_structs(d: _Draws) -> pl.Series:
    """The steps of a chunk, flat, as the SDK's step structs."""
    content, output, inputs = _step_texts(d)
    return (
        pl.DataFrame(
            {
                "step_id": d.pos.astype(np.int64),
                "type": pl.Series(STEP_TYPES).gather(d.kind),
                "content": content,
                "name": tables().tool_names.gather(d.tool),
                "has_tool": d.has_tool,
                "input": inputs,
                "output_summary": output,
                "latency_ms": _latencies(d),
            }
        )
        .select(
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
        .to_series()
    )
