"""Inputs of the judge: (item_id, user_query, submission) from stored traces or a table file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from storage.confidence.store import one_level_source
from storage.errors import InputError, RecordRejected
from storage.inputs.json_values import parse_record
from storage.schema.confidence import newest_levels
from storage.store.duckdb_store import DuckDBStore
from transforms.config.scoring import FACTORS

__all__ = [
    "SELECTION_COLUMNS",
    "JudgeSelection",
    "judge_items_from_table",
    "judge_items_from_traces",
    "selected_items",
]


def judge_items_from_traces(
    store: DuckDBStore, user_query: str, submission: str, trace_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """(item_id, user_query, submission) of stored traces, from the configured columns."""
    _check_columns(store, user_query, submission)
    query = (
        f'SELECT trace_id AS item_id, CAST("{user_query}" AS VARCHAR) AS user_query, '
        f'CAST("{submission}" AS VARCHAR) AS submission FROM traces'
    )
    if trace_ids is None:
        return store.sql(query + " ORDER BY trace_id")
    wanted = pl.DataFrame({"trace_id": list(trace_ids)}, schema={"trace_id": pl.String})
    with store.transaction() as con:
        con.register("__judge_traces", wanted)
        try:
            return con.sql(
                query + " SEMI JOIN __judge_traces USING (trace_id) ORDER BY trace_id"
            ).pl()
        finally:
            con.unregister("__judge_traces")


def _check_columns(store: DuckDBStore, *names: str) -> None:
    columns = store.columns("traces")
    for name in names:
        if name not in columns:
            raise InputError(
                f"the traces table has no column {name!r} to judge; use one of "
                f"{', '.join(columns)} in [inputs] of the judge configuration"
            )


@dataclass(frozen=True)
class JudgeSelection:
    """Which stored traces a run judges: those `where` selects, and a seeded random share
    (`sample`) of the rest (`judge --select`, `--sample`, `--seed`)."""

    where: str | None = None
    """A SQL predicate over the traces with their newest scores and level (SELECTION_COLUMNS)."""
    sample: float | None = None
    """The share (0 to 1) of the traces `where` leaves out that is judged too: all of them
    without `where`."""
    seed: int = 0
    """Which share: a trace is in it when md5(seed:trace_id) falls below `sample`, so the same
    seed picks the same traces every run, and a new trace is picked at the same rate."""

    def describe(self, counts: tuple[int, int, int]) -> str:
        """The selection and what it picked, in one line."""
        total, selected, sampled = counts
        parts = [f"{total:,} stored traces"]
        if self.where is not None:
            parts.append(f"{selected:,} selected by `{self.where}`")
        if self.sample is not None:
            rest = "the rest" if self.where is not None else "them"
            parts.append(f"{sampled:,} sampled ({self.sample:.1%} of {rest}, seed {self.seed})")
        return "; ".join(parts) + f": {selected + sampled:,} to judge"


SELECTION_COLUMNS = {
    "score": "s.score",
    **{factor: f"s.{factor}" for factor in FACTORS},
    "n_steps": "s.n_steps",
    "error_recovery": "s.error_recovery",
    "unique_tools": "s.unique_tools",
    "level": "l.level",
    "level_reason": "l.reason",
    "level_confidence": "l.aggregate",
}
"""What a `--select` predicate may use besides the traces table's own columns: the trace's
newest value score and its parts (`latest_scores`) and its newest intervention level."""

_SHARE = "(('0x' || left(md5({seed} || ':' || trace_id), 13))::BIGINT / 4503599627370496.0)"
"""A trace's place in [0, 1) for a seed: 52 bits of md5, the same on every machine and version."""


def _candidates(store: DuckDBStore) -> str:
    """The traces with the columns of SELECTION_COLUMNS (null where a table is missing)."""
    joined = {
        "s": store.has_table("latest_scores"),
        "l": store.has_table("confidence_traces"),
    }
    extra = [
        f"{source if joined[source[0]] else 'NULL'} AS {name}"
        for name, source in SELECTION_COLUMNS.items()
    ]
    joins = " LEFT JOIN latest_scores s USING (trace_id)" if joined["s"] else ""
    if joined["l"]:
        newest = newest_levels("confidence_traces", one_source=one_level_source(store))
        joins += f" LEFT JOIN {newest} l USING (trace_id)"
    return f"SELECT t.*, {', '.join(extra)} FROM traces t{joins}"


