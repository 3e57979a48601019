"""The seed's in-memory evaluator (tracegrade.evaluator): one request through Evaluator.evaluate
with a FunctionModel and through the fake OpenAI-compatible server, the typed errors, the
seed's entities, and the same scores as the batch judge."""

from __future__ import annotations

import asyncio
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import duckdb
import pytest
from judge_helpers import (
    Reply,
    block_module,
    error_reply,
    fake_server,
    items,
    judge_once,
    tool_reply,
)
from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from tracegrade.evaluator import (
    BaseMetric,
    CustomMetricError,
    EvaluationConfig,
    EvaluationRequest,
    EvaluationResult,
    Evaluator,
    EvaluatorAPIError,
    JudgeConfigError,
    MetricFailedError,
    MetricScore,
    MissingApiKeyError,
    ModelCallError,
    ModelFormatError,
    ProviderPackageError,
    TracegradeError,
    WeightValidationError,
)
from transforms.judge.metrics import ClarityCoherence, Coverage, Relevance

ROOT = Path(__file__).resolve().parents[2]
QUERY = "What are the benefits of using Python for data analysis?"
ANSWER = "Python has pandas and numpy,\nand a large community.  "

THREE = """
[llm_default]
model = "openai-chat:judge"
max_retries = 1

[[metrics]]
name = "ClarityCoherence"
weight = 0.4
temperature = 0.2

[[metrics]]
name = "Coverage"
weight = 0.3

[[metrics]]
name = "Relevance"
weight = 0.3
top_p = 0.9
seed = 42

[retry]
base_delay_s = 0.01
max_delay_s = 0.02
timeout_s = 5.0
"""

SCORES = {
    ClarityCoherence.instruction: 85.0,
    Coverage.instruction: 80.5,
    Relevance.instruction: 90.25,
}


def write(tmp_path: Path, text: str = THREE) -> Path:
    path = tmp_path / "evaluator.toml"
    path.write_text(text, encoding="utf-8")
    return path


def scripted() -> tuple[FunctionModel, list[dict[str, Any]]]:
    """A FunctionModel scoring by the metric's instruction; records what each request held."""
    seen: list[dict[str, Any]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        instruction = request.instructions or ""
        seen.append(
            {
                "instructions": instruction,
                "prompt": str(request.parts[-1].content),
                "settings": dict(info.model_settings or {}),
            }
        )
        score = SCORES.get(instruction, 50.0)
        args = {"score": score, "comment": f"  comment {len(seen)}  "}
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, args)],
            usage=RequestUsage(input_tokens=10, output_tokens=5),
        )

    return FunctionModel(respond), seen


def test_evaluate_with_a_function_model_field_by_field(tmp_path: Path) -> None:
    model, seen = scripted()
    evaluator = Evaluator(write(tmp_path), model=model)
    result = evaluator.evaluate(EvaluationRequest(user_query=QUERY, submission=ANSWER))
    assert isinstance(result, EvaluationResult)
    assert [type(m) for m in result.metrics] == [MetricScore] * 3
    assert [m.metric_name for m in result.metrics] == ["ClarityCoherence", "Coverage", "Relevance"]
    assert [m.score for m in result.metrics] == [85.0, 80.5, 90.25]
    assert [m.evaluator_comment for m in result.metrics] == ["comment 1", "comment 2", "comment 3"]
    assert result.overall_score == round(0.4 * 85.0 + 0.3 * 80.5 + 0.3 * 90.25, 2) == 85.22
    assert set(result.model_dump()) == {"metrics", "overall_score"}
    # Metrics in order, each with its own prompt and parameters, the texts as given.
    assert [s["instructions"] for s in seen] == [
        ClarityCoherence.instruction,
        Coverage.instruction,
        Relevance.instruction,
    ]
    assert all(QUERY in s["prompt"] and ANSWER in s["prompt"] for s in seen)
    assert [s["settings"].get("temperature") for s in seen] == [0.2, 0.0, 0.0]
    assert (seen[2]["settings"]["top_p"], seen[2]["settings"]["seed"]) == (0.9, 42)
    assert "top_p" not in seen[0]["settings"]
    awaited = asyncio.run(
        evaluator.aevaluate(EvaluationRequest(user_query=QUERY, submission=ANSWER))
    )
    assert [m.score for m in awaited.metrics] == [85.0, 80.5, 90.25]
    assert [m.evaluator_comment for m in awaited.metrics] == ["comment 4", "comment 5", "comment 6"]
    assert awaited.overall_score == result.overall_score


