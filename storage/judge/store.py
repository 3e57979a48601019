"""Judge results in DuckDB: one row per (submission, metric) judgement, overall scores, batches.

Rows are inserted as judgements finish (each flush is one transaction), so a crash loses at
most the calls in flight. A judgement is found again by its cache key, a hash of everything
that determines it (docs/judge.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl

from storage.store.duckdb_store import DuckDBStore
from storage.store.locations import locate
from transforms.judge.plan import SubmittedBatch

__all__ = [
    "DuckDBJudgeSink",
    "insert_judged_rows",
    "close_batch",
    "open_batch_count",
    "open_batches",
    "stored_score_keys",
]

_REUSABLE = "('ok', 'invalid_input')"
"""The statuses a re-run keeps, as SQL: a success, and an input that no call can fix. Others
are retried."""


_RESULT_COLUMNS = [
    "run_id",
    "run_seq",
    "item_id",
    "source",
    "metric",
    "cache_key",
    "status",
    "score",
    "comment",
    "error",
    "model",
    "prompt_version",
    "parameters",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "attempts",
    "cost_usd",
    "mode",
    "config_hash",
    "judged_at",
    "shared_from",
]
_SCORE_COLUMNS = [
    "run_id",
    "run_seq",
    "item_id",
    "source",
    "score_key",
    "status",
    "overall_score",
    "failed_metrics",
    "error",
    "config_hash",
    "judged_at",
]


def reusable_results(store: DuckDBStore, keys: Sequence[str]) -> pl.DataFrame:
    """The latest stored ok or invalid_input result of each (cache key, item) among `keys`."""
    wanted = pl.DataFrame({"cache_key": list(dict.fromkeys(keys))}, schema={"cache_key": pl.String})
    with store.transaction() as con:
        con.register("__judge_keys", wanted)
        try:
            return con.sql(
                "SELECT * EXCLUDE (row_rank) FROM (SELECT r.*, row_number() OVER ("
                "PARTITION BY r.cache_key, r.item_id ORDER BY r.run_seq DESC, r.judged_at DESC) AS row_rank "
                "FROM judge_results r SEMI JOIN __judge_keys USING (cache_key) "
                f"WHERE r.status IN {_REUSABLE}) WHERE row_rank = 1"
            ).pl()
        finally:
            con.unregister("__judge_keys")


def _insert(
    con: duckdb.DuckDBPyConnection, table: str, columns: list[str], rows: list[dict[str, Any]]
) -> None:
    if not rows:
        return
    placeholders = ", ".join("?" for _ in columns)
    names = ", ".join(columns)
    values = [[row.get(name) for name in columns] for row in rows]
    con.executemany(f"INSERT INTO {table} ({names}) VALUES ({placeholders})", values)


def _result_values(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    return [
        {**row, "parameters": json.dumps(row["parameters"], sort_keys=True), "judged_at": now}
        for row in rows
    ]


def write_judge_results(store: DuckDBStore, rows: list[dict[str, Any]]) -> None:
    """Insert finished judgements in one transaction (`parameters` given as a dict)."""
    if rows:
        with store.transaction() as con:
            _insert(con, "judge_results", _RESULT_COLUMNS, _result_values(rows))


def write_judge_scores(store: DuckDBStore, rows: list[dict[str, Any]]) -> None:
    """Insert overall scores of finished submissions in one transaction."""
    now = datetime.now(UTC)
    if rows:
        with store.transaction() as con:
            _insert(
                con, "judge_scores", _SCORE_COLUMNS, [{**row, "judged_at": now} for row in rows]
            )


def insert_judged_rows(
    store: DuckDBStore, results: list[dict[str, Any]], scores: list[dict[str, Any]]
) -> tuple[int, int]:
    """Insert rows judged elsewhere (a shard's file, `judged_at` given), in one transaction.

    Idempotent: a result already stored for its (run_id, item_id, metric), or a score for its
    (run_id, item_id), is skipped, so a file read twice (a crash between storing its rows and
    deleting it) adds nothing. Returns the (results, scores) inserted.
    """
    runs = sorted({row["run_id"] for row in results} | {row["run_id"] for row in scores})
    if not runs:
        return 0, 0
    marks = ", ".join("?" for _ in runs)
    with store.transaction() as con:
        have = set(
            con.execute(
                f"SELECT run_id, item_id, metric FROM judge_results WHERE run_id IN ({marks})", runs
            ).fetchall()
        )
        new_results = {}
        for row in results:
            key = (row["run_id"], row["item_id"], row["metric"])
            if key not in have:
                new_results[key] = {
                    **row,
                    "parameters": json.dumps(row["parameters"], sort_keys=True),
                }
        have_scores = set(
            con.execute(
                f"SELECT run_id, item_id FROM judge_scores WHERE run_id IN ({marks})", runs
            ).fetchall()
        )
        new_scores = {
            (row["run_id"], row["item_id"]): row
            for row in scores
            if (row["run_id"], row["item_id"]) not in have_scores
        }
        _insert(con, "judge_results", _RESULT_COLUMNS, list(new_results.values()))
        _insert(con, "judge_scores", _SCORE_COLUMNS, list(new_scores.values()))
    return len(new_results), len(new_scores)


def stored_score_keys(store: DuckDBStore, item_ids: Sequence[str]) -> dict[str, str]:
    """The score key of the latest overall row of each item that has one."""
    wanted = pl.DataFrame({"item_id": list(item_ids)}, schema={"item_id": pl.String})
    with store.transaction() as con:
        con.register("__judge_items", wanted)
        try:
            rows = con.execute(
                "SELECT item_id, score_key FROM latest_judge_scores "
                "SEMI JOIN __judge_items USING (item_id)"
            ).fetchall()
        finally:
            con.unregister("__judge_items")
    return {item: key for item, key in rows}


def open_batches(store: DuckDBStore) -> list[dict[str, Any]]:
    """Batches submitted and not collected yet, oldest first."""
    rows = store.sql(
        "SELECT batch_id, model, handle, requests FROM judge_batches "
        "WHERE status = 'submitted' ORDER BY submitted_at"
    )
    return [
        {
            "batch_id": row["batch_id"],
            "model": row["model"],
            "handle": json.loads(row["handle"]),
            "requests": json.loads(row["requests"]),
        }
        for row in rows.iter_rows(named=True)
    ]


def open_batch_count(db: str) -> int:
    """How many provider batches of the database `db` wait to be collected: 0 when it does
    not exist yet or never submitted one. Reads it read-only and writes nothing."""
    if not locate(db).exists():
        return 0
    with DuckDBStore(db, read_only=True) as store:
        if not store.has_table("judge_batches"):
            return 0
        counted = store.sql("SELECT count(*) AS n FROM judge_batches WHERE status = 'submitted'")
        return int(counted["n"][0])


def close_batch(
    store: DuckDBStore, batch_id: str, rows: list[dict[str, Any]], status: str = "collected"
) -> None:
    """Store a batch's results and mark it `collected` in one transaction: a crash leaves it
    either open with none of its rows, or closed with all of them."""
    with store.transaction() as con:
        _insert(con, "judge_results", _RESULT_COLUMNS, _result_values(rows))
        con.execute(
            "UPDATE judge_batches SET status = ?, collected_at = ? WHERE batch_id = ?",
            [status, datetime.now(UTC), batch_id],
        )


class DuckDBJudgeSink:
    """The judge's view of a DuckDB store (satisfies transforms.judge.plan.JudgeSink)."""

    def __init__(self, store: DuckDBStore) -> None:
        self.store = store
        self._exists = store.has_table("judge_results")

    def reusable(self, keys: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Stored ok / invalid_input results by cache key (the latest of each item)."""
        found: dict[str, list[dict[str, Any]]] = {}
        if not self._exists:
            return found
        for row in reusable_results(self.store, keys).iter_rows(named=True):
            found.setdefault(row["cache_key"], []).append(row)
        return found

    def stored_score_keys(self, item_ids: list[str]) -> dict[str, str]:
        """Score key of each item's latest overall row."""
        return stored_score_keys(self.store, item_ids) if self._exists else {}

    def write_results(self, rows: list[dict[str, Any]]) -> None:
        """Insert finished judgements."""
        write_judge_results(self.store, rows)

    def write_scores(self, rows: list[dict[str, Any]]) -> None:
        """Insert overall scores."""
        write_judge_scores(self.store, rows)

    def open_batches(self) -> list[dict[str, Any]]:
        """Batches submitted and not collected, oldest first."""
        return open_batches(self.store) if self._exists else []

    def put_batch(self, batch: SubmittedBatch) -> None:
        """Record a submitted batch and what its requests are, before anything else happens."""
        with self.store.transaction() as con:
            con.execute(
                "INSERT INTO judge_batches (batch_id, run_id, model, handle, requests, status, "
                "submitted_at) VALUES (?, ?, ?, ?, ?, 'submitted', ?)",
                [
                    batch.batch_id,
                    batch.run_id,
                    batch.model,
                    json.dumps(batch.handle),
                    json.dumps(batch.requests),
                    datetime.now(UTC),
                ],
            )

    def close_batch(self, batch_id: str, rows: list[dict[str, Any]]) -> None:
        """Store a batch's results and close it, together."""
        close_batch(self.store, batch_id, rows)
