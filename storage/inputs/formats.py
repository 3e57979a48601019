"""The trace formats tracegrade reads: one registry that `score`, `backfill` and the Prefect
flows share.

A format is one small contract (`TraceFormat`): its name, the file extensions it is found
under, a test of what a file's first record (or Parquet columns, or extension) looks like, and
the reader that turns a file into canonical rows (a `storage.inputs.readers.FileFormat`). With no
format named, `AutoFormat` reads each file with the first format that recognises it, and
quarantines a file that none recognises as `unrecognised_file`, saying what the file holds and
which formats exist. The formats read through the chat mapping (ToolBench, SWE-agent,
mini-swe-agent, OpenHands, Inspect AI, tau2-bench, Claude Code, Codex) keep their tests and
readers in `storage.inputs.chat_formats`. The table of formats and what each maps: docs/formats.md.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storage.inputs import chat_formats
from storage.inputs.file_peek import Peek, peek
from storage.inputs.input_paths import (
    CHAT_EXTENSIONS,
    INSPECT_EXTENSIONS,
    LETTA_EXTENSIONS,
    OTEL_EXTENSIONS,
    PARQUET_EXTENSIONS,
    PROTOBUF_EXTENSIONS,
    SUPPORTED_EXTENSIONS,
    SWE_AGENT_EXTENSIONS,
)
from storage.inputs.packed import codec_of, unpacked_head
from storage.spans.backend_exports import is_backend_export
from storage.spans.langsmith import is_langsmith_run, langsmith_page
from storage.spans.mlflow import mlflow_page, mlflow_spans
from storage.spans.opik import is_opik_span, is_opik_trace
from storage.spans.phoenix import page_spans
from storage.spans.weave import is_weave_call

if TYPE_CHECKING:  # the readers load with the first file read: a rerun with nothing new needs none
    import polars as pl

    from storage.inputs.readers import FileFormat, FileInfo, JoinedFormat

__all__ = ["FORMATS", "AutoFormat", "file_format", "format_names"]


def _keys(look: Peek) -> set[str]:
    if isinstance(look.record, dict):
        return set(look.record)
    return {look.first_key} if look.first_key else set()


def _is_traces(look: Peek) -> bool:
    if look.columns is not None:
        return "steps" in look.columns or {"trace_id", "objective"} <= set(look.columns)
    keys = _keys(look)
    record = look.record if isinstance(look.record, dict) else {}
    if chat_formats.is_atif(look):  # an ATIF trajectory has `steps` too
        return False
    return (
        record.get("@type") == "ReasoningTrace"
        or ("steps" in keys and _own_steps(record, keys))
        or ("task" in keys and "metadata" in keys)
    )


def _own_steps(record: dict[str, Any], keys: set[str]) -> bool:
    """`steps` that are a trace's: beside its `id`, `task` or `outcome`, or steps with a
    `type` or `step_id`. Other tools' documents hold `steps` of their own (TapeAgents' tapes:
    `metadata`, `context` and steps of a `kind`), which are no trace of this format."""
    if keys & {"id", "task", "outcome"}:
        return True
    steps = record.get("steps")
    first = steps[0] if isinstance(steps, list) and steps else None
    return not isinstance(first, dict) or bool({"type", "step_id"} & set(first))


_SPAN_IDS = {"context", "span_id", "spanId", "context.span_id"}
_REQUEST_KEYS = {"resourceSpans", "resource_spans"}


def _is_otel(look: Peek) -> bool:
    if look.suffix in PROTOBUF_EXTENSIONS:
        return True
    if look.columns is not None:
        return "context.span_id" in look.columns or "span_id" in look.columns
    if is_backend_export(look.record):  # Tempo's (OTLP's names before 1.0), Jaeger's
        return True
    if is_langsmith_run(look.record) or langsmith_page(look.record) is not None:
        return True
    if is_opik_trace(look.record) or is_opik_span(look.record) or is_weave_call(look.record):
        return True
    keys = _keys(look)
    spans = look.record.get("spans") if isinstance(look.record, dict) else None
    if spans is None:  # a page of Phoenix's REST API, an MLflow trace (info, data.spans)
        spans = page_spans(look.record) or mlflow_spans(look.record)
    if spans is None:  # a page of MLflow's trace search: its first trace's spans
        traces = mlflow_page(look.record)
        spans = mlflow_spans(traces[0]) if traces else None
    if isinstance(spans, list) and spans and isinstance(spans[0], dict):  # any-agent AgentTrace
        keys = set(spans[0])
    return bool(keys & _REQUEST_KEYS) or ("name" in keys and bool(keys & _SPAN_IDS))


def _is_chat(look: Peek, messages_field: str) -> bool:
    """A trajectory object holding its messages, or messages themselves: the first record
    of a file of message lists (one list a line, or the whole file one list) is a message."""
    from transforms.chat import is_message

    record = look.record
    if is_message(record):
        return True
    if isinstance(record, dict):
        found = record.get(messages_field)
        record = record.get("messages") if found is None else found
    return (
        isinstance(record, list)
        and bool(record)
        and all(
            isinstance(item, dict) and ("role" in item or is_message(item)) for item in record[:5]
        )
    )


@dataclass(frozen=True)
class TraceFormat:
    """One format of the registry.

    Attributes:
        name: What `--format` calls it.
        what: What its files are called in messages.
        extensions: Where folders are searched for its files.
        recognises: Whether a file that starts like `Peek` is of this format (given a
            function that builds the format's reader, for its configured keys).
        reader: The reader of its files, given the format's configuration file (or None).
    """

    name: str
    what: str
    extensions: tuple[str, ...]
    recognises: Callable[[Peek, Callable[[], Any]], bool]
    reader: Callable[[str | None], FileFormat]
    describe: str = ""


@dataclass(frozen=True)
class TraceFiles:
    """tracegrade's own trace files (docs/input-format.md) as a `FileFormat`."""

    extensions: tuple[str, ...] = SUPPORTED_EXTENSIONS
    what: str = "trace files"

    def read_batches(
        self, path: Path, consume: Callable[[pl.DataFrame], None], batch_rows: int
    ) -> FileInfo:
        from storage.inputs.readers import read_file_batches

        return read_file_batches(path, consume, batch_rows)


def _trace_reader(_config: str | None) -> FileFormat:
    return TraceFiles()


def _otel_reader(config: str | None) -> FileFormat:
    from storage.config_files import load_otel_config
    from storage.spans.otel_readers import OtelFileFormat

    return OtelFileFormat(load_otel_config(config))


def _chat_reader(config: str | None) -> FileFormat:
    from storage.config_files import load_chat_config
    from storage.inputs.chat_readers import ChatFileFormat

    return ChatFileFormat(load_chat_config(config))


def _is_langfuse(look: Peek) -> bool:
    from storage.spans.langfuse import BLOB_COLUMNS, is_blob_observation, is_langfuse_trace

    if look.columns is not None:  # a blob export's observations table as Parquet
        return set(look.columns) >= BLOB_COLUMNS
    return is_langfuse_trace(look.record) or is_blob_observation(look.record)


FORMATS: tuple[TraceFormat, ...] = (
    TraceFormat(
        "traces",
        "trace files",
        SUPPORTED_EXTENSIONS,
        lambda look, _reader: _is_traces(look),
        _trace_reader,
        "tracegrade's ReasoningTrace JSON, JSONL or Parquet (docs/input-format.md)",
    ),
    TraceFormat(
        "otel",
        "span files",
        OTEL_EXTENSIONS,
        lambda look, _reader: _is_otel(look),
        _otel_reader,
        "OpenTelemetry spans: OTLP JSON or protobuf, Tempo and Jaeger exports, span lists, "
        "Phoenix span exports, MLflow traces, LangSmith runs, Opik traces, Weave calls",
    ),
    TraceFormat(
        "langfuse",
        "Langfuse trace exports",
        (".json", ".jsonl", ".ndjson", *PARQUET_EXTENSIONS),
        lambda look, _reader: _is_langfuse(look),
        _otel_reader,
        "Langfuse traces with their observations (the public API's trace, the UI download) "
        "and the blob storage export's observations table (JSON, JSON lines, Parquet)",
    ),
    TraceFormat(
        "toolbench",
        "ToolBench answer files",
        (".json",),
        lambda look, _reader: chat_formats.is_toolbench(look),
        chat_formats.toolbench_reader,
        "ToolBench answer files (answer_generation with train_messages, win)",
    ),
    TraceFormat(
        "swe-agent",
        "SWE-agent trajectories",
        SWE_AGENT_EXTENSIONS,
        lambda look, _reader: chat_formats.is_swe_agent(look),
        chat_formats.swe_agent_reader,
        "SWE-agent trajectories (.traj: history, trajectory, info.submission)",
    ),
    TraceFormat(
        "mini-swe-agent",
        "mini-swe-agent trajectories",
        (".json",),
        lambda look, _reader: chat_formats.is_mini_swe_agent(look),
        chat_formats.mini_swe_agent_reader,
        "mini-swe-agent trajectories (*.traj.json: info, messages, trajectory_format)",
    ),
    TraceFormat(
        "agentbench",
        "AgentBench outputs",
        CHAT_EXTENSIONS,
        lambda look, _reader: chat_formats.is_agentbench(look),
        chat_formats.agentbench_reader,
        "AgentBench outputs (outputs/*/{agent}/{task}/runs.jsonl: a sample a line, its history "
        "of user and agent turns; overall.json: the graded samples)",
    ),
    TraceFormat(
        "atif",
        "ATIF trajectories",
        (".json",),
        lambda look, _reader: chat_formats.is_atif(look),
        chat_formats.atif_reader,
        "ATIF trajectories (Harbor's trajectory.json: schema_version ATIF-v1.x, agent, steps; "
        "a Harbor trial's verifier reward its outcome)",
    ),
    TraceFormat(
        "adk",
        "Google ADK sessions and eval results",
        (".json",),
        lambda look, _reader: chat_formats.is_adk(look),
        chat_formats.adk_reader,
        "Google ADK sessions (a Session as JSON: id, app_name, user_id, events with Gemini "
        "parts) and eval results (.adk/eval_history/*.evalset_result.json)",
    ),
    TraceFormat(
        "letta",
        "Letta agent files",
        LETTA_EXTENSIONS,
        lambda look, _reader: chat_formats.is_letta(look),
        chat_formats.letta_reader,
        "Letta agent files (.af: an agent exported with its messages)",
    ),
    TraceFormat(
        "cline",
        "Cline task histories",
        (".json",),
        lambda look, _reader: chat_formats.is_cline(look),
        chat_formats.cline_reader,
        "Cline, Roo Code and Kilo Code task histories (tasks/<id>/api_conversation_history.json: "
        "the messages, <task> in the first)",
    ),
    TraceFormat(
        "autogen",
        "AutoGen runs",
        (".json",),
        lambda look, _reader: chat_formats.is_autogen(look),
        chat_formats.autogen_reader,
        "AutoGen runs (AgentChat's messages: a TaskResult, a list, a team's saved state; "
        "Core's model messages)",
    ),
    TraceFormat(
        "smolagents",
        "smolagents benchmark runs",
        CHAT_EXTENSIONS,
        lambda look, _reader: chat_formats.is_smolagents(look),
        chat_formats.smolagents_reader,
        "smolagents benchmark runs (a run a line: question, answer, model_id, the memory's "
        "messages as intermediate_steps)",
    ),
    TraceFormat(
        "copilot-chat",
        "Copilot Chat sessions",
        (".json",),
        lambda look, _reader: chat_formats.is_copilot_chat(look),
        chat_formats.copilot_chat_reader,
        "GitHub Copilot Chat sessions of VS Code (chatSessions/*.json, Export Chat: requests "
        "with their model rounds and tool results)",
    ),
    TraceFormat(
        "continue",
        "Continue sessions",
        (".json",),
        lambda look, _reader: chat_formats.is_continue(look),
        chat_formats.continue_reader,
        "Continue sessions (~/.continue/sessions/<id>.json and the CLI's: a history of "
        "messages with their tool calls' states)",
    ),
    TraceFormat(
        "openhands-completions",
        "OpenHands completion logs",
        (".json",),
        lambda look, _reader: chat_formats.is_openhands_completions(look),
        chat_formats.openhands_completions_reader,
        "OpenHands completion logs (llm_completions/*/*.json: a call's messages and response; "
        "fncall_messages or raw_messages where function calling was mocked)",
    ),
    TraceFormat(
        "openhands",
        "OpenHands trajectories",
        CHAT_EXTENSIONS,
        lambda look, _reader: chat_formats.is_openhands(look),
        chat_formats.openhands_reader,
        "OpenHands trajectories (a saved conversation: a JSON array of events; the "
        "evaluation harness's output.jsonl)",
    ),
    TraceFormat(
        "inspect",
        "Inspect AI eval logs",
        INSPECT_EXTENSIONS,
        lambda look, _reader: chat_formats.is_inspect(look),
        chat_formats.inspect_reader,
        "Inspect AI eval logs (.eval zips and .json logs: each sample's messages and scores)",
    ),
    TraceFormat(
        "tau2",
        "tau2-bench results files",
        (".json",),
        lambda look, _reader: chat_formats.is_tau2(look),
        chat_formats.tau2_reader,
        "tau2-bench results files (info, tasks, simulations with their messages and rewards)",
    ),
    TraceFormat(
        "deepeval",
        "DeepEval test runs",
        (".json",),
        lambda look, _reader: chat_formats.is_deepeval(look),
        chat_formats.deepeval_reader,
        "DeepEval test runs (.deepeval/.latest_test_run.json: each test case's input, tools "
        "called, actual output and success)",
    ),
    TraceFormat(
        "qwen-code",
        "Qwen Code sessions",
        (".jsonl", ".ndjson"),
        lambda look, _reader: chat_formats.is_qwen_code(look),
        chat_formats.qwen_code_reader,
        "Qwen Code session logs (~/.qwen/projects/*/chats/*.jsonl: one session's events a line)",
    ),
    TraceFormat(
        "claude-code",
        "Claude Code transcripts",
        (".jsonl", ".ndjson"),
        lambda look, _reader: chat_formats.is_claude_code(look),
        chat_formats.claude_code_reader,
        "Claude Code session transcripts (~/.claude/projects/*/*.jsonl: one session's events "
        "a line; a subagent's file too)",
    ),
    TraceFormat(
        "codex",
        "Codex session rollouts",
        (".jsonl", ".ndjson"),
        lambda look, _reader: chat_formats.is_codex(look),
        chat_formats.codex_reader,
        "Codex session rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl: one session's "
        "events a line)",
    ),
    TraceFormat(
        "windsurf",
        "Windsurf transcripts",
        (".jsonl", ".ndjson"),
        lambda look, _reader: chat_formats.is_windsurf(look),
        chat_formats.windsurf_reader,
        "Windsurf Cascade transcripts (~/.windsurf/transcripts/*.jsonl: one step a line)",
    ),
    TraceFormat(
        "cursor",
        "Cursor agent transcripts",
        (".jsonl", ".ndjson"),
        lambda look, _reader: chat_formats.is_cursor(look),
        chat_formats.cursor_reader,
        "Cursor agent transcripts (~/.cursor/projects/*/agent-transcripts/*/*.jsonl: one "
        "message a line, tool calls without results)",
    ),
    TraceFormat(
        "gemini-cli",
        "Gemini CLI sessions",
        chat_formats.GEMINI_CLI_EXTENSIONS,
        lambda look, _reader: chat_formats.is_gemini_cli(look),
        chat_formats.gemini_cli_reader,
        "Gemini CLI chat sessions (~/.gemini/tmp/*/chats/session-*.json or .jsonl: one "
        "session a file)",
    ),
    TraceFormat(
        "pydantic-ai",
        "pydantic-ai message histories",
        CHAT_EXTENSIONS,
        lambda look, _reader: chat_formats.is_pydantic_ai(look),
        chat_formats.pydantic_ai_reader,
        "pydantic-ai message histories (all_messages_json(): a history a file, an array of "
        "them, or one a line)",
    ),
    TraceFormat(
        "chat",
        "chat trajectory files",
        CHAT_EXTENSIONS,
        lambda look, reader: _is_chat(look, reader().config.messages_field),
        _chat_reader,
        "chat-message trajectories (OpenAI messages; tau-bench's `traj`)",
    ),
)
"""Tried in this order; the first that recognises a file reads it."""


def format_names() -> tuple[str, ...]:
    return tuple(entry.name for entry in FORMATS)


def _entry(name: str) -> TraceFormat:
    for entry in FORMATS:
        if entry.name == name:
            return entry
    from transforms.errors import ConfigError

    known = ", ".join(("auto", *format_names()))
    raise ConfigError(f"input format {name!r} is not known; use one of {known}")


@dataclass(frozen=True)
class AutoFormat:
    """Each file read with the first format of the registry that recognises it. A format's
    reader is built when a file first needs it (a run of trace files never loads the OTel
    reader's protobuf machinery)."""

    configs: dict[str, str | None] = field(default_factory=dict)
    what: str = "trace files"
    extensions: tuple[str, ...] = field(
        default_factory=lambda: tuple(
            dict.fromkeys(suffix for entry in FORMATS for suffix in entry.extensions)
        )
    )
    _readers: dict[str, FileFormat] = field(default_factory=dict, repr=False)

    def reader(self, entry: TraceFormat) -> FileFormat:
        if entry.name not in self._readers:
            self._readers[entry.name] = entry.reader(self.configs.get(entry.name))
        return self._readers[entry.name]

    def chosen(self, path: Path) -> TraceFormat | None:
        """The format of `path`, or None when no format recognises it; raises OSError. A
        damaged file goes to the first format its extension belongs to, whose reader says
        what is wrong with it."""
        look = peek(path)
        if look.damaged:
            return next(e for e in FORMATS if path.suffix.lower() in e.extensions)
        for entry in FORMATS:
            if path.suffix.lower() in entry.extensions and entry.recognises(
                look, partial(self.reader, entry)
            ):
                return entry
        return None

    def joined_reader(self, path: Path, alone: bool = False) -> JoinedFormat | None:
        """The reader of `path` where it reads a run's files of its kind together (span files),
        else None; a compressed file is told by the head of what it holds. A file of log
        records is read with span files, not `alone`."""
        try:
            if not path.stat().st_size:
                return None
            codec = codec_of(path)
            if codec is None:
                entry = self._joined_entry(path, alone)
            else:
                with tempfile.TemporaryDirectory(prefix="tracegrade-head-") as folder:
                    entry = self._joined_entry(unpacked_head(path, codec, Path(folder)), alone)
        except OSError:
            return None  # its own reading says why
        return None if entry is None else _joining(self.reader(entry))

    def _joined_entry(self, path: Path, alone: bool) -> TraceFormat | None:
        """The format of `path`, or for a file of OTLP log records alone (the Collector's logs
        pipeline) the span files': read with them, its records go onto their spans."""
        from storage.spans.otlp_logs import is_logs_only

        entry = self.chosen(path)
        if entry is None and not alone and is_logs_only(peek(path).record):
            return _entry("otel")
        return entry

    def read_batches(
        self, path: Path, consume: Callable[[pl.DataFrame], None], batch_rows: int
    ) -> FileInfo:
        try:
            entry = self.chosen(path) if path.stat().st_size else None
        except OSError:
            entry = None
        if entry is not None:
            return self.reader(entry).read_batches(path, consume, batch_rows)
        from storage.inputs.readers import file_facts

        facts = file_facts(path)  # a file that cannot be opened or is empty: that is its rule
        if facts.rule is not None:
            return facts
        from storage.inputs.sniff import describe_file, unread_shape

        shape = unread_shape(peek(path).record)
        if shape is not None:
            reason = f"no format reads the file: it is {shape}"
            return replace(facts, rule="unrecognised_file", reason=reason)
        reason = (  # the formats by name: each one's description made 3 KB a file
            f"no format recognises the file: it holds {describe_file(path)}. tracegrade reads the"
            f" formats {', '.join(entry.name for entry in FORMATS)} (`tracegrade score --help`"
            " and docs/formats.md describe each); name one with --format if it is of one of them"
        )
        return replace(facts, rule="unrecognised_file", reason=reason)


@dataclass(frozen=True)
class NamedFormat:
    """Every file read with one format (`--format NAME`); its reader is built when the first
    file is read, so a run that reads none loads no reader."""

    entry: TraceFormat
    config: str | None = None
    _readers: dict[str, FileFormat] = field(default_factory=dict, repr=False)

    @property
    def extensions(self) -> tuple[str, ...]:
        return self.entry.extensions

    @property
    def what(self) -> str:
        return self.entry.what

    def _reader(self) -> FileFormat:
        if not self._readers:
            self._readers["reader"] = self.entry.reader(self.config)
        return self._readers["reader"]

    def joined_reader(self, _path: Path, alone: bool = False) -> JoinedFormat | None:
        """The format's reader where it reads a run's files together (span files), else None."""
        return _joining(self._reader())

    def read_batches(
        self, path: Path, consume: Callable[[pl.DataFrame], None], batch_rows: int
    ) -> FileInfo:
        return self._reader().read_batches(path, consume, batch_rows)


def _joining(reader: FileFormat) -> JoinedFormat | None:
    return reader if hasattr(reader, "read_joined") else None  # type: ignore[return-value]


def file_format(
    name: str = "auto", otel_config: str | None = None, chat_config: str | None = None
) -> FileFormat:
    """The reader of a run's input files: the format `name`, or for "auto" each file's own
    format; `otel_config` and `chat_config` are the TOML files of the OTel and chat mapping
    keys (None: the defaults)."""
    configs = {
        **dict.fromkeys(("otel", "langfuse"), otel_config),
        **dict.fromkeys(
            (
                "chat",
                "toolbench",
                "swe-agent",
                "mini-swe-agent",
                "openhands",
                "inspect",
                "tau2",
            ),
            chat_config,
        ),
    }
    if name != "auto":
        return NamedFormat(_entry(name), configs.get(name))
    return AutoFormat(configs)
