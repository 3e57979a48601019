"""Inspect AI eval logs read as chat records (`transforms.inspect_ai` turns each sample into
one): the `.eval` zip Inspect writes by default (`header.json` with the eval, one
`samples/<id>_epoch_<n>.json` per sample; a log still being written has `_journal/start.json`
instead of the header) and the `.json` log (the header and `samples` in one document).
Samples are numbered in the order the log holds them; a sample that is not valid JSON, or
whose messages nest too deep or hold a lone surrogate (the checks every chat record gets), is
a malformed record with its reason, never skipped."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storage.errors import InputError
from storage.inputs.chat_files import checked_record
from storage.inputs.surrogates import SURROGATE_ESCAPE
from transforms.chat import ChatRecord
from transforms.inspect_ai import inspect_samples, is_inspect_header, is_inspect_log

__all__ = ["iter_inspect_records"]


def _refused(path: Path, why: str) -> InputError:
    return InputError(
        f"{path} is not an Inspect AI eval log ({why}); give the .eval or .json log Inspect wrote"
    )


def _record(
    header: dict[str, Any], sample: Any, index: int, escapes: bool, where: str
) -> ChatRecord:
    """A sample as a chat record, with the checks every chat record gets (nesting, lone
    surrogates) on what the trace keeps of it: the messages, not the sample's events or store."""
    (record,) = inspect_samples(header, [sample])
    return checked_record(index + 1, index, record, escapes, where)


def _zip_records(path: Path) -> Iterator[ChatRecord]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise _refused(path, f"not a readable zip: {exc}") from None
    with archive:
        names = archive.namelist()
        head = "header.json" if "header.json" in names else "_journal/start.json"
        try:
            header = json.loads(archive.read(head))
        except (KeyError, ValueError) as exc:
            raise _refused(path, f"no readable header.json: {exc}") from None
        if not is_inspect_header(header):
            raise _refused(path, f"{head} has no eval with task and model")
        samples = [name for name in names if name.startswith("samples/") and name.endswith(".json")]
        for index, name in enumerate(samples):
            try:
                text = archive.read(name).decode("utf-8")
                sample: Any = json.loads(text)
            except (ValueError, RecursionError) as exc:
                yield ChatRecord(index + 1, index, None, f"{name} is not readable JSON ({exc!r})")
                continue
            escapes = SURROGATE_ESCAPE.search(text) is not None
            yield _record(header, sample, index, escapes, name)


def _json_records(path: Path) -> Iterator[ChatRecord]:
    try:
        text = path.read_bytes().decode("utf-8-sig")
        document = json.loads(text)
    except (ValueError, OSError, RecursionError) as exc:
        raise _refused(path, f"not readable JSON: {exc!r}") from None
    if not is_inspect_log(document):
        raise _refused(path, "no eval with task and model, or no samples")
    escapes = SURROGATE_ESCAPE.search(text) is not None
    for index, sample in enumerate(document["samples"]):
        yield _record(document, sample, index, escapes, f"sample {index + 1}")


def iter_inspect_records(path: str | Path) -> Iterator[ChatRecord]:
    """Each sample of an Inspect AI eval log as a chat record, in the log's order.

    Raises:
        InputError: the file is not a readable eval log.
    """
    source = Path(path)
    if source.suffix.lower() == ".eval":
        return _zip_records(source)
    return _json_records(source)
