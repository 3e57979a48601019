"""Block-edit operation scorers: vectorized batch scoring against a per-case Python implementation.

Both sides score the same generated eval cases with the `all` scorer set (the five built-in
scorers at their seed thresholds) and produce the same rows: per case and scorer the score,
pass/fail and details as JSON, and per case the weighted average, pass/fail and input errors.

    tracegrade: a CASE_SCHEMA Polars frame -> transforms.operations.score_cases
    baseline:   the cases as parsed JSON dicts -> transforms.operations.per_case, case by case

Building the inputs (the frame, the dicts) is not timed on either side. The results are
compared row by row before the figures are printed.

Run: .venv/bin/python bench/bench_operations.py [--n 100000]
"""

from __future__ import annotations

import json
import re
import time

import polars as pl
from _common import (
    Check,
    Comparison,
    begin,
    bench_args,
    end,
    print_table,
    save_result,
    timed,
)

from storage.config_files import load_scorer_set
from transforms.operations import score_cases
from transforms.operations.model import CASE_SCHEMA
from transforms.operations.per_case import reference_score_cases
from transforms.operations.scorers import ScoringBatch
from transforms.operations.synth import synthetic_case_rows

TARGET_RATIO = 10.0
SCORER_SET = "all"
_ENGINE_WORDS = re.compile(r"(Invalid pattern '[^']*'|not a valid regular expression): [^;\"]*")


def _same_words(text: str | None) -> str | None:
    """Python's re and Rust's regex word their errors differently; the rest must be equal."""
    return None if text is None else _ENGINE_WORDS.sub(r"\1: <engine message>", text)


def differences(
    ours: pl.DataFrame, ours_scores: pl.DataFrame, theirs: list[dict]
) -> dict[str, int]:
    """Rows that differ between the two results, by what differs."""
    counts = {"case rows": 0, "scores": 0, "details": 0}
    cases = ours.to_dicts()
    scores = ours_scores.select("score", "passed", "details").rows()
    n = len(theirs)
    for i, expected in enumerate(theirs):
        got = cases[i]
        if (
            got["case_id"],
            got["weighted_average"],
            got["passed"],
            got["failed_scorers"],
            _same_words(got["error"]),
        ) != (
            expected["case_id"],
            expected["weighted_average"],
            expected["passed"],
            expected["failed_scorers"],
            _same_words(expected["error"]),
        ):
            counts["case rows"] += 1
        for j, (_, score, _, passed, _, details) in enumerate(expected["scores"]):
            our_score, our_passed, our_details = scores[j * n + i]
            if (our_score, our_passed) != (score, passed):
                counts["scores"] += 1
            if json.loads(_same_words(our_details) or "") != json.loads(_same_words(details) or ""):
                counts["details"] += 1
    return counts


def breakdown(frame: pl.DataFrame) -> dict[str, float]:
    """Where the vectorized time goes, stage by stage (each best of 3)."""
    config = load_scorer_set(None, SCORER_SET)
    parts: dict[str, float] = {}
    best: dict[str, float] = {}
    for _ in range(3):
        batch = ScoringBatch(frame)
        stages = [
            ("prepare (explode, resolve targets, input errors)", lambda b=batch: b.prepared),
            ("simulate (apply the actual operations)", lambda b=batch: b.simulation),
            ("pattern search", lambda b=batch: b.matches),
            ("content-quality", lambda b=batch: b.content),
        ] + [
            (spec.name, lambda spec=spec, b=batch: spec.scorer.score_frame(b))  # type: ignore[union-attr]
            for spec in config.scorer_set.scorers
            if spec.name != "content-quality"
        ]
        for name, stage in stages:
            started = time.perf_counter()
            stage()
            seconds = time.perf_counter() - started
            best[name] = min(best.get(name, seconds), seconds)
    parts.update(best)
    return parts


def case_sizes(frame: pl.DataFrame) -> dict[str, int]:
    """How much the cases hold: blocks, operations, patterns and distinct regexes."""
    patterns = frame.select(pl.col("expected_patterns").explode().struct.unnest()).drop_nulls(
        "pattern"
    )
    return {
        "blocks": int(frame["original_blocks"].list.len().sum()),
        "expected operations": int(frame["expected_operations"].list.len().sum()),
        "actual operations": int(frame["actual_operations"].list.len().sum()),
        "patterns": patterns.height,
        "distinct regexes": patterns.select(
            pl.struct("pattern", "case_insensitive").n_unique()
        ).item(),
    }


def report_rows(compared: Comparison, differing: dict[str, int]) -> list[Check]:
    """The report table: throughput and wall time, then the rows on which the sides differ."""
    labels = {
        "case rows": "case rows that differ",
        "scores": "scores or pass/fail that differ",
        "details": "details that differ",
    }
    return [
        compared.throughput_check("cases", TARGET_RATIO),
        compared.wall_time_check(),
        *(
            Check(label, f"{differing[key]:,}", "", "", "0", differing[key] == 0)
            for key, label in labels.items()
        ),
    ]


def main() -> None:
    args = bench_args(__doc__.splitlines()[0], n_default=100_000, unit="eval cases")

    info, load = begin("bench_operations: operation scorers, vectorized vs per-case Python", args)
    print(f"polars threads: {pl.thread_pool_size()}")
    started = time.perf_counter()
    rows = synthetic_case_rows(args.n, args.seed)
    frame = pl.DataFrame(rows, schema=CASE_SCHEMA)
    sizes = case_sizes(frame)
    print(
        f"data: {args.n:,} generated cases (seed {args.seed}) in {time.perf_counter() - started:.1f} s: "
        + ", ".join(f"{value:,} {name}" for name, value in sizes.items())
    )
    config = load_scorer_set(None, SCORER_SET)
    specs = [(s.name, s.weight, s.threshold) for s in config.scorer_set.scorers]
    print(f"scorer set: {SCORER_SET} ({', '.join(name for name, _, _ in specs)})\n")

    ours = timed(lambda: score_cases(frame, config.scorer_set))
    base = timed(lambda: reference_score_cases(rows, specs))
    compared = Comparison(args.n, ours, base)
    differing = differences(ours.result.cases, ours.result.scores, base.result)

    print(f"{compared.timings('cases')}\n")
    print_table(report_rows(compared, differing))
    parts = breakdown(frame)
    print("where the vectorized time goes (each stage alone, best of 3):")
    for name, seconds in parts.items():
        print(f"  {name:52s} {seconds:7.3f} s")
    print()

    end(info, load)
    save_result(
        "bench_operations",
        {
            "machine": info,
            **compared.figures(),
            "sizes": sizes,
            "scorer_set": SCORER_SET,
            "differences": differing,
            "breakdown": parts,
        },
    )


if __name__ == "__main__":
    main()
