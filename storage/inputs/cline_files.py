"""Cline task histories read as chat records (`transforms.cline` turns one into one): Cline,
Roo Code and Kilo Code keep a task in `tasks/<task id>/api_conversation_history.json`, so the
folder of a file of that name is the task's id. Beside it lie `ui_messages.json` (what the
extension showed) and `task_metadata.json`, which are not read: a folder walk leaves them to
the history (`storage.inputs.input_paths`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from storage.errors import InputError
from storage.inputs.chat_files import checked_record, json_document
from transforms.chat import ChatRecord
from transforms.cline import cline_record, is_cline_history

__all__ = ["iter_cline_records"]

_HISTORY_FILE = "api_conversation_history.json"


def iter_cline_records(path: str | Path) -> Iterator[ChatRecord]:
    """The task history as one chat record, its folder's name its id where the file has
    Cline's name.

    Raises:
        InputError: the file is not readable JSON or not a Cline task history.
    """
    source = Path(path)
    document, escapes = json_document(source, f"give a task's {_HISTORY_FILE}")
    if not is_cline_history(document):
        raise InputError(
            f"{source} is not a Cline task history (a JSON array of messages, the first "
            "holding <task> and <environment_details>)"
        )
    folder = source.absolute().parent.name
    task_id = folder if source.name == _HISTORY_FILE and folder else None
    yield checked_record(1, 0, cline_record(document, task_id), escapes, "the history")
