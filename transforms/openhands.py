"""OpenHands trajectories (the event stream a conversation saves: a JSON array of events) as
chat trajectories, mapped by the chat mapping with `OPENHANDS_KEYS` (docs/formats.md).

Each event has an `id`, a `timestamp`, a `source` (user, agent, environment) and either an
`action` (message, run, edit, read, finish, ...) with its `args`, or an `observation` (the
result, its `cause` the action's id) with its `content` and `extras`. An agent action that a
model's tool call made carries `tool_call_metadata` (`function_name`, `tool_call_id`, and the
model's response, whose call holds the arguments as the model gave them). The trajectory:
- a user message is a user message (the first is the objective);
- an agent tool action is an assistant message: its `thought` the text, one tool call (the
  function, its arguments as the model gave them, else the action's args);
- its observation answers that call; an `error` observation, or a command that exited with
  a code other than 0, is a failed call;
- an agent message, and `finish` (its message, the answer), are the assistant's text;
- environment events, state changes, empty observations and the system prompt are not steps.
OpenHands records no outcome in a trajectory: unknown (SPEC 1). The model is the agent.

The evaluation harness's `output.jsonl` holds one evaluated instance a line (`EvalOutput`:
`instance_id`, `instruction`, `history`, `test_result`, `metadata`, `error`; before August
2024 `id` and a benchmark's own keys): its `history` is the same event stream, or (before
September 2024, and for most benchmarks still) `[action, observation]` pairs, in which each
observation answers its action. Actions then made without a model's tool call metadata are the
agent's calls all the same. The outcome is the benchmark's where the line holds it: a merged
SWE-bench `report` (or `test_result.report`) with `resolved`, or a boolean `test_result.result`
(logic reasoning, GPQA); otherwise (a SWE-bench run before its evaluation) unknown. A
SWE-bench patch (`test_result.git_patch`) or the `final_message` is the answer; the model
named in `metadata` (`llm_config.model`, `model_name`; V1's `llm.model`) the agent.

OpenHands V1 (the software-agent-sdk, from October 2025; its benchmarks harness writes the same
`output.jsonl`) types each event by `kind`: a `MessageEvent` holds an `llm_message` (the user's
or the agent's text), an `ActionEvent` one tool call (`tool_name`, `tool_call_id`, the model's
`tool_call.arguments`, its `thought` as text parts, the `action` object), an `ObservationEvent`
its result (`observation`: `content` text parts and `is_error`, or, before, `output` with
`error` and an `exit_code`), an `AgentErrorEvent` a call the scaffold refused (failed), a
`UserRejectObservation` one the user refused (failed). A `FinishAction`'s `message` is the
answer; the system prompt and state changes are not steps.
"""

from __future__ import annotations

import json
from typing import Any

from transforms._chat_shapes import parts_text

__all__ = [
    "OPENHANDS_KEYS",
    "is_openhands_state",
    "state_model",
    "is_openhands_event",
    "is_openhands_output",
    "openhands_output_record",
    "openhands_record",
]

OPENHANDS_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "success": "resolved",
    "id_fields": ["task", "started"],
    "agent_id_field": "model",
    "created_at_field": "started",
    "answer_field": "answer",
}
"""The chat mapping's keys for a record of `openhands_record` (`resolved` and `answer` only
where an evaluation output line holds the benchmark's outcome and its patch or final
message)."""

_SKIPPED_ACTIONS = frozenset({"system", "change_agent_state", "recall", "null"})

_V1_KINDS = frozenset(
    {
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
        "AgentErrorEvent",
        "UserRejectObservation",
        "SystemPromptEvent",
        "ConversationStateUpdateEvent",
        "PauseEvent",
        "Condensation",
        "CondensationRequest",
        "CondensationSummaryEvent",
    }
)
"""The event kinds of OpenHands V1 (openhands-sdk's `Event` subclasses)."""


def is_openhands_event(value: Any) -> bool:
    """One event of an OpenHands event stream: an id, a source, and an action or observation
    (or, in V1, a kind of event)."""
    return (
        isinstance(value, dict)
        and "id" in value
        and value.get("source") in ("user", "agent", "environment")
        and ("action" in value or "observation" in value or value.get("kind") in _V1_KINDS)
    )


def is_openhands_state(value: Any) -> bool:
    """An OpenHands V1 conversation's `base_state.json` (the software-agent-sdk's
    `ConversationState`): its `id`, its `agent` with an `llm`, its `execution_status`. The
    conversation's events are the `events/event-*.json` files beside it."""
    agent = value.get("agent") if isinstance(value, dict) else None
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and isinstance(agent, dict)
        and isinstance(agent.get("llm"), dict)
        and "execution_status" in value
    )


