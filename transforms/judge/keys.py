"""The keys a judgement is found again by: a hash of everything that determines it (texts,
metric, prompt, model, parameters), and of an overall score (its metrics' keys and weights)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["cache_key", "score_key"]

_SAMPLING = ("top_p", "seed", "stop_sequences")


def _digest(payload: Any) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def cache_key(
    user_query: str,
    submission: str,
    metric: str,
    metric_class: str,
    prompt_version: str,
    instruction: str,
    model: str | None,
    parameters: Mapping[str, Any],
) -> str:
    """Hash of everything that determines a judgement: texts, metric, prompt, model, parameters.

    `parameters` holds temperature and max_tokens, and top_p, seed and stop_sequences when set
    (unset ones are left out, so keys stored before they existed still match), and the output
    mode when it is native or prompted (the tool call of every earlier judgement is not keyed);
    not max_retries nor the timeout: they do not change a judgement, only whether one is
    obtained.
    """
    keyed = {k: parameters.get(k) for k in ("temperature", "max_tokens")}
    keyed |= {k: parameters[k] for k in _SAMPLING if parameters.get(k) is not None}
    if parameters.get("output_mode") in ("native", "prompted"):
        keyed["output_mode"] = parameters["output_mode"]
    return _digest(
        [
            "judge-v1",
            user_query,
            submission,
            metric,
            metric_class,
            prompt_version,
            instruction,
            model,
            keyed,
        ]
    )


def score_key(metric_keys: Sequence[str], weights: Sequence[float]) -> str:
    """Key of an overall score: its metrics' cache keys and weights."""
    return _digest(["overall-v1", list(metric_keys), [float(w) for w in weights]])
