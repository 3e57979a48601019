"""The `judge_traces` flow: stored traces (or a table of id, user_query, submission) in, one
judged row per (submission, metric) and an overall score per submission in DuckDB out.

load config (keys checked) -> plan (cache keys, reuse) -> judge live or submit batches -> report
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import polars as pl
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from pipelines.judge_fanout import judge_distributed
from storage.duckdb_store import DuckDBStore, RunHandle, RunRecord
from storage.judge_inputs import judge_items_from_table, judge_items_from_traces
from storage.judge_shards import ingest_leftover_shards
from storage.judge_store import DuckDBJudgeSink
from storage.registry import held_store, store_for
from tracegrade.judge.batch import BatchRunResult, batch_items, run_batch
from tracegrade.judge.config import JudgeConfig, load_judge_config
from tracegrade.judge.errors import BudgetConfigError, JudgeRunFailed, MissingApiKeyError
from tracegrade.judge.plan import Estimate, estimate, plan_items
from tracegrade.judge.report import JudgeReport, build_judge_report, skipped_report
from tracegrade.judge.runner import JudgeRunResult, run_live

__all__ = [
    "JudgeRun",
    "check_budget",
    "estimate_judge",
    "judge_after_scoring",
    "judge_collect",
    "judge_fanned_out",
    "judge_items",
    "judge_traces",
]

_task = task(cache_policy=NO_CACHE, persist_result=False)


@dataclass(frozen=True)
class JudgeRun:
    """A judge run's identity and inputs (tasks pass this, not frames)."""

    db: str
    run_id: str
    run_seq: int
    config: str | None
    table: str | None
    budget_usd: float | None

    @property
    def handle(self) -> RunHandle:
        """The run as the store knows it."""
        return RunHandle(self.run_id, self.run_seq)

    @property
    def source(self) -> str:
        """What the rows are judged from: `traces`, or the table file."""
        return "traces" if self.table is None else str(Path(self.table).resolve())


def _load_items(store: DuckDBStore, config: JudgeConfig, table: str | None) -> pl.DataFrame:
    if table is not None:
        return judge_items_from_table(table)
    if (
        store.sql("SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'traces'")["n"][0]
        == 0
    ):
        return pl.DataFrame(
            schema={"item_id": pl.String, "user_query": pl.String, "submission": pl.String}
        )
    inputs = config.settings.inputs
    return judge_items_from_traces(store, inputs.user_query, inputs.submission)


def check_budget(config: JudgeConfig, budget_usd: float | None) -> None:
    if budget_usd is None:
        return
    unpriced = [m for m in config.models if m not in config.settings.prices]
    if unpriced:
        raise BudgetConfigError(
            f"{config.source}: --budget needs a price for every judge model; add "
            + ", ".join(f'[prices."{m}"] with input_per_mtok and output_per_mtok' for m in unpriced)
        )


@_task
def judge_items(run: JudgeRun, collect_only: bool = False) -> dict[str, object]:
    """Plan and judge every submission (live), or collect and submit batches (batch mode).

    Results are written as they finish.
    """
    config = load_judge_config(run.config)
    store = store_for(run.db)
    sink = DuckDBJudgeSink(store)
    ingest_leftover_shards(store)
    identity = _identity(run, config)
    outcome: JudgeRunResult | BatchRunResult
    if collect_only or config.settings.mode == "batch":
        frame = batch_items(sink) if collect_only else _load_items(store, config, run.table)
        outcome = asyncio.run(
            run_batch(
                frame, config, sink, identity, budget_usd=run.budget_usd, submit=not collect_only
            )
        )
    else:
        planned = plan_items(_load_items(store, config, run.table), config, sink)
        outcome = asyncio.run(run_live(planned, config, sink, identity, budget_usd=run.budget_usd))
    return {
        "counts": outcome.counts(),
        "cost_usd": outcome.cost_usd,
        "stop_reason": outcome.stop_reason,
        "failed": outcome.failed,
    }


def _identity(run: JudgeRun, config: JudgeConfig) -> dict[str, object]:
    return {
        "run_id": run.run_id,
        "run_seq": run.run_seq,
        "source": run.source,
        "mode": config.settings.mode,
        "config_hash": config.config_hash,
    }


def judge_fanned_out(run: JudgeRun) -> dict[str, object]:
    """`judge_items` of a live run with `[execution] engine = "dask"`: planned here, the calls
    made in shards on a Dask cluster (pipelines/judge_fanout.py); runs in the flow's process,
    since the shards are a subflow."""
    config = load_judge_config(run.config)
    store = store_for(run.db)
    sink = DuckDBJudgeSink(store)
    ingest_leftover_shards(store)
    planned = plan_items(_load_items(store, config, run.table), config, sink)
    return judge_distributed(
        run.db, planned, config, run.config, _identity(run, config), run.budget_usd
    )


