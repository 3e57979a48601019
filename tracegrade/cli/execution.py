"""Where a command's flow runs: in this process, or as Prefect flow runs.

With no Prefect API configured (PREFECT_API_URL unset) a command runs its flow in this process:
no server starts and Prefect is not imported. With an API configured, or `--prefect`, the
flow runs as a Prefect flow run with its task runs and artifacts; `--prefect` without an API,
and a Dask fan-out (which needs Prefect's task runner), start a temporary API that dies with
this process.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["flow", "flow_mode"]

_BODIES = {
    "score_traces": "pipelines.score",
    "backfill": "pipelines.backfill",
    "confidence_traces": "pipelines.confidence",
    "score_operations": "pipelines.operations",
    "judge_traces": "pipelines.judge.flow",
    "judge_collect": "pipelines.judge.flow",
    "import_chat": "pipelines.chat_import",
}


@contextmanager
def flow_mode(prefect: bool) -> Iterator[bool]:
    """Yields True when flows run as Prefect flow runs: when a Prefect API is configured, or
    `prefect` asks for it (then a temporary API is started for the block)."""
    if os.environ.get("PREFECT_API_URL"):
        yield True
    elif prefect:
        from pipelines.prefect_server import temporary_prefect_api

        with temporary_prefect_api():
            yield True
    else:
        yield False


def flow(name: str, prefect: bool) -> Callable[..., Any]:
    """The flow `name`: its Prefect flow (`pipelines.flows`), or its plain body."""
    module = "pipelines.flows" if prefect else _BODIES[name]
    found: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return found