def state_model(state: dict[str, Any]) -> str | None:
    """The model a V1 conversation's agent runs on (`agent.llm.model`)."""
    model = state["agent"]["llm"].get("model")
    return model if isinstance(model, str) and model else None


def _v1_failed(observation: dict[str, Any]) -> bool:
    """A V1 tool result that says it failed: `is_error`, an `error` (a flag or a message), or
    a command's exit code other than 0 (-1: still running)."""
    if observation.get("is_error") is True or observation.get("error") not in (None, False, ""):
        return True
    return _exited_failing(observation)


def _v1_call(event: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    """A V1 action event's tool call as a chat message: its thought, the call as the model
    made it (else the action's fields)."""
    found = event.get("tool_call")
    call = found if isinstance(found, dict) else {}
    arguments = call.get("arguments")
    if not isinstance(arguments, str):
        given = {key: value for key, value in action.items() if key != "kind"}
        arguments = json.dumps(given, sort_keys=True, default=str)
    function = {"name": event.get("tool_name") or call.get("name"), "arguments": arguments}
    return {
        "role": "assistant",
        "content": parts_text(event.get("thought")),
        "tool_calls": [{"id": event.get("tool_call_id"), "type": "function", "function": function}],
    }


def _v1_message(event: dict[str, Any]) -> dict[str, Any] | None:
    """A V1 event (`_V1_KINDS`) as a chat message; None for one that is not a step."""
    kind, source = event.get("kind"), event.get("source")
    found = event.get("observation") if kind == "ObservationEvent" else event.get("action")
    value: dict[str, Any] = found if isinstance(found, dict) else {}
    if kind == "MessageEvent" and source in ("user", "agent"):
        message = event.get("llm_message")
        text = parts_text(message.get("content") if isinstance(message, dict) else None)
        return {"role": "user" if source == "user" else "assistant", "content": text}
    if kind == "ActionEvent":
        if value.get("kind") == "FinishAction":
            return {"role": "assistant", "content": value.get("message") or ""}
        return _v1_call(event, value)
    if kind == "ObservationEvent" and value.get("kind") != "FinishObservation":
        text = parts_text(value.get("content")) or value.get("output") or ""
        failed = _v1_failed(value)
    elif kind == "AgentErrorEvent":
        text, failed = event.get("error") or "", True
    elif kind == "UserRejectObservation":
        text, failed = f"Action rejected: {event.get('rejection_reason') or ''}", True
    else:
        return None
    result = {"role": "tool", "tool_call_id": event.get("tool_call_id"), "content": text}
    return {**result, "is_error": True} if failed else result


def _model_arguments(metadata: dict[str, Any]) -> str | None:
    """The arguments of the call `tool_call_id` as the model's response gave them."""
    response = metadata.get("model_response")
    choices = response.get("choices") if isinstance(response, dict) else None
    for choice in choices if isinstance(choices, list) else []:
        message = choice.get("message") if isinstance(choice, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if call.get("id") == metadata.get("tool_call_id") and isinstance(function, dict):
                arguments = function.get("arguments")
                return arguments if isinstance(arguments, str) else None
    return None


def _model(events: list[Any]) -> str | None:
    for event in events:
        metadata = event.get("tool_call_metadata") if isinstance(event, dict) else None
        response = metadata.get("model_response") if isinstance(metadata, dict) else None
        if isinstance(response, dict) and isinstance(response.get("model"), str):
            return str(response["model"])
    return None


def _exited_failing(fields: Any) -> bool:
    """A command's result whose exit code (its own `exit_code`, else its `metadata`'s) is
    other than 0 (-1: still running)."""
    if not isinstance(fields, dict):
        return False
    code = fields.get("exit_code")
    metadata = fields.get("metadata")
    if code is None and isinstance(metadata, dict):
        code = metadata.get("exit_code")
    return isinstance(code, int) and code not in (0, -1)


def _failed(event: dict[str, Any]) -> bool:
    return event.get("observation") == "error" or _exited_failing(event.get("extras"))


def _action(event: dict[str, Any]) -> dict[str, Any] | None:
    """An action as a chat message; None for one that is not a step."""
    found = event.get("args")
    args: dict[str, Any] = found if isinstance(found, dict) else {}
    action = event.get("action")
    if event.get("source") == "user" and action == "message":
        return {"role": "user", "content": args.get("content", event.get("message"))}
    if event.get("source") != "agent" or action in _SKIPPED_ACTIONS:
        return None
    if action in ("message", "finish"):
        text = args.get("content") if action == "message" else None
        return {"role": "assistant", "content": text or event.get("message") or ""}
    metadata = event.get("tool_call_metadata")
    if not isinstance(metadata, dict):
        return None  # an action no model call made (the runtime's own): not the agent's step
    given = {key: value for key, value in args.items() if key != "thought"}
    arguments = _model_arguments(metadata) or json.dumps(given, sort_keys=True, default=str)
    call = {
        "id": metadata.get("tool_call_id"),
        "type": "function",
        "function": {"name": metadata.get("function_name") or action, "arguments": arguments},
    }
    return {"role": "assistant", "content": args.get("thought") or "", "tool_calls": [call]}


def openhands_record(events: list[Any]) -> dict[str, Any]:
    """An OpenHands event stream as one chat record: its messages, its first user message
    as `task`, its first event's time as `started`, the model as `model`."""
    messages: list[Any] = []
    for event in events:
        if not isinstance(event, dict):
            messages.append(event)  # the mapping says why
        elif event.get("kind") in _V1_KINDS:
            message = _v1_message(event)
            if message is not None:
                messages.append(message)
        elif "action" in event:
            message = _action(event)
            if message is not None:
                messages.append(message)
        else:
            metadata = event.get("tool_call_metadata")
            if event.get("source") == "agent" and isinstance(metadata, dict):
                result: dict[str, Any] = {
                    "role": "tool",
                    "tool_call_id": metadata.get("tool_call_id"),
                    "content": event.get("content") or event.get("message") or "",
                }
                if _failed(event):
                    result["is_error"] = True
                messages.append(result)
    task = next(
        (m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"),
        None,
    )
    first = next((e for e in events if isinstance(e, dict) and e.get("timestamp")), {})
    return {
        "messages": messages,
        "task": task,
        "started": first.get("timestamp"),
        "model": _model(events),
    }


def is_openhands_output(value: Any) -> bool:
    """One line of the evaluation harness's `output.jsonl`: an instance's id, its history and
    its test result."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("history"), list)
        and "test_result" in value
        and ("instance_id" in value or "id" in value)
    )


def _flat_history(history: list[Any]) -> list[Any]:
    """The history as one event stream: flat as it is, or `[action, observation]` pairs laid
    out in turn, each pair's agent action given the call id its observation answers (the
    actions of those years carry no tool call metadata)."""
    events: list[Any] = []
    for number, item in enumerate(history):
        if not (isinstance(item, list) and len(item) == 2):
            events.append(item)
            continue
        action, observation = item
        call = (
            isinstance(action, dict)
            and action.get("source") == "agent"
            and action.get("action") not in (*_SKIPPED_ACTIONS, "message", "finish")
            and "tool_call_metadata" not in action
            and isinstance(observation, dict)
        )
        if call:
            metadata = {"tool_call_id": f"pair-{number}", "function_name": action["action"]}
            action = {**action, "tool_call_metadata": metadata}
            observation = {**observation, "source": "agent", "tool_call_metadata": metadata}
        events += [action, observation]
    return events


def _outcome(value: dict[str, Any]) -> bool | None:
    """The benchmark's outcome where the line holds one: `resolved` of a SWE-bench report,
    a boolean `test_result.result`; else None."""
    result = value.get("test_result")
    tested = result if isinstance(result, dict) else {}
    for report in (value.get("report"), tested.get("report")):
        if isinstance(report, dict) and isinstance(report.get("resolved"), bool):
            return bool(report["resolved"])
    found = tested.get("result")
    return found if isinstance(found, bool) else None


def openhands_output_record(value: Any) -> Any:
    """A line of `output.jsonl` (`is_openhands_output`) as one chat record, as
    `openhands_record` makes one of its history, with the benchmark's outcome as `resolved`,
    the patch or final message as its `answer`, the instruction as the task where
    no user message says it, and the model the line's metadata names; anything else as it is
    (the mapping says why)."""
    if not is_openhands_output(value):
        return value
    record = openhands_record(_flat_history(value["history"]))
    result = value.get("test_result")
    tested = result if isinstance(result, dict) else {}
    answer = tested.get("git_patch") or value.get("final_message")
    if isinstance(answer, str) and answer.strip():
        record["answer"] = answer
    if record["task"] is None and isinstance(value.get("instruction"), str):
        record["task"] = value["instruction"]
        record["messages"].insert(0, {"role": "user", "content": value["instruction"]})
    found = value.get("metadata")
    metadata = found if isinstance(found, dict) else {}
    llm = metadata.get("llm_config") or metadata.get("llm")  # V1: `llm`
    model = llm.get("model") if isinstance(llm, dict) else metadata.get("model_name")
    if isinstance(model, str) and model:
        record["model"] = model
    outcome = _outcome(value)
    if outcome is not None:
        record["resolved"] = outcome
    return record
