"""Google ADK's files read as chat records (`transforms.adk` turns them into them): a session,
one record, and an eval result, a record an eval case, each a JSON document parsed whole. ADK
1.x wrote an eval result's JSON as one JSON string, which is read through. An eval case whose
messages nest too deep or hold a lone surrogate is a malformed record with its reason, never
skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storage.inputs.chat_files import checked_record, held_records, json_document
from transforms.adk import adk_eval_cases, adk_session_record, is_adk_eval_result, is_adk_session
from transforms.chat import ChatRecord

__all__ = ["adk_document", "iter_adk_records"]


def adk_document(value: Any) -> Any:
    """The document a file holds, with an eval result that ADK wrote as one JSON string read
    through; anything else as it is."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            inner = json.loads(value)
        except ValueError:
            return value
        if is_adk_eval_result(inner):
            return inner
    return value


def iter_adk_records(path: str | Path) -> Iterator[ChatRecord]:
    """A session as one chat record, or each eval case of an eval result, in its order.

    Raises:
        InputError: the file is not readable JSON, neither an ADK session nor an eval
            result, or an eval result with no case.
    """
    source = Path(path)
    document, escapes = json_document(source, "give the session or eval result ADK saved")
    document = adk_document(document)
    if is_adk_session(document):
        yield checked_record(1, 0, adk_session_record(document), escapes, "the session")
        return
    problems = (
        "is not a Google ADK session (id, app_name, user_id, events) or eval result "
        "(eval_set_result_id, eval_case_results)",
        "is an ADK eval result with no eval case; nothing to score",
    )
    yield from held_records(
        source, document, escapes, is_adk_eval_result, adk_eval_cases, problems, "eval case"
    )
