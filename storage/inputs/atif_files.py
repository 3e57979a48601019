"""ATIF trajectories read as chat records (`transforms.atif` turns one into one), with the
outcome Harbor's verifier gave where the trajectory sits in a Harbor trial: Harbor writes a
trial's agent trajectory to `<trial>/agent/trajectory.json` and its result to
`<trial>/result.json` (`verifier_result.rewards.reward`; also `<trial>/verifier/reward.json`).
A trajectory elsewhere has no outcome."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storage.errors import InputError
from storage.inputs.chat_files import checked_record, json_document
from transforms.atif import atif_record, is_atif_trajectory
from transforms.chat import ChatRecord

__all__ = ["iter_atif_records"]


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _trial_reward(trajectory: Path) -> float | None:
    """The verifier's reward of the Harbor trial a trajectory belongs to (`result.json`, else
    `verifier/reward.json`, beside its `agent/` folder); None where there is none."""
    if trajectory.parent.name != "agent":
        return None
    trial = trajectory.parent.parent
    for path, keys in (
        (trial / "result.json", ("verifier_result", "rewards", "reward")),
        (trial / "verifier" / "reward.json", ("reward",)),
    ):
        try:
            found: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for key in keys:
            found = found.get(key) if isinstance(found, dict) else None
        if _number(found) is not None:
            return _number(found)
    return None


def iter_atif_records(path: str | Path) -> Iterator[ChatRecord]:
    """The trajectory as one chat record, with its trial's reward where it has one.

    Raises:
        InputError: the file is not readable JSON or not an ATIF trajectory.
    """
    source = Path(path)
    document, escapes = json_document(source, "give the trajectory.json the agent wrote")
    if not is_atif_trajectory(document):
        raise InputError(f"{source} is not an ATIF trajectory (schema_version ATIF-..., steps)")
    record = atif_record(document, _trial_reward(source))
    yield checked_record(1, 0, record, escapes, "the trajectory")
