"""Every flow as a Prefect flow: what deployments (prefect.yaml) and runs with a Prefect API
start. Each one runs its plain flow body with `prefect_mode`, so the body's steps become task
runs and its summary an artifact; the tables it writes are the same as the plain body's.

Importing this module imports Prefect; the command line does so only when a Prefect API is
configured (or `--prefect` is given), so ad-hoc runs pay no start-up for it.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from prefect import Flow, flow

from pipelines import backfill as _backfill
from pipelines import chat_import, confidence, operations, phoenix, score
from pipelines.judge import flow as _judge
from pipelines.runs import prefect_mode

__all__ = [
    "backfill",
    "confidence_traces",
    "import_and_score_chat",
    "import_chat",
    "judge_collect",
    "judge_traces",
    "pull_phoenix",
    "score_operations",
    "score_traces",
]

P = ParamSpec("P")
R = TypeVar("R")


def _as_flow(body: Callable[P, R], name: str) -> Flow[P, R]:
    """`body` as a Prefect flow named `name`, its steps run as task runs."""

    @functools.wraps(body)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with prefect_mode():
            return body(*args, **kwargs)

    # the body's annotations are strings of its own module; Prefect validates parameters
    # with the signature, so give the wrapper the body's with the types resolved
    run.__signature__ = inspect.signature(body, eval_str=True)  # type: ignore[attr-defined]
    run.__annotations__ = typing.get_type_hints(body)
    made: Any = flow(name=name, persist_result=False, log_prints=False)(run)
    return made  # type: ignore[no-any-return]


score_traces = _as_flow(score.score_traces, "score_traces")
backfill = _as_flow(_backfill.backfill, "backfill")
confidence_traces = _as_flow(confidence.confidence_traces, "confidence_traces")
score_operations = _as_flow(operations.score_operations, "score_operations")
judge_traces = _as_flow(_judge.judge_traces, "judge_traces")
judge_collect = _as_flow(_judge.judge_collect, "judge_collect")
import_chat = _as_flow(chat_import.import_chat, "import_chat")
import_and_score_chat = _as_flow(chat_import.import_and_score_chat, "import_and_score_chat")
pull_phoenix = _as_flow(phoenix.pull_phoenix, "pull_phoenix")
