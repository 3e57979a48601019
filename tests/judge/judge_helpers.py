"""Judge test helpers: a fake OpenAI-compatible server on 127.0.0.1 that injects faults, a
counting FunctionModel, and a run over a DuckDB store."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from pipelines.judge.models import judge_model_factory
from pipelines.judge.results import JudgeRunResult
from pipelines.judge.runner import run_live
from storage.config_files import load_judge_config
from storage.judge.store import DuckDBJudgeSink
from storage.store.duckdb_store import DuckDBStore
from transforms.judge.plan import plan_items
from transforms.judge.resolve import JudgeConfig

__all__ = [
    "FakeServer",
    "Reply",
    "counting_model",
    "fake_server",
    "items",
    "judge_once",
    "responses_reply",
    "serve",
    "text_reply",
    "tool_reply",
    "write_config",
]


@dataclass
class Reply:
    """One scripted answer of the fake server."""

    status: int = 200
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False
    """Close the connection without answering."""


def chat_reply(
    message: dict[str, Any], finish_reason: str, tokens: tuple[int, int], model: str = "judge"
) -> Reply:
    """A chat completion holding `message`, with `tokens` (prompt, completion) as its usage."""
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
    }
    return Reply(body=json.dumps(body))


def tool_reply(arguments: str | dict[str, Any]) -> Reply:
    """A chat completion whose message calls the judgement tool with `arguments`."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "record_judgement", "arguments": args},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return chat_reply(message, "tool_calls", (120, 30))


def error_reply(
    status: int, headers: dict[str, str] | None = None, code: str | None = None
) -> Reply:
    """An OpenAI-style error response."""
    body = {"error": {"message": f"fake error {status}", "type": "fake", "code": code}}
    return Reply(status=status, body=json.dumps(body), headers=headers or {})


class FakeServer:
    """Answers /v1/chat/completions from a script: a function of the request number (1-based)."""

    def __init__(self, script: Callable[[int], Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.seen: list[tuple[str, str]] = []
        """(path, Authorization header) of each request."""
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("content-length", 0))
                payload = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(payload)
                    server.seen.append((self.path, self.headers.get("authorization", "")))
                    number = len(server.requests)
                reply = server.script(number)
                time.sleep(reply.delay_s)
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                data = (reply.body or "").encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def count(self) -> int:
        """Requests received so far."""
        return len(self.requests)


@contextmanager
def serve(script: Callable[[int], Reply]) -> Iterator[FakeServer]:
    """Serve `script` on 127.0.0.1, leaving the environment alone."""
    from pydantic_ai.models import override_allow_model_requests

    server = FakeServer(script)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        with override_allow_model_requests(True):
            yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def text_reply(content: str, finish_reason: str = "stop") -> Reply:
    """A chat completion answering in text."""
    return chat_reply({"role": "assistant", "content": content}, finish_reason, (90, 25))


def responses_reply(arguments: dict[str, Any]) -> Reply:
    """An OpenAI Responses API answer calling the judgement tool."""
    body = {
        "id": "resp_fake",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "gpt-judge",
        "status": "completed",
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "record_judgement",
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        ],
        "parallel_tool_calls": False,
        "tool_choice": "required",
        "tools": [],
        "usage": {
            "input_tokens": 100,
            "output_tokens": 20,
            "total_tokens": 120,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    return Reply(body=json.dumps(body))


@contextmanager
def fake_server(script: Callable[[int], Reply], monkeypatch: Any) -> Iterator[FakeServer]:
    """Serve `script` on 127.0.0.1, with OPENAI_BASE_URL and a dummy key pointing at it."""
    with serve(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-test-key")
        yield server


def counting_model(
    answer: Callable[[int, str], dict[str, Any] | str] | None = None,
) -> tuple[FunctionModel, list[str]]:
    """A FunctionModel calling the judgement tool; returns it and the list of prompts it saw.

    `answer(call_number, prompt)` gives the tool arguments (a dict), or text to answer with.
    """
    seen: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
        seen.append(prompt)
        value = answer(len(seen), prompt) if answer else {"score": 80.0, "comment": "fine"}
        usage = RequestUsage(input_tokens=100, output_tokens=20)
        if isinstance(value, str):
            return ModelResponse(parts=[TextPart(value)], usage=usage)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, value)], usage=usage)

    return FunctionModel(respond), seen


ON_FAKE_SERVER = """
[llm_default]
model = "openai-chat:judge"
max_retries = 0
"""
"""The `[llm_default]` of a judge configuration whose calls go to the fake server
(`fake_server`), without retries."""

BREVITY_METRIC = (
    "from tracegrade.judge import BaseMetric, RuleScore\n"
    "class Brevity(BaseMetric):\n"
    "    def score(self, user_query, submission):\n"
    "        return RuleScore(max(0.0, 100.0 - len(submission)), 'shorter is better')\n"
)
"""A module holding a custom metric, `Brevity`: 100 less one point a character."""


def write_config(tmp_path: Path, text: str) -> Path:
    """A judge configuration file with tiny backoff settings unless the text sets [retry]."""
    if "[retry]" not in text:
        text += "\n[retry]\nbase_delay_s = 0.01\nmax_delay_s = 0.05\ntimeout_s = 5.0\n"
    path = tmp_path / "evaluator.toml"
    path.write_text(text, encoding="utf-8")
    return path


def items(rows: list[tuple[str, str, str]]) -> pl.DataFrame:
    """A judge input table of (item_id, user_query, submission)."""
    return pl.DataFrame(
        {
            "item_id": [r[0] for r in rows],
            "user_query": [r[1] for r in rows],
            "submission": [r[2] for r in rows],
        }
    )


_runs = iter(range(1, 1_000_000))


