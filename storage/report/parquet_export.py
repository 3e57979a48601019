"""The scores as date-partitioned Parquet, for warehouses that are not one DuckDB file.

Layout: `FOLDER/date=YYYY-MM-DD/scores.parquet`, one file per UTC date of `created_at`, each
holding that date's rows of the `latest_scores` view. After every run the partitions its
scores touched are rewritten whole (written beside, then renamed over), so a reader never
sees half a file and the folder always equals the view. A watermark in the `meta` table
records the newest run exported: a run that crashed before exporting is caught up by the
next one.
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

from storage.store.duckdb_store import DuckDBStore

__all__ = ["export_scores"]

_PARTITION_FILE = "scores.parquet"


def _watermark_key(folder: Path) -> str:
    return f"scores_parquet:{folder.resolve()}"


def export_scores(store: DuckDBStore, folder: str | Path) -> list[date]:
    """Rewrite the partitions of `folder` whose rows changed since its last export.

    Returns the dates rewritten (removed when no trace is left on that date).
    """
    target = Path(folder).expanduser()
    key = _watermark_key(target)
    found = store.sql("SELECT value FROM meta WHERE key = ?", [key])
    last = int(found["value"][0]) if found.height else -1
    newest = store.sql("SELECT coalesce(max(run_seq), -1) AS seq FROM scores")["seq"][0]
    # A changed trace may have moved to another date: its old partition is rewritten too.
    dates = store.sql(
        "SELECT DISTINCT CAST(created_at AS DATE) AS day FROM scores WHERE trace_id IN "
        "(SELECT trace_id FROM scores WHERE run_seq > ?) ORDER BY day",
        [last],
    )["day"].to_list()
    for day in dates:
        _write_partition(store, target, day)
    with store.transaction() as con:
        con.execute("DELETE FROM meta WHERE key = ?", [key])
        con.execute("INSERT INTO meta VALUES (?, ?)", [key, str(newest)])
    return dates


def _write_partition(store: DuckDBStore, folder: Path, day: date) -> None:
    partition = folder / f"date={day.isoformat()}"
    rows = store.sql(
        "SELECT * FROM latest_scores WHERE CAST(created_at AS DATE) = ? "
        "ORDER BY created_at, trace_id",
        [day],
    )
    if rows.is_empty():
        shutil.rmtree(partition, ignore_errors=True)
        return
    partition.mkdir(parents=True, exist_ok=True)
    partial = partition / f".{_PARTITION_FILE}.partial"
    rows.write_parquet(partial)
    partial.replace(partition / _PARTITION_FILE)
