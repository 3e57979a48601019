"""Compressed input files: gzip (`.gz`: Langfuse's scheduled blob storage export writes
`.jsonl.gz`, `.json.gz` and `.csv.gz` unless told not to; archives of old exports) and
Zstandard (`.zst`: the OpenTelemetry Collector's file exporter with `compression: zstd`), read
as the file they hold.

A compressed file is unpacked into a folder of the run's own (beside the database, as the
run's staging is) under the name it holds (`traces-0001.jsonl` of `traces-0001.jsonl.gz`,
below folders named as its own two parent folders, so that what a format takes from the path
stays the same), read there by its format, and removed. Its rows, its ledger entry and its
quarantine rows name the compressed file, with the compressed bytes' hash, so a rerun skips it
as it skips any file it has read. What a format reads beside a file (a Cline task's other
files, an OpenHands conversation's events) is not unpacked with it.

Light on purpose: the folder walk (`storage.inputs.input_paths`) asks `inner_suffix` of every
file it meets.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from storage.names import path_text

__all__ = [
    "SUFFIXES",
    "PackError",
    "codec_of",
    "inner_suffix",
    "plain_files",
    "unpack",
    "unpacked",
    "unpacked_head",
    "unpacked_reason",
]

SUFFIXES = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
"""Extensions of compressed files, and the codec each names."""

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"))
"""The first bytes of each codec's stream."""

_CHUNK = 1 << 20


class PackError(Exception):
    """A compressed file whose data cannot be unpacked: the message says why."""


def inner_name(path: Path) -> str:
    """The name of the file `path` holds: its name without a compression extension."""
    return path.stem if path.suffix.lower() in SUFFIXES else path.name


def inner_suffix(path: Path) -> str:
    """The lower-case extension of the file `path` holds (`.jsonl` of `x.jsonl.gz`)."""
    return Path(inner_name(path)).suffix.lower()


def codec_of(path: Path) -> str | None:
    """The codec of a compressed file, `gzip` or `zstd` (by its first bytes, whatever its
    name; by its extension where it has too few bytes to tell), else None; raises OSError."""
    with path.open("rb") as handle:
        head = handle.read(4)
    for magic, codec in _MAGIC:
        if head.startswith(magic):
            return codec
    return SUFFIXES.get(path.suffix.lower())


def unpack(path: Path, codec: str, folder: Path) -> Path:
    """Write what the compressed file `path` holds into `folder` (below its two parent
    folders' names) and return its path. Raises PackError for data that cannot be unpacked (a
    file cut off, or named as compressed but not), OSError for a fault of the disk."""
    import pyarrow as pa

    target = folder / path.parent.parent.name / path.parent.name / inner_name(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as sink:
        try:
            with pa.input_stream(str(path), compression=codec) as source:
                while chunk := source.read(_CHUNK):
                    sink.write(chunk)
        except (OSError, pa.ArrowException) as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise  # the disk's fault (reading the file or writing the copy), not the data's
            raise PackError(
                f"the file is named or marked as {codec}-compressed but its data cannot be "
                f"unpacked ({exc}): the file was cut off or is not {codec} data; copy or "
                "export it again"
            ) from None
    return target


def unpacked_head(path: Path, codec: str, folder: Path, size: int = 8 << 20) -> Path:
    """Write the first `size` bytes of what `path` holds into `folder`, under the name of the
    file it holds, and return that path: enough to tell its format by (`file_peek`). Raises
    OSError where the data cannot be read (the whole file's reading then says why)."""
    import pyarrow as pa

    target = folder / inner_name(path)
    try:
        with pa.input_stream(str(path), compression=codec) as source:
            target.write_bytes(source.read(size))
    except pa.ArrowException as exc:
        raise OSError(f"{path}: {exc}") from None
    return target


@contextmanager
def unpacked(path: Path, codec: str, scratch: Path | None) -> Iterator[Path]:
    """What `path` holds, unpacked into a new folder under `scratch` (the system's temporary
    folder when None), removed afterwards. Raises as `unpack`."""
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="unpacked-", dir=scratch))
    try:
        yield unpack(path, codec, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def unpacked_reason(reason: str, plain: Path, name: str, codec: str) -> str:
    """A reader's `reason` about the unpacked copy `plain` (`unpacked`), naming the compressed
    file (`name`) instead."""
    folder = plain.parents[2]  # `unpack` writes below two folders named as the file's own
    reason = reason.replace(path_text(plain), name).replace(str(folder), "")
    return f"{reason} (read unpacked from its {codec} data)"


@contextmanager
def plain_files(paths: Sequence[Path]) -> Iterator[list[Path]]:
    """`paths`, each compressed one unpacked into a temporary folder removed afterwards: for the
    commands that read export files whole once more (`tracegrade export langfuse-scores`).
    Raises PackError for a file that cannot be unpacked, naming it."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-unpacked-") as folder:
        plain = []
        for index, path in enumerate(paths):
            codec = codec_of(path)
            if codec is None:
                plain.append(path)
                continue
            try:
                plain.append(unpack(path, codec, Path(folder) / str(index)))
            except PackError as exc:
                raise PackError(f"{path}: {exc}") from None
        yield plain
