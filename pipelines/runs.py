"""The run machinery every flow shares: a run's identity and work folder, its steps timed and
recorded in the `runs` table, and where the steps execute.

A flow body opens `RunSteps` and calls `steps.step(name, fn, ...)` for each stage. Called
plainly (the command line with no Prefect API), every step runs in this process and no Prefect
server starts. Called through `pipelines.flows` (deployments, or any run with a Prefect API),
the body runs inside a Prefect flow run and each step becomes a task run; the tables written
are the same either way.
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from storage.store.duckdb_store import DuckDBStore, RunHandle, RunRecord
from storage.store.faults import RECORDED, UNRECORDED
from storage.store.interrupts import stop_if_requested, uninterrupted
from storage.store.run_locks import dead_folders, hold_alive, is_alive, let_go, remove_if_empty
from storage.store.store_health import check_store, remove_orphaned_files

__all__ = [
    "Run",
    "RunSteps",
    "Steps",
    "RunTally",
    "in_prefect",
    "prefect_mode",
    "publish_markdown",
    "run_logger",
    "work_root",
]

P = ParamSpec("P")
T = TypeVar("T")

LOGGED_COUNTS = frozenset(
    {
        "files_read",
        "files_skipped",
        "files_quarantined",
        "rows_read",
        "rows_scored",
        "rows_quarantined",
        "rows_new",
        "rows_changed",
        "rows_unchanged",
        "rows_rescored",
        "texts_embedded",
        "texts_cached",
        "rows_out_of_range",
        "rows_late",
    }
)
"""The counts the `runs` table has columns for; other counts stay in the summary."""

_PREFECT: ContextVar[bool] = ContextVar("tracegrade_prefect", default=False)


def in_prefect() -> bool:
    """True inside a flow started through `pipelines.flows` (a Prefect flow run)."""
    return _PREFECT.get()


@contextmanager
def prefect_mode() -> Iterator[None]:
    """Run the steps of the flow bodies called in this block as Prefect task runs."""
    token = _PREFECT.set(True)
    try:
        yield
    finally:
        _PREFECT.reset(token)


def run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """The flow run's logger inside Prefect, else the `tracegrade` logger."""
    if in_prefect():
        from prefect import get_run_logger

        return get_run_logger()
    return logging.getLogger("tracegrade")


def publish_markdown(markdown: str, key: str, description: str) -> None:
    """A Markdown artifact of the flow run (inside Prefect); nothing elsewhere."""
    if in_prefect():
        from prefect.artifacts import create_markdown_artifact

        create_markdown_artifact(markdown, key=key, description=description)


def work_root(store: DuckDBStore) -> Path:
    """The hidden folder beside the database where runs stage their files.

    Folder inputs skip hidden entries, so staging files are never read back as exports even
    when the database sits in the export folder.
    """
    return store.path.parent / f".{store.path.name}.work"


def _alive(store: DuckDBStore, run_id: str) -> bool:
    """Whether the run `run_id` still runs. A run of another machine (a DuckLake with a
    PostgreSQL catalog is shared by several) has no work folder here and counts as alive: its
    own machine's runs close it when it was killed."""
    folder = work_root(store) / run_id
    if store.location.catalog == "postgres" and not folder.exists():
        return True
    return is_alive(folder)


@dataclass(frozen=True)
class Run:
    """A run's identity and its work folder (steps receive this, not data frames)."""

    db: str
    run_id: str
    run_seq: int
    work_dir: str

    @property
    def handle(self) -> RunHandle:
        """The run as the store knows it."""
        return RunHandle(self.run_id, self.run_seq)

    def path(self, name: str) -> Path:
        """A file in the run's work folder."""
        return Path(self.work_dir) / name


class RunTally:
    """Counts and per-step timings of a run, filled in as its steps finish."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.timings: dict[str, float] = {}

    def record(self, step: str, seconds: float, counts: Any) -> None:
        """Add a finished step's seconds and, when it returned a dict of counts, its counts."""
        self.timings[step] = self.timings.get(step, 0.0) + seconds
        if isinstance(counts, dict):
            for key, value in counts.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self.counts[key] = self.counts.get(key, 0) + value

    def merge(self, other: RunTally) -> None:
        """Add another tally's counts and timings to this one."""
        for key, value in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + value
        for step, seconds in other.timings.items():
            self.timings[step] = self.timings.get(step, 0.0) + seconds

    def logged(self) -> dict[str, int]:
        """The counts the runs table has columns for."""
        return {key: value for key, value in self.counts.items() if key in LOGGED_COUNTS}


