"""What CrewAI's crews say through OpenInference's CrewAI instrumentation
(openinference-instrumentation-crewai; checked on a one-agent crew's spans,
tests/data/openinference-crewai).

A crew's `kickoff` span and each agent's `_execute_core` span write their output as CrewAI's
`CrewOutput` / `TaskOutput` JSON: `raw` is the answer, and a task output's `description` is the
task it was given (`{"raw": ..., "tasks_output": [{"description": ..., "raw": ...}, ...]}`). Their
inputs hold the agent's settings, not the task: the instrumentation does not trace the model
calls, whose prompt CrewAI composes from the task anyway.
"""

from __future__ import annotations

from typing import Any

__all__ = ["crew_output"]


def crew_output(value: dict[str, Any]) -> tuple[str | None, str | None]:
    """A `CrewOutput` or `TaskOutput` (a decoded JSON object) as (its first task's
    description, its raw answer); (None, None) for anything else."""
    if not {"raw", "pydantic", "json_dict"} <= value.keys():
        return None, None
    tasks = value.get("tasks_output")
    first = tasks[0] if isinstance(tasks, list) and tasks and isinstance(tasks[0], dict) else value
    task = first.get("description")
    raw = value["raw"]
    return (task if isinstance(task, str) else None), (raw if isinstance(raw, str) else None)
