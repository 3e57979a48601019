"""AutoGen runs read as chat records (`transforms.autogen` turns one into one): the JSON document
AgentChat or Core saved a run as, parsed whole (a bare list of messages is one run, not a list
of records)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from storage.inputs.chat_files import document_records
from transforms.autogen import autogen_record, is_autogen
from transforms.chat import ChatRecord

__all__ = ["iter_autogen_records"]


def iter_autogen_records(path: str | Path) -> Iterator[ChatRecord]:
    """The run a file holds as one chat record.

    Raises:
        InputError: the file is not readable JSON or not a saved AutoGen run.
    """
    return document_records(
        path,
        "give the run as AutoGen saved it",
        is_autogen,
        lambda document: [autogen_record(document)],
        (
            "is not an AutoGen run (AgentChat's messages with source and type, a TaskResult, a "
            "TeamState with its message_thread, or Core's model messages)",
            "is an AutoGen run with no message",
        ),
        "the run",
    )
