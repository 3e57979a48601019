"""The protobuf messages of an OTLP file, one at a time.

The Collector's file exporter (`format: proto`) writes each `ExportTraceServiceRequest` after
its size as 4 big-endian bytes; a file whose first byte is a field tag (0x0a, field 1 of the
request) holds one bare message instead. Messages are read one after another, so a file of
many messages is never held whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

__all__ = ["protobuf_messages"]

_SIZE_BYTES = 4


def _cut_short(number: int, wanted: int, found: int, what: str) -> str:
    return f"message {number} is cut short: {what} {wanted} bytes, {found} left in the file"


def protobuf_messages(path: Path) -> Iterator[tuple[int, bytes | str]]:
    """Each message of the file as (number, bytes), or (number, reason) for one cut short,
    which ends the file.

    Raises:
        OSError: the file cannot be opened or read.
    """
    with path.open("rb") as handle:
        head = handle.read(1)
        if head == b"\x0a":
            yield 1, head + handle.read()
            return
        pending, number = head, 0
        while True:
            prefix = pending + handle.read(_SIZE_BYTES - len(pending))
            pending = b""
            if not prefix:
                return
            number += 1
            if len(prefix) < _SIZE_BYTES:
                yield number, _cut_short(number, _SIZE_BYTES, len(prefix), "a size needs")
                return
            size = int.from_bytes(prefix, "big")
            body = handle.read(size)
            if len(body) < size:
                yield number, _cut_short(number, size, len(body), "its size announces")
                return
            yield number, body
