"""The files of a judge run fanned out in shards: each shard's input (JSON) and the rows it
judged (JSON Lines, one line per row, flushed at every write), and their ingestion into DuckDB
by the one process that writes it.

Layout: `.DB.work/judge-shards/RUN_ID/shard-NNN.json` (input), `shard-NNN.jsonl` (rows),
`STOP` (written by a shard that stopped the run). A crashed run leaves its folder behind; the
next judge run ingests it before planning, so every judged row is kept and none is paid twice.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from storage.judge.store import insert_judged_rows
from storage.store.duckdb_store import DuckDBStore

__all__ = [
    "JsonlJudgeSink",
    "ingest_leftover_shards",
    "ingest_shard_rows",
    "read_shard_rows",
    "shard_root",
]


def shard_root(store: DuckDBStore) -> Path:
    """The folder beside the database holding judge runs' shard files (hidden, like the
    scoring runs' work folders, and apart from them: their clean-up never removes it)."""
    return store.path.parent / f".{store.path.name}.work" / "judge-shards"


class JsonlJudgeSink:
    """A JudgeSink appending every finished row to a JSON Lines file (a shard's output).

    Plans are made before a shard runs, so `reusable` finds nothing; `stored_score_keys` answers
    from the keys the planner passed in.
    """

    def __init__(self, path: str | Path, stored_keys: dict[str, str]) -> None:
        self.path = Path(path)
        self._stored = stored_keys
        self._file: IO[str] = self.path.open("a", encoding="utf-8")

    def __enter__(self) -> JsonlJudgeSink:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._file.close()

    def reusable(self, keys: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Nothing: the flow's process planned the shard."""
        return {}

    def stored_score_keys(self, item_ids: list[str]) -> dict[str, str]:
        """The score keys the planner found for these items."""
        return {item: self._stored[item] for item in item_ids if item in self._stored}

    def _append(self, table: str, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        now = datetime.now(UTC).isoformat()
        self._file.write(
            "".join(
                json.dumps({"table": table, "row": {**row, "judged_at": now}}) + "\n"
                for row in rows
            )
        )
        self._file.flush()

    def write_results(self, rows: list[dict[str, Any]]) -> None:
        """Append finished judgements."""
        self._append("results", rows)

    def write_scores(self, rows: list[dict[str, Any]]) -> None:
        """Append overall scores."""
        self._append("scores", rows)


def read_shard_rows(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The (results, scores) rows of a shard file.

    A last line cut short (the shard died while writing it) is ignored: its row was never
    stored, so the next run judges it again.

    Raises:
        ValueError: a line other than the last is not a row (the file is not a shard file).
    """
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    results: list[dict[str, Any]] = []
    scores: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            row = entry["row"]
            table = {"results": results, "scores": scores}[entry["table"]]
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines):  # no newline after it: cut short
                continue
            raise ValueError(
                f"{path}:{number} is not a judge shard row ({type(exc).__name__}: {exc}); "
                "move the file away if it is not a tracegrade shard file"
            ) from None
        row["judged_at"] = datetime.fromisoformat(row["judged_at"])
        table.append(row)
    return results, scores


def ingest_shard_rows(store: DuckDBStore, path: str | Path) -> tuple[int, int]:
    """Store a shard file's rows (idempotent: rows already stored are skipped); returns the
    (results, scores) inserted. A missing file inserts nothing."""
    if not Path(path).exists():
        return 0, 0
    results, scores = read_shard_rows(path)
    return insert_judged_rows(store, results, scores)


def ingest_leftover_shards(store: DuckDBStore) -> tuple[int, int]:
    """Store the rows of every shard file a crashed run left, then remove its folder; returns
    the (results, scores) inserted."""
    root = shard_root(store)
    if not root.is_dir():
        return 0, 0
    inserted = [0, 0]
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("shard-*.jsonl")):
            results, scores = ingest_shard_rows(store, path)
            inserted[0] += results
            inserted[1] += scores
        shutil.rmtree(folder, ignore_errors=True)
    return inserted[0], inserted[1]
