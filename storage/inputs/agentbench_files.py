"""AgentBench's outputs read as chat records (`transforms.agentbench` turns each sample into
one), named as AgentBench names them: it writes a run of one agent on one task to
`{output}/{agent}/{task}/` (`runs.jsonl`, `error.jsonl`, `overall.json`; its own analysis
walks that layout), so the two folders above a file of one of those names are its agent and
its task. A sample's trace id follows its task and index and the agent, so one output folder
holding several agents and tasks is as many traces as samples.

`runs.jsonl` is read a line at a time; a completed sample takes its verdict from the
`overall.json` beside it, where the task's grading wrote one. `overall.json` read alone gives
its graded samples; they have no times (only `runs.jsonl` holds them), so theirs are the chat
mapping's base time and order (`AgentBenchFormat`). A folder walk leaves an `overall.json`
that has a `runs.jsonl` beside it to that file (`storage.inputs.input_paths`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from storage.errors import InputError
from storage.inputs.chat_files import held_records, iter_chat_records, json_document
from storage.inputs.chat_formats import is_agentbench_graded
from storage.inputs.chat_readers import ChatFileFormat
from storage.inputs.file_peek import peek
from storage.inputs.input_paths import AGENTBENCH_FILES
from transforms.agentbench import (
    agentbench_record,
    agentbench_results,
    agentbench_verdicts,
    is_agentbench_overall,
)
from transforms.chat import ChatRecord

if TYPE_CHECKING:
    from storage.inputs.readers import FileInfo

__all__ = ["AgentBenchFormat", "iter_agentbench_records"]

_ADVICE = "give the overall.json AgentBench wrote"
_PROBLEMS = (
    "is not an AgentBench overall.json (total, validation and custom.raw_results)",
    "is an AgentBench overall.json with no graded sample; nothing to score",
)


def _named(path: Path) -> tuple[str | None, str | None]:
    """The agent and the task of a file AgentBench wrote (`{agent}/{task}/runs.jsonl`);
    none for a file of another name (a copy renamed away from the layout)."""
    if path.name not in AGENTBENCH_FILES:
        return None, None
    task, agent = path.parent.name, path.parent.parent.name
    return agent or None, task or None


def iter_agentbench_records(path: str | Path) -> Iterator[ChatRecord]:
    """Each sample of an AgentBench output file as a chat record, in the file's order.

    Raises:
        InputError: the file cannot be read; an `overall.json` (this one, or the one beside a
            `runs.jsonl`) that is not readable JSON, not AgentBench's, or holds no sample.
    """
    source = Path(path).expanduser()
    agent, task = _named(source)
    if source.suffix.lower() == ".json":
        document, escapes = json_document(source, _ADVICE)
        if is_agentbench_overall(document):
            records = held_records(
                source,
                document,
                escapes,
                is_agentbench_overall,
                agentbench_results,
                _PROBLEMS,
                "sample",
            )
            return _converted(records, agent, task, None)
    verdicts = None
    graded = source.with_name("overall.json")
    if source.name == "runs.jsonl" and graded.is_file():
        document, _ = json_document(graded, f"{_ADVICE}, or move it away from {source.name}")
        if not is_agentbench_overall(document):
            raise InputError(f"{graded} {_PROBLEMS[0]}; its verdicts grade {source}")
        verdicts = agentbench_verdicts(document)
    return _converted(iter_chat_records(source), agent, task, verdicts)


def _converted(
    records: Iterator[ChatRecord],
    agent: str | None,
    task: str | None,
    verdicts: dict[object, str] | None,
) -> Iterator[ChatRecord]:
    for record in records:
        if record.value is None:
            yield record
        else:
            yield replace(record, value=agentbench_record(record.value, agent, task, verdicts))


@dataclass(frozen=True)
class AgentBenchFormat:
    """AgentBench's outputs as a `storage.inputs.readers.FileFormat`: `runs` reads a file of
    samples (each line's time its trace's), `graded` an `overall.json`, whose samples have no
    time (the same mapping without `created_at_field`: the base time and their order)."""

    runs: ChatFileFormat

    @property
    def extensions(self) -> tuple[str, ...]:
        return self.runs.extensions

    @property
    def what(self) -> str:
        return self.runs.what

    def read_batches(
        self, path: Path, consume: Callable[[pl.DataFrame], None], batch_rows: int
    ) -> FileInfo:
        reader = self.runs
        look = None
        if path.suffix.lower() == ".json":  # as iter_agentbench_records: a .jsonl is runs
            with suppress(OSError):  # the reader says why it cannot open the file
                look = peek(path)
        if look is not None and is_agentbench_graded(look):
            untimed = self.runs.config.model_copy(update={"created_at_field": None})
            reader = replace(self.runs, config=untimed)
        return reader.read_batches(path, consume, batch_rows)