class Steps:
    """The steps of a flow body: each one timed into a tally, and run as a Prefect task run
    inside Prefect or as a plain call elsewhere. `RunSteps` adds the run's record in `runs`."""

    def __init__(self) -> None:
        self.tally = RunTally()

    def step(self, name: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `fn(*args, **kwargs)` as the step `name` (a Prefect task run inside Prefect),
        add its seconds and the counts it returns to the tally, and return its result."""
        stop_if_requested()
        started = time.perf_counter()
        if in_prefect():
            from prefect import task
            from prefect.cache_policies import NO_CACHE

            as_task = task(name=name, cache_policy=NO_CACHE, persist_result=False)(fn)
            result: T = as_task(*args, **kwargs)
        else:
            result = fn(*args, **kwargs)
        self.tally.record(name, time.perf_counter() - started, result)
        return result

    def inline(self, name: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Like `step`, but `fn` always runs in the flow itself, never as a task: for a step
        that starts a subflow of its own (a Dask fan-out)."""
        started = time.perf_counter()
        result = fn(*args, **kwargs)
        self.tally.record(name, time.perf_counter() - started, result)
        return result


class RunSteps(Steps):
    """One run of a flow that writes the database: logged in `runs` when it starts, each step
    timed, the run recorded as completed (with its summary) or failed (with the error), the
    work folder removed.

    Args:
        store: the database the run writes (held by this process).
        flow: the flow's name, recorded in `runs`.
        config: the configuration as JSON-able data, recorded with the run.
        config_hash: the hash of what changes results.
        model: the model the run uses (embedding or judge), if any.
        recover: first close runs a crash left `running`, and remove the work folders of
            every run whose process is gone (recorded or not).
    """

    def __init__(
        self,
        store: DuckDBStore,
        flow: str,
        *,
        config: dict[str, Any],
        config_hash: str,
        model: str | None = None,
        recover: bool = False,
    ) -> None:
        super().__init__()
        self.store = store
        self.model = model
        self.finished = False
        run_id = uuid.uuid4().hex
        work_dir = work_root(store) / run_id
        try:
            # a stop request from here on is raised once the run is recorded: its folder is
            # there as soon as it is held, and a run whose folder was seen is recorded
            with uninterrupted():
                self._alive = hold_alive(work_dir)  # before the run is recorded: never dead
                check_store(store)  # a data file gone or damaged: said before any work
                if recover:
                    store.close_interrupted_runs(lambda rid: _alive(store, rid))
                    remove_orphaned_files(store)  # what a killed commit had written
                    # also the folders of runs killed before they were recorded
                    for folder in dead_folders(work_root(store)):
                        shutil.rmtree(folder, ignore_errors=True)
                handle = store.begin_run(
                    flow,
                    version=version("tracegrade"),
                    model=model,
                    config=config,
                    config_hash=config_hash,
                    run_id=run_id,
                )
                self.run = Run(store.db, handle.run_id, handle.run_seq, str(work_dir))
            store.release()
        except BaseException as error:
            if hasattr(self, "run"):
                self.finish("failed", "", error)
            else:
                if hasattr(self, "_alive"):
                    let_go(self._alive)
                shutil.rmtree(work_dir, ignore_errors=True)
            raise

    def step(self, name: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`Steps.step`, then let go of the database file until the next step needs it, so
        other processes can read it (or commit) in between."""
        try:
            return super().step(name, fn, *args, **kwargs)
        finally:
            self.store.release()

    def finish(self, status: str, summary: str, error: BaseException | None = None) -> None:
        """Record the run's status, counts, timings and summary, and remove its work folder."""
        record = RunRecord(
            status,
            self.tally.logged(),
            self.tally.timings,
            summary,
            error=None if error is None else repr(error),
        )
        with uninterrupted():
            self.store.finish_run(self.run.handle, record)
            self.finished = True
            # imported here, not with this module: commands that only publish artifacts
            # (tracegrade report) import this module and need no Arrow
            from storage.store.staging_store import drop_staging

            drop_staging(self.store, self.run.run_id)
            self.store.release()
            shutil.rmtree(self.run.work_dir, ignore_errors=True)
            let_go(self._alive)
            remove_if_empty(work_root(self.store))

    def __enter__(self) -> RunSteps:
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        if self.finished:
            return
        try:
            self.finish("failed", "", error)
            if error is not None:
                error.add_note(RECORDED)
        except Exception:
            if error is None:
                raise
            # the fault that failed the run (a full disk, the catalog gone) failed this
            # too: the run's own error is what to report; a run left `running` is recorded
            # interrupted by the next (`close_interrupted_runs`), its folder removed
            if not self.finished:  # its status could not be written, only what came after
                error.add_note(UNRECORDED)
            let_go(self._alive)
