"""A file of JSON lines in blocks, for `storage.spans.otel_files`: each block read into one
buffer and never copied, its lines counted (on the thread that reads the blocks) and numbered
(on the reader thread that parses it); NumPy's count and `bytes.find` let go of the GIL or
take little of it. The buffers of one reading are used again once nothing holds them
(`BlockBuffers`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

__all__ = ["BlockBuffers", "line_blocks", "line_numbers"]


class BlockBuffers:
    """The block buffers of one reading (the files of a run), each used again once no block
    job, parser or Arrow buffer holds it any more.

    A new buffer of 32 MiB costs the kernel 8,192 page faults, each zeroing its page, and
    `bytearray(size)` zeroes it again holding the GIL: 1.0 CPU-s for the bench's 1.1 GB of
    Collector files against 0.2 s with the same few buffers reused (docs/performance.md).
    The buffers in use are the blocks in flight, so the pool holds no more than those did.
    """

    def __init__(self) -> None:
        self._buffers: list[bytearray] = []

    def take(self, size: int) -> bytearray:
        """A buffer of `size` bytes (its content left over from an earlier block). A free one
        too short (a file's last block shrank it) is let go for a new one."""
        free = None
        for index in range(len(self._buffers)):
            buffer = self._buffers[index]
            # held by the list, `buffer` and the call only: no block, view or export left
            if sys.getrefcount(buffer) == 3:
                if len(buffer) >= size:
                    del buffer[size:]  # a bytearray shrinks in place down to half its memory
                    return buffer
                free = index
        buffer = bytearray(size)
        if free is None:
            self._buffers.append(buffer)
        else:
            self._buffers[free] = buffer
        return buffer


def line_numbers(data: bytearray, first: int) -> tuple[list[int], int]:
    """The numbers of the block's lines that are not blank, and the longest line's length.

    A line of more than 64 bytes is taken as not blank without looking (one of only spaces
    would make the reader's row count differ, and the chunk then takes the full parser)."""
    starts = [0]
    find = data.find
    at = find(b"\n")
    while at >= 0:
        starts.append(at + 1)
        at = find(b"\n", at + 1)
    starts.append(len(data) + 1)
    numbers, longest = [], 0
    for index in range(len(starts) - 1):
        begin, end = starts[index], starts[index + 1] - 1
        size = end - begin
        if size > 64 or data[begin:end].strip():
            numbers.append(first + index)
            longest = max(longest, size)
    return numbers, longest


def _newlines(data: bytearray) -> int:
    """How many line breaks `data` holds, counted by NumPy a MiB at a time: a sixth of
    `bytearray.count`'s time on 32 MiB (3 against 19 ms), and without holding the GIL."""
    view = np.frombuffer(data, dtype=np.uint8)
    step = 1 << 20
    found = sum(
        int(np.count_nonzero(view[at : at + step] == 10)) for at in range(0, view.size, step)
    )
    del view  # a bytearray with a view on it cannot change size
    return found


def line_blocks(
    path: Path, size: int, buffers: BlockBuffers | None = None
) -> Iterator[tuple[bytearray, int]]:
    """The file in blocks that end at a line break (about `size` bytes, then the rest of the
    last line), each with its first line's number; a byte-order mark dropped. `buffers`: the
    reading's buffers to take each block's from (else a new one each)."""
    number = 1
    with path.open("rb") as handle:
        while True:
            data = bytearray(size) if buffers is None else buffers.take(size)
            del data[handle.readinto(data) :]
            if not data:
                return
            data += handle.readline()
            if number == 1 and data.startswith(b"\xef\xbb\xbf"):
                del data[:3]
            yield data, number
            number += _newlines(data)