def judge_once(
    db: Path,
    config: JudgeConfig | Path,
    frame: pl.DataFrame,
    *,
    model: Model | None = None,
    budget_usd: float | None = None,
) -> JudgeRunResult:
    """One live run over `frame` into `db`, with `model` for every metric (else the real one
    pydantic-ai builds for the configured name, pointed at the fake server by the environment)."""
    if not isinstance(config, JudgeConfig):
        config = load_judge_config(config, check_keys=False)
    built: dict[str, Model] = {}

    def factory(name: str) -> Model:
        if model is not None:
            return model
        if name.partition(":")[0] in config.settings.endpoints:
            return judge_model_factory(config.settings.endpoints)(name)
        if name not in built:
            built[name] = infer_model(name)
        return built[name]

    seq = next(_runs)
    with DuckDBStore(db) as store:
        sink = DuckDBJudgeSink(store)
        planned = plan_items(frame, config, sink)
        identity = {
            "run_id": f"run-{seq}",
            "run_seq": seq,
            "source": "test",
            "mode": "live",
            "config_hash": config.config_hash,
        }
        return asyncio.run(
            run_live(planned, config, sink, identity, factory=factory, budget_usd=budget_usd)
        )


class FakeBatchProvider:
    """A provider's batch service that outlives model instances and event loops: batches stay
    `in_progress` until `finish()` answers their requests."""

    def __init__(self, answer: Callable[[str], dict[str, Any]] | None = None) -> None:
        self.answer = answer or (lambda prompt: {"score": 70.0, "comment": "batch"})
        self.encoded: dict[str, Any] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted: list[str] = []
        """custom_ids of every request ever submitted, in order."""

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, self.answer(prompt))],
            usage=RequestUsage(input_tokens=100, output_tokens=20),
        )

    def finish(self) -> None:
        """Run every open batch's requests."""
        from pydantic import TypeAdapter
        from pydantic_ai.models.batch import BatchResult

        responses = TypeAdapter(ModelResponse)
        for stored in self.batches.values():
            if stored["results"] is not None:
                continue
            results = []
            for custom_id, request in stored["requests"]:
                info = AgentInfo(
                    function_tools=[],
                    allow_text_output=False,
                    output_tools=request.model_request_parameters.output_tools,
                    model_settings=None,
                    model_request_parameters=request.model_request_parameters,
                    instructions=None,
                )
                body = responses.dump_json(self.respond(request.messages, info)).decode()
                results.append(BatchResult(custom_id=custom_id, status="succeeded", body=body))
            stored["results"] = results


def fake_batch_model(provider: FakeBatchProvider) -> Model:
    """A new FunctionModel instance whose batch API is `provider`."""
    import uuid
    from datetime import UTC, datetime

    from pydantic import TypeAdapter
    from pydantic_ai.models.batch import Batch, BatchResult, EncodedBatchRequest

    responses = TypeAdapter(ModelResponse)

    class BatchFunctionModel(FunctionModel):
        @property
        def batch_max_requests(self) -> int | None:
            return 3

        async def batch_encode(self, request: Any) -> EncodedBatchRequest:
            token = uuid.uuid4().hex
            provider.encoded[token] = request
            return EncodedBatchRequest(custom_id=request.custom_id, group="fake", body=token)

        async def batch_create(self, requests: Any) -> Batch:
            batch_id = f"batch_{uuid.uuid4().hex[:8]}"
            provider.submitted.extend(r.custom_id for r in requests)
            provider.batches[batch_id] = {
                "requests": [(r.custom_id, provider.encoded.pop(r.body)) for r in requests],
                "results": None,
            }
            return Batch(
                id=batch_id,
                model_name=self.model_name,
                provider_name="fake",
                group="fake",
                status="in_progress",
                created_at=datetime.now(UTC),
                request_count=len(requests),
            )

        async def batch_status(self, batch: Batch) -> Batch:
            ended = provider.batches[batch.id]["results"] is not None
            batch.status = "ended" if ended else "in_progress"
            return batch

        async def batch_results(self, batch: Batch) -> list[BatchResult]:
            return list(provider.batches[batch.id]["results"])

        def batch_decode(self, result: Any, request: Any) -> ModelResponse:
            return responses.validate_json(result.body)

    return BatchFunctionModel(provider.respond)


def judge_batch_once(
    db: Path, config: JudgeConfig | Path, frame: pl.DataFrame, model: Model, *, submit: bool = True
) -> Any:
    """One batch-mode run (collect, then submit) into `db` on a fresh event loop."""
    from pipelines.judge.batch import batch_items, run_batch

    if not isinstance(config, JudgeConfig):
        config = load_judge_config(config, check_keys=False)
    seq = next(_runs)
    with DuckDBStore(db) as store:
        sink = DuckDBJudgeSink(store)
        identity = {
            "run_id": f"run-{seq}",
            "run_seq": seq,
            "source": "test",
            "mode": "batch",
            "config_hash": config.config_hash,
        }
        source = frame if submit else batch_items(sink)
        return asyncio.run(
            run_batch(source, config, sink, identity, factory=lambda name: model, submit=submit)
        )


def block_module(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Make `import module` fail in this process, as on a machine without its package: it
    and its submodules are None in sys.modules, it is gone from its package, and pydantic-ai's
    provider modules that imported it are imported afresh (all undone after the test)."""
    for name in [module, *(n for n in sys.modules if n.startswith(module + "."))]:
        monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]
    parent, _, child = module.rpartition(".")
    if parent in sys.modules and hasattr(sys.modules[parent], child):
        # `from google import genai` takes the attribute an earlier import left
        monkeypatch.delattr(sys.modules[parent], child)
    for name in [n for n in sys.modules if n.startswith("pydantic_ai.providers.")]:
        monkeypatch.delitem(sys.modules, name)
