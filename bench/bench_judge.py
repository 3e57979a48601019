"""LLM judge: concurrent judging into DuckDB against the seed's one-at-a-time evaluator.

Both sides judge the same submissions with the four built-in metrics against a model that
answers after a fixed latency (a pydantic-ai FunctionModel sleeping 200 ms, as a remote judge
would keep the caller waiting), through pydantic-ai's direct `model_request`.

    tracegrade: pipelines.judge.runner.run_live, max_concurrency 32, results written to a
                DuckDB file as they finish, then the same run again (cache: zero calls)
    baseline:   the seed's evaluator: for each submission, each metric in turn, one
                `model_request` at a time, results kept in memory (no store)

Run: .venv/bin/python bench/bench_judge.py [--n 1000] [--latency-ms 200] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from _common import Check, add_common_args, begin, end, print_table, save_result
from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from pipelines.judge.calls import judgement_from, judgement_request
from pipelines.judge.runner import run_live
from storage.config_files import load_judge_config
from storage.judge.store import DuckDBJudgeSink
from storage.store.duckdb_store import DuckDBStore
from transforms.judge.metrics import Judgement
from transforms.judge.plan import plan_items
from transforms.judge.resolve import JudgeConfig

TARGET_RATIO = 25.0


class SlowJudge:
    """A FunctionModel answering every request after `latency_s`, counting its calls."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.calls = 0
        self.model = FunctionModel(self._respond)

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        await asyncio.sleep(self.latency_s)
        score = float(len(str(messages[-1].parts[-1].content)) % 101)  # type: ignore[union-attr]
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, {"score": score, "comment": "ok"})],
            usage=RequestUsage(input_tokens=300, output_tokens=40),
        )


def submissions(n: int) -> pl.DataFrame:
    """n distinct (item_id, user_query, submission) rows."""
    return pl.DataFrame(
        {
            "item_id": [f"s{i:05d}" for i in range(n)],
            "user_query": [f"How do I rotate log files on host {i}?" for i in range(n)],
            "submission": [
                f"Use logrotate with a daily rule; host {i} keeps 7 files." for i in range(n)
            ],
        }
    )


def judge_into(
    db: Path, config: JudgeConfig, frame: pl.DataFrame, judge: SlowJudge, seq: int
) -> dict[str, int]:
    """One tracegrade run; returns its counts."""
    with DuckDBStore(db) as store:
        sink = DuckDBJudgeSink(store)
        planned = plan_items(frame, config, sink)
        identity = {
            "run_id": f"bench-{seq}",
            "run_seq": seq,
            "source": "bench",
            "mode": "live",
            "config_hash": config.config_hash,
        }
        result = asyncio.run(
            run_live(planned, config, sink, identity, factory=lambda m: judge.model)
        )
    return result.counts()


async def seed_evaluator(config: JudgeConfig, frame: pl.DataFrame, judge: SlowJudge) -> int:
    """The seed's evaluator: each submission, each metric, one request at a time."""
    results = 0
    for row in frame.iter_rows(named=True):
        for metric in config.metrics:
            messages, settings, parameters = judgement_request(
                metric, row["user_query"], row["submission"], timeout_s=None
            )
            response = await model_request(
                judge.model, messages, model_settings=settings, model_request_parameters=parameters
            )
            results += isinstance(judgement_from(response), Judgement)
    return results


@dataclass(frozen=True)
class Measured:
    """What one benchmark run measured: both tracegrade runs, the baseline, what was stored."""

    metrics: int
    counts: dict[str, int]
    ours_s: float
    first_calls: int
    rerun_counts: dict[str, int]
    rerun_s: float
    rerun_calls: int
    base_s: float
    judged: int
    baseline_calls: int
    ok: int
    """Rows stored with status 'ok'."""
    scored: int
    """Overall scores in latest_judge_scores."""


