"""The `judge_traces` flow: stored traces (or a table of id, user_query, submission) in, one
judged row per (submission, metric) and an overall score per submission in DuckDB out.

load config (keys checked) -> plan (cache keys, reuse) -> judge live or submit batches -> report
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.errors import JudgeRunFailed
from pipelines.judge.near_duplicates import Encode, share_near_duplicates
from pipelines.report import publish_run
from pipelines.runs import RunSteps, in_prefect, publish_markdown, run_logger
from storage.config_files import load_judge_config
from storage.judge.inputs import (
    JudgeSelection,
    judge_items_from_table,
    judge_items_from_traces,
    selected_items,
)
from storage.judge.shards import ingest_leftover_shards
from storage.judge.store import DuckDBJudgeSink, open_batch_count
from storage.store.duckdb_store import DuckDBStore
from storage.store.locations import locate
from storage.store.registry import held_store
from transforms.errors import BudgetConfigError, MissingApiKeyError, ProviderPackageError
from transforms.judge.plan import Estimate, PlannedItem, estimate, plan_items
from transforms.judge.resolve import JudgeConfig
from transforms.judge.run_summary import (
    JudgeReport,
    build_judge_report,
    nothing_to_collect_report,
    skipped_report,
)

__all__ = [
    "check_budget",
    "estimate_judge",
    "judge_after_scoring",
    "judge_collect",
    "judge_traces",
]


class JudgeRequest:
    """What one judge run is asked to do: its configuration file, table, budget and which
    stored traces (all, or a selection and a sample)."""

    def __init__(
        self,
        config: str | None,
        table: str | None = None,
        budget_usd: float | None = None,
        selection: JudgeSelection | None = None,
    ) -> None:
        self.config = config
        self.table = table
        self.budget_usd = budget_usd
        self.selection = selection
        self.picked: str | None = None
        """What the selection picked, in words, once the items are loaded."""

    @property
    def source(self) -> str:
        """What the rows are judged from: `traces`, or the table file."""
        return "traces" if self.table is None else str(Path(self.table).resolve())


def _load_items(store: DuckDBStore, config: JudgeConfig, request: JudgeRequest) -> pl.DataFrame:
    if request.table is not None:
        return judge_items_from_table(request.table)
    if not store.has_table("traces"):
        return pl.DataFrame(
            schema={"item_id": pl.String, "user_query": pl.String, "submission": pl.String}
        )
    inputs = config.settings.inputs
    if request.selection is None:
        return judge_items_from_traces(store, inputs.user_query, inputs.submission)
    items, counts = selected_items(store, inputs.user_query, inputs.submission, request.selection)
    request.picked = request.selection.describe(counts)
    return items


def check_budget(config: JudgeConfig, budget_usd: float | None) -> None:
    if budget_usd is None:
        return
    unpriced = [m for m in config.models if m not in config.settings.prices]
    if unpriced:
        raise BudgetConfigError(
            f"{config.source}: --budget needs a price for every judge model; add "
            + ", ".join(f'[prices."{m}"] with input_per_mtok and output_per_mtok' for m in unpriced)
        )


def judge_items(
    steps: RunSteps, request: JudgeRequest, config: JudgeConfig, collect_only: bool
) -> dict[str, Any]:
    """Plan and judge every submission (live; fanned out to Dask with engine = "dask"), or
    collect and submit batches (batch mode). Results are written as they finish."""
    # The request code (pydantic-ai, 0.8 s of imports) loads when something is judged, not
    # with this module: every scoring run imports it for judge_after_scoring.
    from pipelines.judge.batch import batch_items, run_batch
    from pipelines.judge.runner import run_live

    store = steps.store
    sink = DuckDBJudgeSink(store)
    ingest_leftover_shards(store)
    identity = {
        "run_id": steps.run.run_id,
        "run_seq": steps.run.run_seq,
        "source": request.source,
        "mode": config.settings.mode,
        "config_hash": config.config_hash,
    }
    budget = request.budget_usd
    if collect_only or config.settings.mode == "batch":
        frame = batch_items(sink) if collect_only else _load_items(store, config, request)
        outcome = asyncio.run(
            run_batch(frame, config, sink, identity, budget_usd=budget, submit=not collect_only)
        )
        return outcome.summary()
    planned = plan_items(_load_items(store, config, request), config, sink)
    planned = _shared(planned, config, _answer_encoder(config))
    if config.settings.execution.engine == "dask":
        from pipelines.judge.fanout import judge_distributed

        return judge_distributed(store.db, planned, config, request.config, identity, budget)
    return asyncio.run(run_live(planned, config, sink, identity, budget_usd=budget)).summary()


def _answer_encoder(config: JudgeConfig) -> Encode | None:
    """What embeds the answers for near-duplicate sharing (the model loads on first use), or
    None where the configuration asks for none or the run is not live on this machine."""
    settings = config.settings
    if (
        settings.near_duplicates.distance is None
        or settings.mode != "live"
        or settings.execution.engine != "local"
    ):
        return None
    from pipelines.embedder import SentenceEmbedder
    from transforms.config.scoring import EmbeddingConfig

    return SentenceEmbedder(EmbeddingConfig()).encode


def _shared(
    planned: list[PlannedItem], config: JudgeConfig, encode: Encode | None
) -> list[PlannedItem]:
    """`planned` with its near-duplicate answers marked to share judgements
    (`[near_duplicates]`), where `encode` embeds them."""
    distance = config.settings.near_duplicates.distance
    if encode is not None and distance is not None:
        share_near_duplicates(planned, distance, encode)
    return planned


def estimate_judge(
    db: str, config: str | None, table: str | None = None, selection: JudgeSelection | None = None
) -> tuple[Estimate, JudgeConfig, tuple[Estimate, str] | None]:
    """What a run would call, spend and cost, and the configuration it read; with a
    selection, the run over every stored trace first and then the selected one with what it
    picked in words. Reads the store, calls nothing, writes nothing, and needs no API key
    (only a live run does)."""
    judge_config = load_judge_config(config, check_keys=False)
    encode = _answer_encoder(judge_config)  # one model for both estimates
    opened = DuckDBStore(db, read_only=True) if locate(db).exists() else DuckDBStore(":memory:")
    with opened as store:
        sink = DuckDBJudgeSink(store)
        every = JudgeRequest(config, table)
        planned = plan_items(_load_items(store, judge_config, every), judge_config, sink)
        whole = estimate(_shared(planned, judge_config, encode), judge_config)
        if selection is None:
            return whole, judge_config, None
        chosen = JudgeRequest(config, table, selection=selection)
        planned = plan_items(_load_items(store, judge_config, chosen), judge_config, sink)
        picked = estimate(_shared(planned, judge_config, encode), judge_config)
        return whole, judge_config, (picked, chosen.picked or "")


def judge_traces(
    db: str = "tracegrade.duckdb",
    config: str | None = "configs/evaluator.toml",
    table: str | None = None,
    budget_usd: float | None = None,
    select: str | None = None,
    sample: float | None = None,
    seed: int = 0,
) -> JudgeReport:
    """Judge the stored traces' answers (or a table's) with the configured LLM metrics.

    Args:
        db: the DuckDB file; created when missing.
        config: the judge configuration (configs/evaluator.toml); None uses the defaults.
        table: a CSV, JSONL or Parquet file of (id, user_query, submission) to judge instead of
            the stored traces.
        budget_usd: stop starting calls once this much is spent (needs prices in the config).
        select: judge only the stored traces this SQL predicate selects (their columns, and
            storage.judge.inputs.SELECTION_COLUMNS: the newest value score, level, ...).
        sample: judge this share (0 to 1) of the traces `select` leaves out, too (of every
            trace without `select`), picked by `seed`.
        seed: which traces the sample takes; the same seed takes the same ones every run.

    Raises:
        JudgeRunFailed: a submission failed, or an auth error or the circuit breaker stopped the
            run; everything judged is stored and the next run retries only what failed.
    """
    selection = None
    if select is not None or sample is not None:
        selection = JudgeSelection(select, sample, seed)
    request = JudgeRequest(config, table, budget_usd, selection)
    report = _judge_run("judge_traces", db, request, False)
    if report.failed:
        raise JudgeRunFailed(report.markdown)
    return report


def judge_collect(
    db: str = "tracegrade.duckdb", config: str | None = "configs/evaluator.toml"
) -> JudgeReport:
    """Collect the batches earlier batch-mode runs submitted; submit nothing new.

    With no batch waiting (the database does not exist yet, or every batch is collected) the
    run ends completed with a note saying so, before the configuration's API keys are asked
    for: a site that never judges in batch mode gets no failed runs from the schedule. Only
    open batches need the key, and then a missing one fails the run.

    Raises:
        JudgeRunFailed: a collected submission failed; the next run submits it again.
        MissingApiKeyError: batches wait and the key to collect them is not set.
    """
    if open_batch_count(db) == 0:
        report = nothing_to_collect_report(
            f'no provider batch of {db} waits to be collected (runs with mode = "batch" '
            "submit them)"
        )
        run_logger().info(report.markdown.strip())
        publish_markdown(report.markdown, "judge-collect-report", "judge collect: nothing to do")
        return report
    report = _judge_run("judge_collect", db, JudgeRequest(config), True)
    if report.failed:
        raise JudgeRunFailed(report.markdown)
    return report


def _judge_run(name: str, db: str, request: JudgeRequest, collect_only: bool) -> JudgeReport:
    """One judge run, recorded in `runs`; its report says whether it failed (the callers raise
    then, from a frame that holds no database connection)."""
    config = load_judge_config(request.config)
    check_budget(config, request.budget_usd)
    with (
        held_store(db) as store,
        RunSteps(
            store,
            name,
            config=config.settings.model_dump(mode="json"),
            config_hash=config.config_hash,
            model=", ".join(config.models) or None,
        ) as steps,
    ):
        # a Dask fan-out starts a subflow of its own, which must not run inside a task run
        fans_out = not collect_only and config.settings.execution.engine == "dask"
        run_step = steps.inline if fans_out else steps.step
        outcome = run_step("judge", judge_items, steps, request, config, collect_only)
        status = "failed" if outcome["failed"] else "completed"
        report = build_judge_report(
            steps.run.run_id,
            status,
            dict(outcome["counts"]),
            float(outcome["cost_usd"]),
            outcome["stop_reason"],
            request.picked,
        )
        steps.finish(status, report.markdown)
    publish_run(db, report.markdown, name.replace("_", "-") + "-report", name)
    return report


def judge_after_scoring(db: str, judge_config: str | None) -> JudgeReport:
    """The nightly step: judge the stored traces, or say why the judge was skipped (no
    configuration, a missing file, API key or provider package)."""
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
        except ProviderPackageError as exc:
            report = skipped_report(
                f"the package of provider {exc.provider} is missing: install {exc.package}"
            )
        else:
            return judge_traces(db=db, config=judge_config)
    if in_prefect():  # the run's log; the command line prints it once, in the summary
        run_logger().warning(report.markdown.strip())
    publish_markdown(report.markdown, "judge-traces-report", "judge skipped")
    return report
