"""The `import_chat` flow: chat-message trajectories in, nested trace Parquet and a report out.

stream records -> map each to a trace or a rejection -> append to Parquet -> drop the rows a
later duplicate replaced -> write the report;
`import_and_score_chat` then runs `score_traces` on the Parquet.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.runs import Steps, publish_markdown
from storage.config_files import load_chat_config
from storage.inputs.chat_files import (
    iter_chat_records,
    report_path_for,
    trace_parquet_writer,
    write_import_report,
)
from transforms.chat import IMPORT_RULES, ChatRejection, DuplicateTracker, map_trajectory
from transforms.summary import RunSummary

__all__ = ["import_and_score_chat", "import_chat"]


@dataclass(frozen=True)
class ImportSummary:
    """What one import did: counts per outcome and where the files went."""

    source_file: str
    out: str
    report: str
    records: int
    imported: int
    succeeded: int
    rejected: dict[str, int] = field(default_factory=dict)
    unknown: int = 0
    """Traces whose record holds no success value (success null: outcome unknown)."""

    @property
    def rejected_total(self) -> int:
        """Trajectories rejected, all rules together."""
        return sum(self.rejected.values())

    @property
    def markdown(self) -> str:
        """The summary as a Markdown table, rejections by rule in rule order."""
        lines = [
            f"# Chat import of {self.source_file}",
            "",
            "| count | value |",
            "|---|---|",
            f"| trajectories read | {self.records:,} |",
            f"| imported as traces | {self.imported:,} |",
            f"| imported, success | {self.succeeded:,} |",
            f"| imported, failure | {self.imported - self.succeeded - self.unknown:,} |",
            f"| imported, outcome unknown (success null) | {self.unknown:,} |",
            f"| rejected | {self.rejected_total:,} |",
        ]
        lines += [f"| rejected: {rule} | {count:,} |" for rule, count in self.rejected.items()]
        lines += [
            "",
            f"Traces: {self.out}",
            f"Rejections (one row each, with the reason): {self.report}",
        ]
        return "\n".join(lines) + "\n"


def _import(
    path: str, out: str, report: str | None, config: str | None, options: dict[str, Any] | None
) -> ImportSummary:
    settings = load_chat_config(config, options)
    records = iter_chat_records(path)
    source = str(Path(path).expanduser().resolve())
    report_path = Path(report) if report is not None else report_path_for(out)
    tracker = DuplicateTracker(settings)
    rejections: list[ChatRejection] = []
    successes: list[bool | None] = []
    read = 0
    with trace_parquet_writer(out) as writer:
        for record in records:
            read += 1
            result = map_trajectory(record, settings)
            if isinstance(result, ChatRejection):
                rejections.append(result)
                continue
            duplicate = tracker.add(result, record, writer.rows)
            if duplicate is not None:
                writer.drop(duplicate[0])
                rejections.append(duplicate[1])
            writer.add(result)
            successes.append(result["metadata"]["success"])
        dropped = writer.dropped
    rejections.sort(key=lambda rejection: rejection.record_number)
    write_import_report(rejections, source, report_path)
    counts = Counter(rejection.rule for rejection in rejections)
    return ImportSummary(
        source_file=source,
        out=str(out),
        report=str(report_path),
        records=read,
        imported=len(successes) - len(dropped),
        succeeded=sum(ok is True for row, ok in enumerate(successes) if row not in dropped),
        unknown=sum(ok is None for row, ok in enumerate(successes) if row not in dropped),
        rejected={rule: counts[rule] for rule in IMPORT_RULES if counts[rule]},
    )


def import_chat(
    path: str,
    out: str,
    report: str | None = None,
    config: str | None = None,
    options: dict[str, Any] | None = None,
) -> ImportSummary:
    """Import one chat trajectory file (JSON array or JSONL) into trace Parquet and a report.

    Args:
        path: the trajectory file.
        out: the Parquet file to write (replaced atomically).
        report: the CSV of rejected trajectories; default beside `out` (`report_path_for`).
        config: a TOML file of `ChatImportConfig` keys.
        options: keys of `ChatImportConfig` that override the file's.
    """
    summary = Steps().step("import", _import, path, out, report, config, options)
    publish_markdown(summary.markdown, "import-chat-summary", "tracegrade chat import")
    return summary


def import_and_score_chat(
    path: str,
    out: str,
    db: str,
    report: str | None = None,
    config: str | None = None,
    options: dict[str, Any] | None = None,
    score_config: str | None = None,
    no_embedder: bool = False,
) -> tuple[ImportSummary, RunSummary]:
    """Import a chat trajectory file, then score the traces written into the DuckDB file `db`."""
    from pipelines.score import score_traces

    imported = import_chat(path, out, report, config, options)
    scored = score_traces([out], db=db, config=score_config, no_embedder=no_embedder)
    return imported, scored
