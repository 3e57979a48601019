"""A scores file for Langfuse: the verdicts on traces scored from Langfuse exports, as bodies
of Langfuse's score API, one JSON object a line (`tracegrade export langfuse-scores`;
docs/phoenix.md, "Langfuse users: the same through files")."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from storage.errors import InputError
from storage.inputs.input_paths import input_files
from storage.inputs.packed import PackError, plain_files
from storage.phoenix.store import annotation_rows, step_rows_of
from storage.spans.langfuse_ids import langfuse_ids
from storage.spans.span_targets import file_targets
from storage.store.duckdb_store import DuckDBStore
from transforms.langfuse_scores import score_bodies
from transforms.phoenix import annotations_of, step_annotations

__all__ = ["langfuse_scores"]


@dataclass(frozen=True)
class ScoresFile:
    """What was written: scores, the traces they are on, and annotations left out."""

    path: Path
    scores: int
    traces: int
    left_out: int

    @property
    def text(self) -> str:
        return (
            f"wrote {self.scores} Langfuse scores on {self.traces} traces to {self.path}; "
            f"left out {self.left_out} (a failed judgement, or an id the exports do not hold)"
        )


def langfuse_scores(exports: list[str], db: str, out: str) -> ScoresFile:
    """Write the stored verdicts on the traces of the Langfuse export files `exports` (as
    `tracegrade score` read them) to `out`, a JSON lines file of score bodies."""
    try:
        with plain_files(input_files(exports)) as paths:  # the blob export's .jsonl.gz too
            roots, steps = file_targets(paths)
            ids = langfuse_ids(paths)
    except PackError as exc:
        raise InputError(str(exc)) from None
    with DuckDBStore(db, read_only=True) as store:
        rows = annotation_rows(store, roots)
        step_rows = step_rows_of(store, steps)
    annotations = annotations_of(rows.iter_rows(named=True))
    annotations += step_annotations(step_rows.iter_rows(named=True))
    trace_of = dict(zip(roots["span_hex"], roots["trace_hex"], strict=True))
    trace_of.update(zip(steps["span_hex"], steps["trace_hex"], strict=True))
    bodies, left_out = score_bodies(annotations, trace_of, ids)
    target = Path(out)
    partial = target.with_name(target.name + ".partial")
    partial.write_text("".join(json.dumps(body) + "\n" for body in bodies))
    os.replace(partial, target)
    traces = len({body["traceId"] for body in bodies})
    return ScoresFile(target, len(bodies), traces, left_out)
