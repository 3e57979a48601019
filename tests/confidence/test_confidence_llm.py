"""LLMSelfEvaluator and QueryCoverageCalculator against FunctionModel/TestModel, never the network."""

from __future__ import annotations

import pydantic_ai.models
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from pipelines.confidence_llm import LLMSelfEvaluator, QueryCoverageCalculator
from transforms.confidence.prompts import FALLBACK_SCORE, parse_score


def replying(text: str, seen: list[str] | None = None) -> FunctionModel:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(str(messages[-1].parts[0].content))  # type: ignore[union-attr]
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(reply)


def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise ConnectionError("upstream closed the connection")


def test_requests_to_real_models_are_off() -> None:
    assert pydantic_ai.models.ALLOW_MODEL_REQUESTS is False


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.83", 0.83),
        ("Score: 0.4.", 0.4),
        ("1.7", 1.0),
        ("-2", 0.0),
        (".5", 0.5),
        ("none", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_score(text: str | None, value: float | None) -> None:
    assert parse_score(text) == value


def test_self_evaluation_reads_the_number_and_sends_the_inputs() -> None:
    seen: list[str] = []
    evaluator = LLMSelfEvaluator(replying("0.72", seen))
    result = evaluator.assess("What is 2+2?", "It is 4.", ["calculator: 4"])
    assert (result.score, result.fell_back, result.detail) == (0.72, False, None)
    assert "What is 2+2?" in seen[0] and "It is 4." in seen[0] and "- calculator: 4" in seen[0]
    assert evaluator.evaluate("q", "a") == 0.72


def test_self_evaluation_clamps() -> None:
    assert LLMSelfEvaluator(replying("9.5")).evaluate("q", "a") == 1.0


def test_unparsable_reply_falls_back_to_half_and_says_so() -> None:
    result = LLMSelfEvaluator(replying("I cannot rate this.")).assess("q", "a")
    assert (result.score, result.fell_back) == (FALLBACK_SCORE, True)
    assert "no number in reply" in (result.detail or "")


def test_failed_call_falls_back_to_half_and_says_why() -> None:
    result = QueryCoverageCalculator(FunctionModel(failing)).assess("q", "a")
    assert (result.score, result.fell_back) == (0.5, True)
    assert result.detail is not None and result.detail.startswith(
        "ConnectionError: upstream closed"
    )


def test_blocked_real_model_falls_back() -> None:
    result = LLMSelfEvaluator("openai:gpt-4o-mini").assess("q", "a")
    assert result.fell_back and result.score == 0.5


def test_query_coverage_with_test_model() -> None:
    seen: list[str] = []
    calculator = QueryCoverageCalculator(replying("0.25", seen))
    assert calculator.calculate("Name three cities and a river.", "Paris.") == 0.25
    assert "Name three cities and a river." in seen[0]
    assert QueryCoverageCalculator(TestModel(custom_output_text="0.9")).calculate("q", "a") == 0.9
