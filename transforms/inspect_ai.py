"""Inspect AI eval logs as chat trajectories, mapped by the chat mapping with `INSPECT_KEYS`
(docs/formats.md).

An eval log (Inspect's `.json` log, or each `samples/*.json` of its `.eval` zip) holds the
eval (`task`, `model`, `created`) and samples: each sample's `messages` (what the model saw
and said: system, user, assistant with `tool_calls`, tool results with `error`), its `id` and
`epoch`, and its `scores` (scorer name to `{value, answer, explanation}`). A sample is one
trajectory: the first user message is the objective, an assistant's tool calls its calls
(Inspect writes `function` as the name and `arguments` as an object), a tool message with an
`error` a failed call, the `submit` tool's answer or the last assistant text the answer. The
first scorer's value is the outcome, a label: `C` (correct) or true succeeded; `I`
(incorrect), `N` (no answer) or false failed; anything else is unknown (SPEC 1): `P`
(partial), no score, and a number, which is a metric (a closeness of 0.0 is not a failure
label). The model is the agent.
"""

from __future__ import annotations

from typing import Any

from transforms._chat_shapes import as_openai_call

__all__ = ["INSPECT_KEYS", "inspect_samples", "is_inspect_header", "is_inspect_log"]

INSPECT_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "success": "correct",
    "id_fields": ["task", "sample_id", "epoch", "model"],
    "agent_id_field": "model",
    "created_at_field": "created_at",
}
"""The chat mapping's keys for a record of `inspect_samples`."""

_CORRECT = {"C": True, "I": False, "N": False}


def is_inspect_header(value: Any) -> bool:
    """The eval part of a log: `eval` with its `task` and `model`, beside `version`."""
    if not isinstance(value, dict) or not isinstance(value.get("eval"), dict):
        return False
    return "version" in value and "task" in value["eval"] and "model" in value["eval"]


def is_inspect_log(value: Any) -> bool:
    """An Inspect AI eval log as its `.json` file holds it: the header and `samples`."""
    return is_inspect_header(value) and isinstance(value.get("samples"), list)


def _correct(scores: Any) -> bool | None:
    """The first scorer's value as an outcome label; None when it is not one."""
    if not isinstance(scores, dict) or not scores:
        return None
    first = next(iter(scores.values()))
    value = first.get("value") if isinstance(first, dict) else None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _CORRECT.get(value.strip().upper())
    return None


def _message(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    out = {key: message[key] for key in ("role", "content", "tool_call_id") if key in message}
    if isinstance(message.get("tool_calls"), list):
        out["tool_calls"] = [as_openai_call(call, "function") for call in message["tool_calls"]]
    error = message.get("error")
    if message.get("role") == "tool" and isinstance(error, dict):
        out["is_error"] = True  # Inspect records a failed call as the result's `error`
        if not out.get("content"):
            out["content"] = str(error.get("message") or error.get("type") or "error")
    return out


def inspect_samples(header: dict[str, Any], samples: list[Any]) -> list[Any]:
    """Each sample of an eval log as a chat record; a sample that is not an object is kept
    as it is, for the mapping to reject with its reason."""
    evaluation = header["eval"]
    records: list[Any] = []
    for sample in samples:
        if not isinstance(sample, dict):
            records.append(sample)
            continue
        messages = sample.get("messages")
        records.append(
            {
                "messages": [_message(m) for m in messages]
                if isinstance(messages, list)
                else messages,
                "task": evaluation.get("task"),
                "sample_id": sample.get("id"),
                "epoch": sample.get("epoch"),
                "model": evaluation.get("model"),
                "correct": _correct(sample.get("scores")),
                "created_at": evaluation.get("created"),
            }
        )
    return records
