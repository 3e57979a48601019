"""Claude Code transcripts read as chat records: the file's lines are a session's events, and
each session (and each subagent of it) is one trajectory (`transforms.claude_code`), where a
chat file's line is one trajectory. A line that does not parse is a record of its own with its
reason (the mapping reports it); the others still make their session's trajectory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from storage.errors import InputError
from storage.inputs.chat_files import iter_chat_records
from transforms.chat import ChatRecord
from transforms.claude_code import claude_code_records, is_claude_code_event

__all__ = ["CLAUDE_CODE_EXTENSIONS", "iter_claude_code_records"]

CLAUDE_CODE_EXTENSIONS = (".jsonl", ".ndjson")
"""Claude Code writes its transcripts as JSON lines, `<session id>.jsonl`."""


def iter_claude_code_records(path: str | Path) -> Iterator[ChatRecord]:
    """The trajectories of a Claude Code transcript, each numbered by the line of its first
    event, then a record for each line that did not parse.

    Raises:
        InputError: the file cannot be read as JSON lines, or its first event is not a
            Claude Code transcript's.
    """
    source = Path(path)
    if source.suffix.lower() not in CLAUDE_CODE_EXTENSIONS:
        raise InputError(
            f"{source} has extension {source.suffix!r}; Claude Code transcripts are "
            f"{', '.join(CLAUDE_CODE_EXTENSIONS)} files (one event a line)"
        )
    events: list[object] = []
    lines: dict[int, int] = {}
    malformed: list[ChatRecord] = []
    for record in iter_chat_records(source):
        if record.malformed is not None:
            malformed.append(record)
            continue
        if not events and not is_claude_code_event(record.value):
            raise InputError(
                f"{source} line {record.number} is not a Claude Code transcript's event "
                "(a type and a sessionId, uuid and message of a session); give the "
                "transcript as Claude Code wrote it"
            )
        lines[id(record.value)] = record.number
        events.append(record.value)
    for position, (first, trajectory) in enumerate(claude_code_records(events)):
        yield ChatRecord(lines[id(first)], position, trajectory)
    yield from malformed