def estimate_judge(db: str, config: str | None, table: str | None = None) -> Estimate:
    """What a run would call, spend and cost; reads the store, calls nothing, writes nothing."""
    judge_config = load_judge_config(config)
    path = Path(db)
    opened = DuckDBStore(path, read_only=True) if path.exists() else DuckDBStore(":memory:")
    with opened as store:
        sink = DuckDBJudgeSink(store, create=False)
        return estimate(
            plan_items(_load_items(store, judge_config, table), judge_config, sink), judge_config
        )


@flow(name="judge_traces", persist_result=False, log_prints=False)
def judge_traces(
    db: str = "tracegrade.duckdb",
    config: str | None = "configs/evaluator.toml",
    table: str | None = None,
    budget_usd: float | None = None,
) -> JudgeReport:
    """Judge the stored traces' answers (or a table's) with the configured LLM metrics.

    Args:
        db: the DuckDB file; created when missing.
        config: the judge configuration (configs/evaluator.toml); None uses the defaults.
        table: a CSV, JSONL or Parquet file of (id, user_query, submission) to judge instead of
            the stored traces.
        budget_usd: stop starting calls once this much is spent (needs prices in the config).

    Raises:
        JudgeRunFailed: a submission failed, or an auth error or the circuit breaker stopped the
            run; everything judged is stored and the next run retries only what failed.
    """
    return _judge_run("judge_traces", db, config, table, budget_usd, collect_only=False)


@flow(name="judge_collect", persist_result=False, log_prints=False)
def judge_collect(
    db: str = "tracegrade.duckdb", config: str | None = "configs/evaluator.toml"
) -> JudgeReport:
    """Collect the batches earlier batch-mode runs submitted; submit nothing new.

    Raises:
        JudgeRunFailed: a collected submission failed; the next run submits it again.
    """
    return _judge_run("judge_collect", db, config, None, None, collect_only=True)


def _judge_run(
    name: str,
    db: str,
    config: str | None,
    table: str | None,
    budget_usd: float | None,
    *,
    collect_only: bool,
) -> JudgeReport:
    judge_config = load_judge_config(config)
    check_budget(judge_config, budget_usd)
    with held_store(db) as store:
        handle = store.begin_run(
            name,
            version=version("tracegrade"),
            model=", ".join(judge_config.models) or None,
            config=judge_config.settings.model_dump(mode="json"),
            config_hash=judge_config.config_hash,
        )
        run = JudgeRun(str(store.path), handle.run_id, handle.run_seq, config, table, budget_usd)
        started = time.perf_counter()
        fan_out = not collect_only and judge_config.settings.execution.engine == "dask"
        try:
            outcome = judge_fanned_out(run) if fan_out else judge_items(run, collect_only)
        except BaseException as exc:
            store.finish_run(handle, RunRecord("failed", {}, {}, "", repr(exc)))
            raise
        status = "failed" if outcome["failed"] else "completed"
        report = build_judge_report(
            run.run_id,
            status,
            dict(outcome["counts"]),  # type: ignore[call-overload]
            float(outcome["cost_usd"]),  # type: ignore[arg-type]
            outcome["stop_reason"],  # type: ignore[arg-type]
        )
        store.finish_run(
            handle,
            RunRecord(status, {}, {"judge": time.perf_counter() - started}, report.markdown),
        )
    create_markdown_artifact(
        report.markdown, key=name.replace("_", "-") + "-report", description=name
    )
    if report.failed:
        raise JudgeRunFailed(report.markdown)
    return report


def judge_after_scoring(db: str, judge_config: str | None) -> JudgeReport:
    """The nightly step: judge the stored traces, or say why the judge was skipped."""
    if judge_config is None:
        report = skipped_report(
            "no judge configuration was given (flow parameter judge_config, or "
            "--judge-config FILE of tracegrade score and demo)"
        )
    elif not Path(judge_config).exists():
        report = skipped_report(f"the judge configuration {judge_config} does not exist")
    else:
        try:
            load_judge_config(judge_config)
        except MissingApiKeyError as exc:
            report = skipped_report(f"the API key is missing: {exc.variable} is not set")
        else:
            return judge_traces(db=db, config=judge_config)
    get_run_logger().warning(report.markdown.strip())
    create_markdown_artifact(
        report.markdown, key="judge-traces-report", description="judge skipped"
    )
    return report
