"""AgentBench's own outputs (THUDM/AgentBench writes `{output}/{agent}/{task}/runs.jsonl`,
`error.jsonl` and `overall.json`) as chat trajectories, mapped by the chat mapping with
`AGENTBENCH_KEYS` (docs/formats.md).

Each line of `runs.jsonl` is one sample: `index`, `error`, `info`, `output` (`index`, `status`,
`result`, `history`: turns of `role` user or agent, `content` text) and `time` (`timestamp` in
milliseconds). `overall.json` is what the task's grading made of the run: its
`custom.raw_results` hold each sample's `index`, `status`, `result` and `history` again, a
completed one's status its verdict (`completedCorrect`, `completedIncorrect`). The agent acts
in text, in each task's own syntax; MedAgentBench's, the FHIR task's, is read as calls: `GET
url?...` and `POST url` with a JSON payload (often in a fenced block) are calls of `GET` and
`POST` whose result is the next user turn, `FINISH([...])` the answer. Other tasks' actions
are the agent's text. The first user turn is the task's prompt: its last `Question:` line
(MedAgentBench's) is the objective where it has one, else the whole turn. The status says how
the sample ended: `completedCorrect` succeeded; `completed` is no verdict (the outcome
unknown, unless the `overall.json` beside it grades it); any other status (`completedIncorrect`,
`agent invalid action`, `task limit reached`, ...) a failed run. A line of `error.jsonl`
(`error` set, no history) holds no trajectory, which the mapping says. The agent and the task
are named by the folders AgentBench writes the files in (`storage.inputs.agentbench_files`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from transforms._chat_shapes import assistant_reply, epoch_text

__all__ = [
    "AGENTBENCH_KEYS",
    "agentbench_record",
    "agentbench_results",
    "agentbench_verdicts",
    "is_agentbench_output",
    "is_agentbench_overall",
]

AGENTBENCH_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "success": "succeeded",
    "id_fields": ["sample"],
    "created_at_field": "started",
    "objective_field": "question",
    "agent_id_field": "agent",
    "task_domain_field": "task",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `agentbench_record`."""

_FENCE = re.compile(r"^\s*```[A-Za-z_]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_FINISH = re.compile(r"^FINISH\((.*)\)\s*$", re.DOTALL)


def is_agentbench_output(value: Any) -> bool:
    """One line of an AgentBench output: `index`, `error`, `info`, `output` (with `status`
    and `history`) and `time`."""
    output = value.get("output") if isinstance(value, dict) else None
    return (
        isinstance(output, dict)
        and "status" in output
        and "history" in output
        and {"index", "error", "info", "time"} <= value.keys()
    )


def is_agentbench_overall(value: Any) -> bool:
    """An AgentBench `overall.json`: `total`, `validation` (the share of each status) and
    `custom`, a task's grading, holding each sample as `raw_results` (MedAgentBench's)."""
    if not isinstance(value, dict):
        return False
    custom = value.get("custom")
    return (
        isinstance(value.get("validation"), dict)
        and "total" in value
        and isinstance(custom, dict)
        and isinstance(custom.get("raw_results"), list)
    )


def agentbench_results(document: Any) -> list[Any]:
    """The graded samples of an `overall.json` (`is_agentbench_overall`), in its order."""
    return list(document["custom"]["raw_results"])


def agentbench_verdicts(document: Any) -> dict[Any, str]:
    """Each graded sample's status by its index, from an `overall.json`."""
    return {
        result["index"]: result["status"]
        for result in agentbench_results(document)
        if isinstance(result, dict)
        and isinstance(result.get("index"), int | str)
        and isinstance(result.get("status"), str)
    }


def _action(text: str) -> str:
    """An agent turn's action: the code of a turn that is one fenced block, else the turn."""
    fenced = _FENCE.match(text)
    return (fenced.group(1) if fenced else text).strip()


def _call(action: str, number: int) -> dict[str, Any] | None:
    """MedAgentBench's `GET url` or `POST url` with its payload as a call; None otherwise."""
    method, _, rest = action.partition(" ")
    if method not in ("GET", "POST") or not rest.strip():
        return None
    url, _, body = rest.partition("\n")
    arguments: dict[str, Any] = {"url": url.strip()}
    if body.strip():
        try:
            arguments["payload"] = json.loads(body)
        except ValueError:
            arguments["payload"] = body.strip()
    return assistant_reply(
        None, [(f"call-{number}", method, json.dumps(arguments, ensure_ascii=False))]
    )


def _messages(history: list[Any]) -> list[Any]:
    messages: list[Any] = []
    calling = None  # the id of the call the next user turn answers
    for number, turn in enumerate(history):
        if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
            messages.append(turn)  # the mapping says why
            continue
        text = turn["content"]
        if turn.get("role") != "agent":
            if calling is not None:
                messages.append({"role": "tool", "tool_call_id": calling, "content": text})
            else:
                messages.append({"role": "user", "content": text})
            calling = None
            continue
        action = _action(text)
        call = _call(action, number)
        finish = _FINISH.match(action)
        if call is not None:
            messages.append(call)
            calling = call["tool_calls"][0]["id"]
        else:
            messages.append({"role": "assistant", "content": finish.group(1) if finish else text})
            calling = None
    return messages


def _started(time: Any) -> str | None:
    """The sample's time (`time.timestamp`, milliseconds) as ISO-8601 text in UTC."""
    return epoch_text(time.get("timestamp") if isinstance(time, dict) else None, 1000)


def agentbench_record(
    value: Any,
    agent: str | None = None,
    task: str | None = None,
    verdicts: dict[Any, str] | None = None,
) -> Any:
    """One sample (a line of `runs.jsonl`, `is_agentbench_output`, or a graded sample of
    `overall.json`) as a chat record: its messages, `sample` (its index, after the task where
    one is named), `question`, `started`, `agent`, `task` and `succeeded` (from its status,
    else the verdict `verdicts` holds for its index; absent, unknown, for a sample completed
    and not graded); anything else as it is."""
    if is_agentbench_output(value):
        output, started = value["output"], _started(value.get("time"))
    elif isinstance(value, dict) and {"index", "status", "history"} <= value.keys():
        output, started = value, None
    else:
        return value
    history = output.get("history")
    index = value.get("index")
    record: dict[str, Any] = {
        "messages": _messages(history) if isinstance(history, list) else history,
        "sample": index if task is None or index is None else f"{task}/{index}",
    }
    named = {"started": started, "agent": agent, "task": task}
    record.update((key, text) for key, text in named.items() if text is not None)
    first = next(
        (
            t.get("content")
            for t in history or []
            if isinstance(t, dict) and t.get("role") == "user"
        ),
        None,
    )
    if isinstance(first, str):
        at = first.rfind("Question:")
        asked = first[at + len("Question:") :].strip() if at >= 0 else ""
        record["question"] = asked or first
    status = output.get("status")
    if status == "completed" and verdicts and isinstance(index, int | str):
        status = verdicts.get(index, status)
    if isinstance(status, str) and status != "completed":
        record["succeeded"] = status == "completedCorrect"
    return record
