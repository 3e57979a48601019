"""pydantic-ai message history files read as chat records (`transforms.pydantic_ai_messages`
turns each history into one): a `.json` file holding one history, as an agent run's
`all_messages_json()` writes it, or an array of histories; a JSON lines file of one history a
line. A history whose messages nest too deep or hold a lone surrogate (the checks every chat
record gets) is a malformed record with its reason, never skipped; so is a line that holds
no history."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from storage.errors import InputError
from storage.inputs.chat_files import checked_record, iter_chat_records, json_document
from transforms.chat import ChatRecord
from transforms.pydantic_ai_messages import is_pydantic_ai_history, pydantic_ai_record

__all__ = ["iter_pydantic_ai_records"]


def iter_pydantic_ai_records(path: str | Path) -> Iterator[ChatRecord]:
    """Each history of the file as a chat record, in the file's order.

    Raises:
        InputError: a `.json` file that is not readable JSON, or holds neither a history nor
            an array of them.
    """
    source = Path(path)
    if source.suffix.lower() != ".json":
        for record in iter_chat_records(source):
            if record.malformed is not None:
                yield record
            elif not is_pydantic_ai_history(record.value):
                yield replace(
                    record, value=None, malformed="the line holds no pydantic-ai message history"
                )
            else:
                yield replace(record, value=pydantic_ai_record(record.value))
        return
    document, escapes = json_document(source, "give the file all_messages_json() wrote")
    histories = [document] if is_pydantic_ai_history(document) else document
    if not isinstance(histories, list) or not all(map(is_pydantic_ai_history, histories)):
        raise InputError(
            f"{source} holds neither a pydantic-ai message history (a list of messages of kind "
            "request or response, as all_messages_json() writes them) nor an array of them"
        )
    for index, history in enumerate(histories):
        yield checked_record(
            index + 1, index, pydantic_ai_record(history), escapes, f"history {index + 1}"
        )