def selected_items(
    store: DuckDBStore, user_query: str, submission: str, selection: JudgeSelection
) -> tuple[pl.DataFrame, tuple[int, int, int]]:
    """(item_id, user_query, submission) of the stored traces `selection` picks, and how many
    traces there are, how many `where` selected and how many the sample added.

    Raises:
        InputError: the predicate does not run over the traces and SELECTION_COLUMNS.
    """
    _check_columns(store, user_query, submission)
    chosen = "false" if selection.where is None else f"coalesce(({selection.where}), false)"
    if selection.where is None and selection.sample is None:
        chosen = "true"
    share = _SHARE.format(seed=int(selection.seed))
    sampled = "false" if selection.sample is None else f"{share} < {float(selection.sample)!r}"
    query = (
        f'SELECT trace_id AS item_id, CAST("{user_query}" AS VARCHAR) AS user_query, '
        f'CAST("{submission}" AS VARCHAR) AS submission, {chosen} AS selected, '
        f"NOT ({chosen}) AND {sampled} AS sampled FROM ({_candidates(store)})"
    )
    try:
        rows = store.sql(query + " ORDER BY trace_id")
    except duckdb.Error as exc:
        raise InputError(
            f"the selection {selection.where!r} does not run over the stored traces "
            f"({str(exc).splitlines()[0]}); it may use the traces table's columns and "
            f"{', '.join(SELECTION_COLUMNS)}, e.g. \"level IN ('CONFIRM', 'ESCALATE')\""
        ) from None
    counts = (rows.height, int(rows["selected"].sum()), int(rows["sampled"].sum()))
    picked = rows.filter(pl.col("selected") | pl.col("sampled"))
    return picked.select("item_id", "user_query", "submission"), counts


def _jsonl_table(source: Path) -> pl.DataFrame:
    """A JSONL table read a line at a time, so a bad line is named (the table is one input:
    a line that cannot be read stops the run before any call)."""
    rows: list[dict[str, object]] = []
    text = source.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = parse_record(line, f"line {number}")
        except RecordRejected as problem:
            raise InputError(f"judge table {source}: {problem.reason}") from None
        if not isinstance(value, dict):
            raise InputError(f"judge table {source}: line {number} is not a JSON object")
        rows.append({key: value.get(key) for key in ("id", "user_query", "submission")})
    return pl.DataFrame(rows, schema=dict.fromkeys(("id", "user_query", "submission"), pl.String))


def _read_table(source: Path, suffix: str) -> pl.DataFrame:
    try:
        if suffix == ".csv":
            return pl.read_csv(source.read_bytes().removeprefix(b"\xef\xbb\xbf"))
        if suffix == ".parquet":
            return pl.read_parquet(source)
        return _jsonl_table(source)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"judge table {source} is not UTF-8 text ({exc}); save it as UTF-8"
        ) from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(
            f"judge table {source} cannot be read ({first}); give a CSV, JSONL or Parquet "
            "table with columns id, user_query and submission"
        ) from None


def judge_items_from_table(path: str | Path) -> pl.DataFrame:
    """(item_id, user_query, submission) from a CSV, JSONL or Parquet table with columns
    id, user_query and submission.

    Raises:
        InputError: the file is missing, of another type, lacks a column, or repeats an id.
    """
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix not in (".csv", ".parquet", ".jsonl"):
        raise InputError(
            f"judge table {source} has extension {source.suffix!r}; use .csv, .jsonl or .parquet"
        )
    if not source.exists():
        raise InputError(f"judge table {source} does not exist")
    frame = _read_table(source, suffix)
    missing = [c for c in ("id", "user_query", "submission") if c not in frame.columns]
    if missing:
        raise InputError(
            f"judge table {source} lacks column(s) {', '.join(missing)}; it needs id, "
            f"user_query and submission (found {', '.join(frame.columns)})"
        )
    items = frame.select(
        pl.col("id").cast(pl.String).alias("item_id"),
        pl.col("user_query").cast(pl.String).fill_null(""),
        pl.col("submission").cast(pl.String),
    )
    repeated = items.filter(pl.col("item_id").is_duplicated())["item_id"].unique().sort()
    if repeated.len():
        raise InputError(
            f"judge table {source} repeats id(s) {', '.join(repeated.head(5).to_list())}; "
            "give each row a distinct id"
        )
    return items