def test_evaluate_through_the_fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {1: 70, 2: 503, 3: 80, 4: 90}

    def script(n: int) -> Reply:
        if answers[n] == 503:
            return error_reply(503)
        return tool_reply({"score": answers[n], "comment": f"judged {n}"})

    with fake_server(script, monkeypatch) as server:
        evaluator = Evaluator(write(tmp_path))
        result = evaluator.evaluate(
            EvaluationRequest(user_query=QUERY, submission=ANSWER, team_id=" team-a ")
        )
    assert server.count == 4  # Coverage's first attempt got a 503 and was retried
    assert [(m.metric_name, m.score, m.evaluator_comment) for m in result.metrics] == [
        ("ClarityCoherence", 70.0, "judged 1"),
        ("Coverage", 80.0, "judged 3"),
        ("Relevance", 90.0, "judged 4"),
    ]
    assert result.overall_score == 0.4 * 70 + 0.3 * 80 + 0.3 * 90 == 79.0
    first, *_, last = server.requests
    assert first["tools"][0]["function"]["name"] == "record_judgement"
    assert first["model"] == "judge" and first["temperature"] == 0.2
    assert (last["top_p"], last["seed"]) == (0.9, 42)
    assert QUERY in json.dumps(first["messages"], ensure_ascii=False)


def test_a_metric_failing_after_its_retries_raises_naming_provider_metric_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_server(lambda n: error_reply(500), monkeypatch) as server:
        evaluator = Evaluator(write(tmp_path))
        with pytest.raises(ModelCallError) as caught:
            evaluator.evaluate(EvaluationRequest(user_query=QUERY, submission=ANSWER))
    assert server.count == 2  # 1 + max_retries, and no call for the metrics after it
    error = caught.value
    assert isinstance(error, EvaluatorAPIError | MetricFailedError | TracegradeError)
    assert not isinstance(error, ValueError)
    assert (error.metric_name, error.provider, error.model) == (
        "ClarityCoherence",
        "openai-chat",
        "openai-chat:judge",
    )
    assert (error.status, error.attempts, error.retry_count, error.transient) == (
        "provider_error",
        2,
        1,
        True,
    )
    assert "metric ClarityCoherence: model openai-chat:judge (provider openai-chat)" in str(error)
    assert "after 2 attempts: provider_error" in str(error) and "500" in str(error)


def test_an_authentication_error_is_not_transient(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        fake_server(lambda n: error_reply(401), monkeypatch) as server,
        pytest.raises(ModelCallError) as caught,
    ):
        Evaluator(write(tmp_path)).evaluate(EvaluationRequest(user_query="q", submission="a"))
    assert server.count == 1
    assert (caught.value.status, caught.value.transient) == ("auth_error", False)


