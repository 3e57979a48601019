"""OpenHands trajectories read as chat records: a saved conversation is one JSON array of
events, and the whole array is one trajectory (`transforms.openhands`), where a chat file's
array holds one trajectory per element."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from storage._surrogates import SURROGATE_ESCAPE
from storage.chat_files import checked_record
from storage.errors import InputError
from transforms.chat import ChatRecord
from transforms.openhands import is_openhands_event, openhands_record

__all__ = ["iter_openhands_records"]


def iter_openhands_records(path: str | Path) -> Iterator[ChatRecord]:
    """The one trajectory of an OpenHands event stream file.

    Raises:
        InputError: the file is not readable JSON, or not an array of OpenHands events.
    """
    source = Path(path)
    try:
        text = source.read_bytes().decode("utf-8-sig")
        events = json.loads(text)
    except (ValueError, OSError, RecursionError) as exc:
        raise InputError(
            f"{source} is not readable JSON ({exc!r}); give the saved trajectory"
        ) from None
    if not isinstance(events, list) or not events or not is_openhands_event(events[0]):
        raise InputError(
            f"{source} is not an OpenHands trajectory (a JSON array of events with id, source "
            "and action or observation)"
        )
    # the checks every chat record gets (nesting, lone surrogates), on what the trace keeps
    escapes = SURROGATE_ESCAPE.search(text) is not None
    yield checked_record(1, 0, openhands_record(events), escapes, "the trajectory")
