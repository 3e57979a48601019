"""The formats of the registry (`storage.inputs.formats`) that other tools' trajectories are, read
through the chat mapping: ToolBench answer files, SWE-agent and mini-swe-agent trajectories,
OpenHands saved conversations, Inspect AI eval logs, tau2-bench results files, Claude Code
transcripts, Codex rollouts, Letta agent files, Cline task histories, AutoGen runs, smolagents benchmark runs, OpenHands completion logs, Copilot Chat sessions, Continue sessions, Windsurf transcripts, Cursor agent transcripts, Google ADK sessions, ATIF trajectories, DeepEval test runs and AgentBench outputs. Each is a test of a file's first record and a reader: the chat
mapping with that producer's keys, and the producer's own record conversion or container.
Everything a reader needs is imported when it is built (a rerun loads none)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storage.inputs.file_peek import Peek
from storage.inputs.input_paths import (
    CHAT_EXTENSIONS,
    INSPECT_EXTENSIONS,
    LETTA_EXTENSIONS,
    SWE_AGENT_EXTENSIONS,
)

if TYPE_CHECKING:
    from storage.inputs.readers import FileFormat
    from transforms.chat import ChatRecord

__all__ = [
    "GEMINI_CLI_EXTENSIONS",
    "adk_reader",
    "atif_reader",
    "autogen_reader",
    "agentbench_reader",
    "claude_code_reader",
    "cline_reader",
    "codex_reader",
    "continue_reader",
    "cursor_reader",
    "copilot_chat_reader",
    "deepeval_reader",
    "gemini_cli_reader",
    "inspect_reader",
    "is_agentbench",
    "is_agentbench_graded",
    "is_adk",
    "is_atif",
    "is_autogen",
    "letta_reader",
    "is_claude_code",
    "is_cline",
    "is_deepeval",
    "is_codex",
    "is_continue",
    "is_cursor",
    "is_copilot_chat",
    "is_gemini_cli",
    "is_inspect",
    "is_letta",
    "is_mini_swe_agent",
    "is_openhands",
    "is_openhands_completions",
    "is_pydantic_ai",
    "is_qwen_code",
    "is_smolagents",
    "is_swe_agent",
    "is_tau2",
    "is_toolbench",
    "is_windsurf",
    "mini_swe_agent_reader",
    "openhands_completions_reader",
    "openhands_reader",
    "pydantic_ai_reader",
    "qwen_code_reader",
    "smolagents_reader",
    "swe_agent_reader",
    "tau2_reader",
    "toolbench_reader",
    "windsurf_reader",
]


def _reader(
    config: str | None,
    keys: dict[str, Any],
    extensions: tuple[str, ...],
    what: str,
    *,
    convert: Callable[[Any], Any] | None = None,
    records: Callable[[Path], Iterator[ChatRecord]] | None = None,
) -> FileFormat:
    """The chat mapping with a producer's keys (a `--chat-config` file's keys on top)."""
    from storage.config_files import load_chat_config
    from storage.inputs.chat_files import iter_chat_records
    from storage.inputs.chat_readers import ChatFileFormat

    chat = load_chat_config(config, keys)
    return ChatFileFormat(chat, extensions, what, convert, records or iter_chat_records)


def toolbench_reader(config: str | None) -> FileFormat:
    from transforms.toolbench import TOOLBENCH_KEYS, toolbench_record

    return _reader(
        config, TOOLBENCH_KEYS, (".json",), "ToolBench answer files", convert=toolbench_record
    )


def swe_agent_reader(config: str | None) -> FileFormat:
    from transforms.swe_agent import SWE_AGENT_KEYS, swe_agent_record

    return _reader(
        config,
        SWE_AGENT_KEYS,
        SWE_AGENT_EXTENSIONS,
        "SWE-agent trajectories",
        convert=swe_agent_record,
    )


def mini_swe_agent_reader(config: str | None) -> FileFormat:
    from transforms.mini_swe_agent import MINI_SWE_AGENT_KEYS, mini_swe_agent_record

    return _reader(
        config,
        MINI_SWE_AGENT_KEYS,
        (".json",),
        "mini-swe-agent trajectories",
        convert=mini_swe_agent_record,
    )


def agentbench_reader(config: str | None) -> FileFormat:
    from storage.inputs.agentbench_files import AgentBenchFormat, iter_agentbench_records
    from storage.inputs.chat_readers import ChatFileFormat
    from transforms.agentbench import AGENTBENCH_KEYS

    runs = _reader(
        config,
        AGENTBENCH_KEYS,
        CHAT_EXTENSIONS,
        "AgentBench outputs",
        records=iter_agentbench_records,
    )
    assert isinstance(runs, ChatFileFormat)
    return AgentBenchFormat(runs)


def atif_reader(config: str | None) -> FileFormat:
    from storage.inputs.atif_files import iter_atif_records
    from transforms.atif import ATIF_KEYS

    what = "ATIF trajectories"
    return _reader(config, ATIF_KEYS, (".json",), what, records=iter_atif_records)


def cline_reader(config: str | None) -> FileFormat:
    from storage.inputs.cline_files import iter_cline_records
    from transforms.cline import CLINE_KEYS

    what = "Cline task histories"
    return _reader(config, CLINE_KEYS, (".json",), what, records=iter_cline_records)


def autogen_reader(config: str | None) -> FileFormat:
    from storage.inputs.autogen_files import iter_autogen_records
    from transforms.autogen import AUTOGEN_KEYS

    what = "AutoGen runs"
    return _reader(config, AUTOGEN_KEYS, (".json",), what, records=iter_autogen_records)


def smolagents_reader(config: str | None) -> FileFormat:
    from transforms.smolagents import SMOLAGENTS_KEYS, smolagents_record

    what = "smolagents benchmark runs"
    return _reader(config, SMOLAGENTS_KEYS, CHAT_EXTENSIONS, what, convert=smolagents_record)


def openhands_completions_reader(config: str | None) -> FileFormat:
    from transforms.openhands_completions import COMPLETION_LOG_KEYS, completion_log_record

    what = "OpenHands completion logs"
    return _reader(config, COMPLETION_LOG_KEYS, (".json",), what, convert=completion_log_record)


def copilot_chat_reader(config: str | None) -> FileFormat:
    from transforms.copilot_chat import COPILOT_CHAT_KEYS, copilot_chat_record

    what = "Copilot Chat sessions"
    return _reader(config, COPILOT_CHAT_KEYS, (".json",), what, convert=copilot_chat_record)


def continue_reader(config: str | None) -> FileFormat:
    from transforms.continue_sessions import CONTINUE_KEYS, continue_record

    what = "Continue sessions"
    return _reader(config, CONTINUE_KEYS, (".json",), what, convert=continue_record)


def adk_reader(config: str | None) -> FileFormat:
    from storage.inputs.adk_files import iter_adk_records
    from transforms.adk import ADK_KEYS

    what = "Google ADK sessions and eval results"
    return _reader(config, ADK_KEYS, (".json",), what, records=iter_adk_records)


def letta_reader(config: str | None) -> FileFormat:
    from transforms.letta import LETTA_KEYS, letta_record

    return _reader(config, LETTA_KEYS, LETTA_EXTENSIONS, "Letta agent files", convert=letta_record)


def openhands_reader(config: str | None) -> FileFormat:
    from storage.inputs.openhands_files import iter_openhands_records
    from transforms.openhands import OPENHANDS_KEYS

    return _reader(
        config,
        OPENHANDS_KEYS,
        CHAT_EXTENSIONS,
        "OpenHands trajectories and evaluation output",
        records=iter_openhands_records,
    )


def inspect_reader(config: str | None) -> FileFormat:
    from storage.inputs.inspect_files import iter_inspect_records
    from transforms.inspect_ai import INSPECT_KEYS

    return _reader(
        config,
        INSPECT_KEYS,
        INSPECT_EXTENSIONS,
        "Inspect AI eval logs",
        records=iter_inspect_records,
    )


def tau2_reader(config: str | None) -> FileFormat:
    from storage.inputs.tau2_files import iter_tau2_records
    from transforms.tau2 import TAU2_KEYS

    return _reader(
        config, TAU2_KEYS, (".json",), "tau2-bench results files", records=iter_tau2_records
    )


def deepeval_reader(config: str | None) -> FileFormat:
    from storage.inputs.deepeval_files import iter_deepeval_records
    from transforms.deepeval import DEEPEVAL_KEYS

    return _reader(
        config, DEEPEVAL_KEYS, (".json",), "DeepEval test runs", records=iter_deepeval_records
    )


def claude_code_reader(config: str | None) -> FileFormat:
    from storage.inputs.session_files import SESSION_EXTENSIONS, SessionLog
    from transforms.claude_code import CLAUDE_CODE_KEYS, claude_code_records, is_claude_code_event

    log = SessionLog("Claude Code transcripts", is_claude_code_event, claude_code_records)
    return _reader(config, CLAUDE_CODE_KEYS, SESSION_EXTENSIONS, log.what, records=log.records)


def qwen_code_reader(config: str | None) -> FileFormat:
    from storage.inputs.session_files import SESSION_EXTENSIONS, SessionLog
    from transforms.qwen_code import QWEN_CODE_KEYS, is_qwen_code_event, qwen_code_records

    log = SessionLog("Qwen Code sessions", is_qwen_code_event, qwen_code_records)
    return _reader(config, QWEN_CODE_KEYS, SESSION_EXTENSIONS, log.what, records=log.records)


def codex_reader(config: str | None) -> FileFormat:
    from storage.inputs.session_files import SESSION_EXTENSIONS, SessionLog
    from transforms.codex import CODEX_KEYS, codex_records, is_codex_event

    log = SessionLog("Codex session rollouts", is_codex_event, codex_records)
    return _reader(config, CODEX_KEYS, SESSION_EXTENSIONS, log.what, records=log.records)


def windsurf_reader(config: str | None) -> FileFormat:
    from storage.inputs.session_files import SESSION_EXTENSIONS, SessionLog
    from transforms.windsurf import WINDSURF_KEYS, is_windsurf_step, windsurf_records

    log = SessionLog("Windsurf transcripts", is_windsurf_step, windsurf_records)
    return _reader(config, WINDSURF_KEYS, SESSION_EXTENSIONS, log.what, records=log.records)


def cursor_reader(config: str | None) -> FileFormat:
    from storage.inputs.session_files import SESSION_EXTENSIONS, SessionLog
    from transforms.cursor import CURSOR_KEYS, cursor_records, is_cursor_message

    log = SessionLog("Cursor agent transcripts", is_cursor_message, cursor_records)
    return _reader(config, CURSOR_KEYS, SESSION_EXTENSIONS, log.what, records=log.records)


def gemini_cli_reader(config: str | None) -> FileFormat:
    from storage.inputs.session_files import SessionLog
    from transforms.gemini_cli import GEMINI_CLI_KEYS, gemini_cli_records, is_gemini_cli_record

    log = SessionLog(
        "Gemini CLI sessions",
        is_gemini_cli_record,
        gemini_cli_records,
        GEMINI_CLI_EXTENSIONS,
    )
    return _reader(config, GEMINI_CLI_KEYS, GEMINI_CLI_EXTENSIONS, log.what, records=log.records)


GEMINI_CLI_EXTENSIONS = (".json", ".jsonl", ".ndjson")
"""Gemini CLI writes a session as one JSON document (up to about 0.2x) or as JSON lines."""


def pydantic_ai_reader(config: str | None) -> FileFormat:
    from storage.inputs.pydantic_ai_files import iter_pydantic_ai_records
    from transforms.pydantic_ai_messages import PYDANTIC_AI_KEYS

    return _reader(
        config,
        PYDANTIC_AI_KEYS,
        CHAT_EXTENSIONS,
        "pydantic-ai message histories",
        records=iter_pydantic_ai_records,
    )


def is_toolbench(look: Peek) -> bool:
    from transforms.toolbench import is_toolbench as holds_toolbench

    return holds_toolbench(look.record)


def is_swe_agent(look: Peek) -> bool:
    from transforms.swe_agent import is_swe_agent as holds_trajectory

    # A `.traj` document too large to peek whole is known by its first key.
    large = look.record is None and look.first_key in ("environment", "trajectory", "history")
    return holds_trajectory(look.record) or (look.suffix == ".traj" and large)


def is_mini_swe_agent(look: Peek) -> bool:
    from transforms.mini_swe_agent import is_mini_swe_agent as holds_trajectory

    # A trajectory too large to peek whole (its `trajectory_format` comes after its messages)
    # is known by its `info`, which comes first and names the harness's version.
    info = look.leading.get("info")
    large = look.record is None and isinstance(info, dict) and "mini_version" in info
    return holds_trajectory(look.record) or large


def is_agentbench(look: Peek) -> bool:
    from transforms.agentbench import is_agentbench_output

    return is_agentbench_output(look.record) or is_agentbench_graded(look)


def is_agentbench_graded(look: Peek) -> bool:
    """An AgentBench `overall.json`; one too large to peek whole is known by its `total` and
    `validation` (the share of each status AgentBench counts), which come first."""
    from transforms.agentbench import is_agentbench_overall

    validation = look.leading.get("validation")
    large = (
        look.record is None
        and "total" in look.leading
        and isinstance(validation, dict)
        and "average_history_length" in validation
    )
    return is_agentbench_overall(look.record) or large


def is_atif(look: Peek) -> bool:
    from transforms.atif import is_atif_trajectory

    # a trajectory too large to peek whole is known by its `schema_version`, which comes first
    version = look.leading.get("schema_version")
    large = look.record is None and isinstance(version, str) and version.startswith("ATIF")
    return is_atif_trajectory(look.record) or large


def is_cline(look: Peek) -> bool:
    from transforms.cline import opens_cline_task

    return opens_cline_task(look.record)  # a peek holds an array's first message


def is_autogen(look: Peek) -> bool:
    from transforms.autogen import is_autogen as holds_run

    # a saved team too large to peek whole is known by its type, which comes first
    large = look.record is None and look.leading.get("type") == "TeamState"
    return holds_run(look.record) or large


def is_smolagents(look: Peek) -> bool:
    from transforms.smolagents import is_smolagents_run

    return is_smolagents_run(look.record)


def is_openhands_completions(look: Peek) -> bool:
    from transforms.openhands_completions import is_completion_log

    return is_completion_log(look.record)


def is_copilot_chat(look: Peek) -> bool:
    from transforms.copilot_chat import is_copilot_chat as holds_session

    return holds_session(look.record)


def is_continue(look: Peek) -> bool:
    from transforms.continue_sessions import is_continue_session

    return is_continue_session(look.record)


def is_adk(look: Peek) -> bool:
    from storage.inputs.adk_files import adk_document
    from transforms.adk import is_adk_eval_result, is_adk_session

    document = adk_document(look.record)
    return is_adk_session(document) or is_adk_eval_result(document)


def is_letta(look: Peek) -> bool:
    from transforms.letta import is_letta_agent_file

    return is_letta_agent_file(look.record)


def is_openhands(look: Peek) -> bool:
    from transforms.openhands import is_openhands_event, is_openhands_output, is_openhands_state

    return (
        is_openhands_event(look.record)
        or is_openhands_output(look.record)
        or is_openhands_state(look.record)
    )


def is_inspect(look: Peek) -> bool:
    from transforms.inspect_ai import is_inspect_log

    # an `.eval` log is a zip, which no first record shows
    return look.suffix == ".eval" or is_inspect_log(look.record)


def is_tau2(look: Peek) -> bool:
    from transforms.tau2 import is_tau2_info, is_tau2_results

    # A results file too large to peek whole is known by its `info`, which comes first.
    large = look.record is None and is_tau2_info(look.leading.get("info"))
    return is_tau2_results(look.record) or large


def is_deepeval(look: Peek) -> bool:
    from transforms.deepeval import is_deepeval_run

    return is_deepeval_run(look.record)


def is_qwen_code(look: Peek) -> bool:
    from transforms.qwen_code import is_qwen_code_event

    return is_qwen_code_event(look.record)


def is_claude_code(look: Peek) -> bool:
    from transforms.claude_code import is_claude_code_event

    return is_claude_code_event(look.record)


def is_gemini_cli(look: Peek) -> bool:
    from transforms.gemini_cli import is_gemini_cli_session

    return is_gemini_cli_session(look.record)


def is_pydantic_ai(look: Peek) -> bool:
    from transforms.pydantic_ai_messages import is_pydantic_ai_history, is_pydantic_ai_message

    # a `.json` history shows its first message; a file of histories, its first history
    return is_pydantic_ai_message(look.record) or is_pydantic_ai_history(look.record)


def is_windsurf(look: Peek) -> bool:
    from transforms.windsurf import is_windsurf_step

    return is_windsurf_step(look.record)


def is_cursor(look: Peek) -> bool:
    from transforms.cursor import is_cursor_message

    return is_cursor_message(look.record)


def is_codex(look: Peek) -> bool:
    from transforms.codex import is_codex_event

    return is_codex_event(look.record)