def parse_args() -> argparse.Namespace:
    """The flags: --n, --latency-ms, --concurrency and the common ones."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000, help="submissions")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=32)
    add_common_args(parser)
    return parser.parse_args()


def timed_judge_into(
    db: Path, config: JudgeConfig, frame: pl.DataFrame, judge: SlowJudge, seq: int
) -> tuple[dict[str, int], float]:
    """One tracegrade run's counts and wall time in seconds."""
    started = time.perf_counter()
    counts = judge_into(db, config, frame, judge, seq)
    return counts, time.perf_counter() - started


def stored_counts(db: Path) -> tuple[int, int]:
    """Rows stored with status 'ok', and overall scores in latest_judge_scores."""
    stored = DuckDBStore(db, read_only=True)
    ok = stored.sql("SELECT count(*) AS n FROM judge_results WHERE status = 'ok'")["n"][0]
    scored = stored.sql("SELECT count(overall_score) AS n FROM latest_judge_scores")["n"][0]
    stored.close()
    return ok, scored


def measure(args: argparse.Namespace) -> Measured:
    """Judge the submissions twice into one DuckDB file, then once with the seed's evaluator."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "evaluator.toml"
        path.write_text(f'max_concurrency = {args.concurrency}\ndefault_model = "openai:judge"\n')
        config = load_judge_config(path, check_keys=False)
        frame = submissions(args.n)
        judge = SlowJudge(args.latency_ms / 1000.0)
        db = Path(folder) / "judge.duckdb"
        counts, ours = timed_judge_into(db, config, frame, judge, 1)
        first_calls = judge.calls
        rerun, rerun_s = timed_judge_into(db, config, frame, judge, 2)
        rerun_calls = judge.calls - first_calls
        baseline_judge = SlowJudge(args.latency_ms / 1000.0)
        started = time.perf_counter()
        judged = asyncio.run(seed_evaluator(config, frame, baseline_judge))
        base = time.perf_counter() - started
        ok, scored = stored_counts(db)
    return Measured(
        len(config.metrics),
        counts,
        ours,
        first_calls,
        rerun,
        rerun_s,
        rerun_calls,
        base,
        judged,
        baseline_judge.calls,
        ok,
        scored,
    )


def report_rows(m: Measured, judgements: int) -> list[Check]:
    """The report table: wall time and judgements per second of both sides, then the re-run."""
    ratio = m.base_s / m.ours_s
    return [
        Check(
            "wall time (s)",
            f"{m.ours_s:.1f}",
            f"{m.base_s:.1f}",
            f"{ratio:.1f}x",
            f">= {TARGET_RATIO:.0f}x",
            ratio >= TARGET_RATIO,
        ),
        Check(
            "judgements / s",
            f"{judgements / m.ours_s:.1f}",
            f"{judgements / m.base_s:.1f}",
            "",
            "",
            None,
        ),
        Check("re-run: model calls", str(m.rerun_calls), "-", "", "0", m.rerun_calls == 0),
        Check("re-run: wall time (s)", f"{m.rerun_s:.2f}", "-", "", "", None),
    ]


def main() -> None:
    args = parse_args()
    info, load = begin("bench_judge: concurrent judge into DuckDB vs one-at-a-time", args)
    m = measure(args)
    judgements = args.n * m.metrics
    print(
        f"{args.n:,} submissions x {m.metrics} metrics = {judgements:,} judgements, "
        f"model latency {args.latency_ms:.0f} ms\n"
        f"tracegrade: {m.first_calls:,} calls, {m.ok:,} ok rows stored, {m.scored:,} overall "
        f"scores; baseline: {m.baseline_calls:,} calls, {m.judged:,} judgements in memory\n"
    )
    print_table(report_rows(m, judgements))
    end(info, load)
    save_result(
        "bench_judge",
        {
            **info,
            "n": args.n,
            "metrics": m.metrics,
            "latency_ms": args.latency_ms,
            "concurrency": args.concurrency,
            "ours_s": m.ours_s,
            "baseline_s": m.base_s,
            "ratio": m.base_s / m.ours_s,
            "first_run_calls": m.first_calls,
            "rerun_calls": m.rerun_calls,
            "rerun_s": m.rerun_s,
            "counts": m.counts,
            "rerun_counts": m.rerun_counts,
        },
    )


if __name__ == "__main__":
    main()
