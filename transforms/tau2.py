"""tau2-bench results files as chat trajectories, mapped by the chat mapping with `TAU2_KEYS`
(docs/formats.md).

tau2-bench (sierra-research/tau2-bench) saves a run as one JSON document (`Results`): the
run's `info` (the agent's `implementation` and `llm`, the user simulator's, the domain's
`environment_info.domain_name`), its `tasks`, and `simulations`, one a task and trial: `id`,
`task_id`, `trial`, `start_time`, `reward_info.reward` and `messages`. Its messages are
OpenAI's but for the tool calls: an assistant's `tool_calls` hold `id`, `name`, `arguments`
(an object) and `requestor`; a tool message gives the call's id as its own `id`, the result
as `content`, and `error` true for a call that failed.

A simulation is one trajectory: the first user message the objective (the agent speaks
first, a greeting, which is a thought), the assistant's tool calls its calls, a tool message
flagged `error` a failed call, the last assistant text the answer; the reward the outcome
(1 succeeded, anything less failed: tau2-bench's own success), the agent's `llm` (else its
`implementation`) the agent, the domain the task domain. The user simulator's own tool calls
(the telecom domain's device actions, `requestor` user) and their results are the user's side
of the conversation, as its messages are: not steps of the agent. Not read: the tasks, the
reward's breakdown, costs, `termination_reason`, reviews.
"""

from __future__ import annotations

from typing import Any

from transforms._chat_shapes import as_openai_call

__all__ = ["TAU2_KEYS", "is_tau2_info", "is_tau2_results", "tau2_simulations"]

TAU2_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "success": "reward == 1",
    "id_fields": ["id"],
    "agent_id_field": "agent",
    "task_domain_field": "domain",
    "created_at_field": "start_time",
}
"""The chat mapping's keys for a record of `tau2_simulations`."""


def is_tau2_info(value: Any) -> bool:
    """A results file's `info`: the agent's, the user simulator's and the environment's."""
    return isinstance(value, dict) and all(
        isinstance(value.get(key), dict) for key in ("agent_info", "user_info", "environment_info")
    )


def is_tau2_results(value: Any) -> bool:
    """A tau2-bench results document: its `info` and a list of `simulations` whose first holds
    `messages` and a `task_id`, or no `simulations` at all (tau2-bench's directory layout
    writes each simulation to a file of its own beside `results.json`)."""
    if not isinstance(value, dict) or not is_tau2_info(value.get("info")):
        return False
    simulations = value.get("simulations", [])
    if not isinstance(simulations, list):
        return False
    first = simulations[0] if simulations else None
    return first is None or (isinstance(first, dict) and {"messages", "task_id"} <= set(first))


def _by_user(call: Any) -> bool:
    return isinstance(call, dict) and call.get("requestor") == "user"


def _users_own(message: Any) -> bool:
    """A result of the user simulator's own tool call, or a user message that only makes
    such calls: the user's side, not a message of the conversation the agent is scored on."""
    if not isinstance(message, dict):
        return False
    if message.get("role") == "tool":
        return _by_user(message)
    content = message.get("content")
    return message.get("role") == "user" and bool(message.get("tool_calls")) and not content


def _message(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    role = message.get("role")
    if role == "tool":
        out = {"role": "tool", "tool_call_id": message.get("id"), "content": message.get("content")}
        if message.get("error") is True:
            out["is_error"] = True
        return out
    out = {key: message[key] for key in ("role", "content") if key in message}
    calls = message.get("tool_calls")
    if role == "assistant" and isinstance(calls, list):
        out["tool_calls"] = [as_openai_call(call, "name") for call in calls if not _by_user(call)]
    elif role == "assistant" and calls is not None:
        out["tool_calls"] = calls  # not a list: the mapping says why
    return out


def _agent(info: dict[str, Any]) -> Any:
    agent = info.get("agent_info") or {}
    return agent.get("llm") or agent.get("implementation")


def tau2_simulations(document: dict[str, Any]) -> list[Any]:
    """Each simulation of a results document as a chat record; one that is not an object is
    kept as it is, for the mapping to reject with its reason."""
    info = document["info"]
    agent, domain = _agent(info), (info.get("environment_info") or {}).get("domain_name")
    records: list[Any] = []
    for simulation in document.get("simulations", []):
        if not isinstance(simulation, dict):
            records.append(simulation)
            continue
        messages = simulation.get("messages")
        if isinstance(messages, list):
            messages = [_message(m) for m in messages if not _users_own(m)]
        records.append(
            {
                "id": simulation.get("id"),
                "task_id": simulation.get("task_id"),
                "trial": simulation.get("trial"),
                "start_time": simulation.get("start_time"),
                "reward": (simulation.get("reward_info") or {}).get("reward"),
                "agent": agent,
                "domain": domain,
                "messages": messages,
            }
        )
    return records
