"""Which files a run reads: the input extensions of each format, and the files that paths,
folders and glob patterns name.

Light on purpose (no Polars, no Arrow): a rerun finds out that it has nothing to do with this
module and the file ledger alone (`pipelines.score`), and the format registry
(`storage.inputs.formats`) lists its extensions from here.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from storage.errors import InputError, NoInputFilesError
from storage.inputs.packed import SUFFIXES as PACKED_SUFFIXES
from storage.inputs.packed import inner_suffix

if TYPE_CHECKING:
    from storage.inputs.readers import FileFormat

__all__ = [
    "AGENTBENCH_FILES",
    "CHAT_EXTENSIONS",
    "OTEL_EXTENSIONS",
    "PARQUET_EXTENSIONS",
    "PROTOBUF_EXTENSIONS",
    "SUPPORTED_EXTENSIONS",
    "SWE_AGENT_EXTENSIONS",
    "INSPECT_EXTENSIONS",
    "LETTA_EXTENSIONS",
    "expand_paths",
    "input_files",
]

SUPPORTED_EXTENSIONS = (".jsonl", ".ndjson", ".json", ".parquet", ".pq")
"""Extensions of tracegrade's own trace files (case-insensitive); folders are searched for
these."""

PARQUET_EXTENSIONS = (".parquet", ".pq")
PROTOBUF_EXTENSIONS = (".pb", ".binpb", ".otlp")

OTEL_EXTENSIONS = (".json", ".jsonl", ".ndjson", *PROTOBUF_EXTENSIONS, *PARQUET_EXTENSIONS)
"""Extensions of span files: OTLP JSON, JSON lines, protobuf, and Parquet."""

CHAT_EXTENSIONS = (".json", ".jsonl", ".ndjson")
"""Extensions of chat trajectory files: a JSON array, or one trajectory a line."""

SWE_AGENT_EXTENSIONS = (".traj", ".json")
"""Extensions of SWE-agent trajectories: one JSON document each (`.traj` as SWE-agent names
them)."""

LETTA_EXTENSIONS = (".af", ".json")
"""Extensions of Letta agent files: one JSON document each (`.af` as Letta names them)."""

INSPECT_EXTENSIONS = (".eval", ".json")
"""Extensions of Inspect AI eval logs: its `.eval` zip (the default log format) and `.json`."""

AGENTBENCH_FILES = ("runs.jsonl", "error.jsonl", "overall.json")
"""The files AgentBench writes a run of one agent on one task to (`{agent}/{task}/...`)."""

_GLOB_CHARS = frozenset("*?[")


def _supported(
    path: Path, extensions: Sequence[str] = SUPPORTED_EXTENSIONS, packed: bool = False
) -> bool:
    """A file of one of `extensions`, or with `packed` such a file gzip- or
    Zstandard-compressed (`x.jsonl.gz`: `storage.inputs.packed`)."""
    if path.suffix.lower() in extensions:
        return True
    return packed and path.suffix.lower() in PACKED_SUFFIXES and inner_suffix(path) in extensions


def _folder_files(
    folder: Path, extensions: Sequence[str] = SUPPORTED_EXTENSIONS, packed: bool = False
) -> list[Path]:
    """Trace files under `folder`, skipping hidden files and folders (tracegrade's own staging,
    editors' and systems' files) and the files another file beside them reads
    (`_read_beside`). A link that leads nowhere (dangling, or a loop) is kept, so
    that reading it quarantines it as unreadable_file instead of skipping it unseen."""
    return [
        path
        for path in folder.rglob("*")
        if (path.is_file() or (path.is_symlink() and not path.exists()))
        and _supported(path, extensions, packed)
        and not any(part.startswith(".") for part in path.relative_to(folder).parts)
        and not _read_beside(path)
    ]


def _hidden_hint(folder: Path, extensions: Sequence[str], packed: bool) -> str:
    """What to do about a folder with no files of those kinds: check the path, or, where its
    only such files lie hidden (an ADK app's `.adk/eval_history`, DeepEval's `.deepeval`),
    which a folder walk skips, name them (the first shown)."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and _supported(path, extensions, packed):
            return (
                f"hidden files and folders are skipped, such as {str(path)!r}: give such a "
                "file or its folder by name to read it"
            )
    return "check the path"