def test_a_custom_metric_without_a_score_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "none_metrics.py").write_text(
        "from tracegrade.evaluator import BaseMetric\n"
        "class Nothing(BaseMetric):\n"
        "    def score(self, user_query, submission):\n"
        "        return None\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    model, seen = scripted()
    config = write(tmp_path, '[[metrics]]\nname = "none_metrics:Nothing"\n')
    with pytest.raises(CustomMetricError) as caught:
        Evaluator(config, model=model).evaluate(EvaluationRequest(user_query="q", submission="a"))
    assert (caught.value.metric_name, caught.value.status) == ("Nothing", "metric_error")
    assert "Nothing.score() returned None" in str(caught.value)
    assert isinstance(caught.value, MetricFailedError) and not seen


def test_custom_metric_returning_the_seeds_metric_score(tmp_path: Path) -> None:
    class Length(BaseMetric):
        def score(self, user_query: str, submission: str) -> MetricScore:  # type: ignore[override]
            return MetricScore(metric_name="x", score=len(submission), evaluator_comment=" ok ")

    config = EvaluationConfig.model_validate({"metrics": [{"name": "length"}]})
    result = Evaluator(config).evaluate(EvaluationRequest(user_query="q", submission="abcd"))
    assert result.metrics == [MetricScore(metric_name="Length", score=4.0, evaluator_comment="ok")]
    assert result.overall_score == 4.0


@pytest.mark.parametrize(
    ("text", "error", "fragment"),
    [
        (
            '[[metrics]]\nname = "Coverage"\nweight = 0.5\n[[metrics]]\nname = "Relevance"\n'
            "weight = 0.3\n",
            WeightValidationError,
            "metric weights sum to 0.8",
        ),
        (
            '[[metrics]]\nname = "Coverage"\nweight = -0.5\n',
            WeightValidationError,
            "weight -0.5 is negative",
        ),
        ('[llm_default]\nmodel = "invalid-model-format"\n', ModelFormatError, "provider:model"),
        ('[[metrics]]\nname = "Coverage"\nmodel = ":x"\n', ModelFormatError, "provider:model"),
        (
            '[[metrics]]\nname = "Coverage"\n[[metrics]]\nname = "Coverage"\n',
            JudgeConfigError,
            "duplicate",
        ),
    ],
)
def test_configuration_errors_are_typed(
    tmp_path: Path, text: str, error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error, match=re.escape(fragment)) as caught:
        Evaluator(write(tmp_path, text), model=scripted()[0])
    assert isinstance(caught.value, JudgeConfigError | ValueError | TracegradeError)


def test_keys_and_packages_are_checked_when_the_evaluator_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(MissingApiKeyError) as caught:
        Evaluator(write(tmp_path, '[llm_default]\nmodel = "openai:gpt-5"\n'))
    assert caught.value.variable == "OPENAI_API_KEY"
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    google = write(tmp_path, '[llm_default]\nmodel = "google-gla:gemini-2.5-flash"\n')
    block_module(monkeypatch, "google.genai")  # as on a machine without the package
    with pytest.raises(ProviderPackageError) as missing:
        Evaluator(google)
    assert missing.value.package == "pydantic-ai-slim[google]"
    # A model given in code is used for every metric: nothing of the environment is checked.
    Evaluator(google, model=scripted()[0])


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"user_query": "", "submission": "a"}, "user_query"),
        ({"user_query": " \n\t ", "submission": "a"}, "user_query"),
        ({"user_query": "q", "submission": ""}, "submission"),
        ({"user_query": "q", "submission": "   "}, "submission"),
        ({"user_query": "q", "submission": "a", "team_id": ""}, "team_id"),
        ({"user_query": "q", "submission": "a", "execution_id": " "}, "execution_id"),
        ({"user_query": "q", "submission": "a", "round_number": 0}, "round_number"),
        ({"user_query": "q", "submission": "a", "submision": "typo"}, "submision"),
    ],
)
def test_request_validation(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        EvaluationRequest(**fields)
    assert field in str(caught.value)


def test_request_fields() -> None:
    request = EvaluationRequest(
        user_query="  q  ", submission=" a\n", team_id=" t ", execution_id="e", round_number=3
    )
    assert (request.user_query, request.submission) == ("  q  ", " a\n")
    assert (request.team_id, request.execution_id, request.round_number, request.config) == (
        "t",
        "e",
        3,
        None,
    )
    assert EvaluationRequest.model_validate(request.model_dump()) == request


def test_result_entities() -> None:
    score = MetricScore(metric_name=" Coverage ", score=85.12345, evaluator_comment="  ok  ")
    assert (score.metric_name, score.score, score.evaluator_comment) == ("Coverage", 85.12, "ok")
    assert MetricScore(metric_name="x", score=-15.5, evaluator_comment="").score == -15.5
    with pytest.raises(ValidationError, match="metric_name"):
        MetricScore(metric_name=" ", score=1, evaluator_comment="")
    with pytest.raises(ValidationError, match="metrics"):
        EvaluationResult(metrics=[], overall_score=0)
    with pytest.raises(ValidationError, match="duplicate metric names: x"):
        EvaluationResult(
            metrics=[score.model_copy(update={"metric_name": "x"})] * 2, overall_score=1
        )
    assert EvaluationResult(metrics=[score], overall_score=87.12345).overall_score == 87.12


def test_request_config_replaces_the_evaluators(tmp_path: Path) -> None:
    model, _ = scripted()
    evaluator = Evaluator(write(tmp_path), model=model)
    custom = EvaluationConfig.model_validate(
        tomllib.loads(
            '[llm_default]\nmodel = "anthropic:claude-sonnet-4-5-20250929"\n'
            '[[metrics]]\nname = "Relevance"\nweight = 0.5\n'
            '[[metrics]]\nname = "ClarityCoherence"\nweight = 0.3\n'
            '[[metrics]]\nname = "Coverage"\nweight = 0.2\n'
        )
    )
    result = evaluator.evaluate(EvaluationRequest(user_query="q", submission="a", config=custom))
    assert [m.metric_name for m in result.metrics] == ["Relevance", "ClarityCoherence", "Coverage"]
    assert result.overall_score == round(90.25 * 0.5 + 85.0 * 0.3 + 80.5 * 0.2, 2)
    assert custom.enabled_metrics == ["Relevance", "ClarityCoherence", "Coverage"]
    assert custom.metric_weights == {"Relevance": 0.5, "ClarityCoherence": 0.3, "Coverage": 0.2}


def test_no_configuration_means_the_four_builtins() -> None:
    evaluator = Evaluator(model=scripted()[0])
    assert [(m.name, m.weight) for m in evaluator.metrics] == [
        ("ClarityCoherence", 0.25),
        ("Coverage", 0.25),
        ("Relevance", 0.25),
        ("LLMPlain", 0.25),
    ]
    result = evaluator.evaluate(EvaluationRequest(user_query="q", submission="a"))
    assert len(result.metrics) == 4


def test_evaluate_inside_a_running_event_loop(tmp_path: Path) -> None:
    evaluator = Evaluator(write(tmp_path), model=scripted()[0])

    async def inside() -> EvaluationResult:
        return evaluator.evaluate(EvaluationRequest(user_query="q", submission="a"))

    assert asyncio.run(inside()).overall_score == 85.22


def test_the_batch_judge_and_the_api_give_the_same_scores(tmp_path: Path) -> None:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        text = f"{request.instructions}|{request.parts[-1].content}"
        score = sum(map(ord, text)) % 9973 / 99.73  # deterministic, with decimals
        args = {"score": score, "comment": f"len {len(text)}"}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    model = FunctionModel(answer)
    path = write(tmp_path)
    rows = [
        ("a", "What is 2+2?", "4"),
        ("b", "Name a colour", "Blue, or red."),
        ("c", QUERY, ANSWER),
    ]
    db = tmp_path / "j.duckdb"
    assert not judge_once(db, path, items(rows), model=model).failed
    con = duckdb.connect(str(db), read_only=True)
    try:
        stored = con.execute(
            "SELECT item_id, metric, score, comment FROM judge_results ORDER BY item_id, metric"
        ).fetchall()
        overall = dict(con.execute("SELECT item_id, overall_score FROM judge_scores").fetchall())
    finally:
        con.close()
    evaluator = Evaluator(path, model=model)
    for item_id, query, submission in rows:
        result = evaluator.evaluate(EvaluationRequest(user_query=query, submission=submission))
        batch = [(m, round(s, 2), c) for i, m, s, c in stored if i == item_id]
        api = sorted((m.metric_name, m.score, m.evaluator_comment) for m in result.metrics)
        assert api == batch
        assert result.overall_score == round(overall[item_id], 2)


def _examples(markdown: str, heading: str) -> list[tuple[str, str]]:
    """Each python block of the section with the output block that follows it."""
    section = markdown.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```\n+```\n(.*?)```", section, flags=re.S)


def test_the_docs_python_api_example_runs_and_prints_what_the_docs_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = _examples((ROOT / "docs" / "judge.md").read_text(encoding="utf-8"), "Python API")
    assert len(examples) == 2
    monkeypatch.chdir(tmp_path)
    for code, shown in examples:
        exec(compile(code, "docs/judge.md", "exec"), {"__name__": "docs_example"})
        assert capsys.readouterr().out == shown
