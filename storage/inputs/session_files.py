"""Agent session logs read as chat records: a file's lines are the events of a session (a
Claude Code transcript, a Codex rollout), and each session (and each subagent of one) is one
trajectory (`transforms.claude_code`, `transforms.codex`), where a chat file's line is one
trajectory. A line that does not parse is a record of its own with its reason (the mapping
reports it); the others still make their session's trajectory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.errors import InputError
from storage.inputs.chat_files import iter_chat_records
from transforms.chat import ChatRecord

__all__ = ["SESSION_EXTENSIONS", "SessionLog"]

SESSION_EXTENSIONS = (".jsonl", ".ndjson")
"""Agents write their session logs as JSON lines (`<session id>.jsonl`, `rollout-....jsonl`)."""


@dataclass(frozen=True)
class SessionLog:
    """One producer's session logs: `what` they are called, whether a line `is_event` of
    them (the first that parses must be), how a file's events make its `sessions` (each
    chat record with the first event it holds), and the `extensions` its files have (a
    `.json` file holds one document: one event)."""

    what: str
    is_event: Callable[[Any], bool]
    sessions: Callable[[list[Any]], list[tuple[Any, dict[str, Any]]]]
    extensions: tuple[str, ...] = SESSION_EXTENSIONS

    def records(self, path: str | Path) -> Iterator[ChatRecord]:
        """The file's trajectories, each numbered by the line of its first event, then a
        record for each line that did not parse.

        Raises:
            InputError: the file cannot be read as JSON lines, or its first event is not
                one of these logs'.
        """
        source = Path(path)
        if source.suffix.lower() not in self.extensions:
            raise InputError(
                f"{source} has extension {source.suffix!r}; {self.what} are "
                f"{', '.join(self.extensions)} files"
            )
        events: list[Any] = []
        lines: dict[int, int] = {}
        malformed: list[ChatRecord] = []
        for record in iter_chat_records(source):
            if record.malformed is not None:
                malformed.append(record)
                continue
            if not events and not self.is_event(record.value):
                raise InputError(
                    f"{source} line {record.number} is not an event of {self.what}; give "
                    "the file as its producer wrote it"
                )
            lines[id(record.value)] = record.number
            events.append(record.value)
        for position, (first, trajectory) in enumerate(self.sessions(events)):
            yield ChatRecord(lines[id(first)], position, trajectory)
        yield from malformed