def _read_beside(path: Path) -> bool:
    """A file that another file beside it reads with its own: an event file of an OpenHands
    V1 conversation (`<id>/events/event-*.json`, read by `<id>/base_state.json` with the
    others), AgentBench's `overall.json` where its `runs.jsonl` is beside it (which takes
    its verdicts: `storage.inputs.agentbench_files`), a Harbor trial's `result.json`,
    `config.json` and `verifier/reward.json` (its `agent/trajectory.json` takes the reward:
    `storage.inputs.atif_files`), and the trajectory of each step of a multi-step trial
    (`steps/<step>/agent/trajectory.json`), which the trial's own trajectory holds again; and
    a Cline task's `ui_messages.json`, `task_metadata.json` and `context_history.json`, beside its
    `api_conversation_history.json` (`storage.inputs.cline_files`)."""
    if path.name == "overall.json":
        return path.with_name("runs.jsonl").is_file()
    if path.name in ("ui_messages.json", "task_metadata.json", "context_history.json"):
        return path.with_name("api_conversation_history.json").is_file()
    if path.name in ("result.json", "config.json"):
        return (path.parent / "agent" / "trajectory.json").is_file()
    if path.name == "reward.json" and path.parent.name == "verifier":
        return (path.parent.parent / "agent" / "trajectory.json").is_file()
    if path.name == "trajectory.json" and path.parent.name == "agent":
        steps = path.parent.parent.parent
        return steps.name == "steps" and (steps.parent / "agent" / "trajectory.json").is_file()
    return (
        path.parent.name == "events"
        and path.name.startswith("event-")
        and (path.parent.parent / "base_state.json").is_file()
    )


def _expand_one(
    given: str | Path, extensions: Sequence[str], what: str, packed: bool
) -> list[Path]:
    text = str(given)
    path = Path(text).expanduser()
    allowed = ", ".join(extensions) + (", each also .gz or .zst" if packed else "")
    if path.is_file():
        if not _supported(path, extensions, packed):
            raise InputError(
                f"input file {text!r} has extension {path.suffix!r}; tracegrade reads "
                f"{allowed}: {_unpack_hint(path, extensions)}"
            )
        return [path]
    if path.is_dir():
        files = _folder_files(path, extensions, packed)
        if not files:
            raise NoInputFilesError(
                f"input folder {text!r} holds no {what} ({allowed}, searched "
                f"recursively); {_hidden_hint(path, extensions, packed)}"
            )
        return files
    if _GLOB_CHARS.intersection(text):
        files = []
        for match in sorted(glob.glob(str(path), recursive=True)):
            matched = Path(match)
            if matched.is_dir():
                files.extend(_folder_files(matched, extensions, packed))
            elif matched.is_file() and _supported(matched, extensions, packed):
                files.append(matched)
        if not files:
            raise NoInputFilesError(
                f"glob pattern {text!r} matches no {what} ({allowed}); check the "
                "pattern (use ** to search folders recursively)"
            )
        return files
    raise InputError(f"input path {text!r} does not exist; give a file, a folder or a glob pattern")


def _unpack_hint(path: Path, extensions: Sequence[str]) -> str:
    if path.suffix.lower() in PACKED_SUFFIXES and inner_suffix(path) in extensions:
        return (  # only where the command reads no compressed file (`tracegrade import`)
            "this command reads no compressed file: unpack it first (gunzip, unzstd), or "
            "give it to `tracegrade score`, which reads it as it is"
        )
    return "rename the file or export it in one of these formats"


def expand_paths(
    paths: Sequence[str | Path],
    *,
    extensions: Sequence[str] = SUPPORTED_EXTENSIONS,
    what: str = "trace files",
    packed: bool = False,
) -> list[Path]:
    """The trace files named by files, folders (recursive) and glob patterns.

    Returns resolved paths, sorted and without duplicates, so a run reads the
    same files in the same order whatever order the paths were given in.
    `extensions` and `what` serve readers of other formats (OTel spans); with `packed`
    such files gzip- or Zstandard-compressed count too (`x.jsonl.gz`: a scoring run reads
    them through `storage.inputs.packed`).

    Raises:
        InputError: No path was given, a path matches no trace file, or a file
            named explicitly has an unsupported extension.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    if not paths:
        raise InputError("no input paths given; pass at least one file, folder or glob pattern")
    found = {
        _resolved(path) for given in paths for path in _expand_one(given, extensions, what, packed)
    }
    return sorted(found, key=str)


def _resolved(path: Path) -> Path:
    """The absolute path, links followed where they lead somewhere."""
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        return path.absolute()


def input_files(paths: Sequence[str | Path], file_format: FileFormat | None = None) -> list[Path]:
    """The files a run reads: `expand_paths` with the extensions of `file_format`, if any,
    compressed ones included."""
    if file_format is None:
        return expand_paths(paths, packed=True)
    return expand_paths(
        paths, extensions=file_format.extensions, what=file_format.what, packed=True
    )
