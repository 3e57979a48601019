"""Live judge runs against FunctionModel: order, concurrency, cache, atomic overall scores,
budget, circuit breaker, crash and resume."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import query_rows
from judge_helpers import BREVITY_METRIC, counting_model, items, judge_once, write_config
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pipelines.judge.control import Pacer

ROOT = Path(__file__).resolve().parents[2]

TWO_METRICS = """
[[metrics]]
name = "ClarityCoherence"
weight = 0.25
model = "openai:gpt-5"

[[metrics]]
name = "Relevance"
weight = 0.75
model = "openai:gpt-5"
max_retries = 1
"""


def metric_of(prompt: str, instructions: str | None) -> str:
    return "clarity" if instructions and "clarity" in instructions else "relevance"


def test_overall_is_the_weighted_mean(tmp_path: Path) -> None:
    def answer(n: int, prompt: str) -> dict[str, object]:
        return {"score": 40.0 if "alpha" in prompt else 80.0, "comment": "c"}

    model, _ = counting_model(answer)
    db = tmp_path / "j.duckdb"
    judge_once(db, write_config(tmp_path, TWO_METRICS), items([("a", "q", "alpha")]), model=model)
    assert query_rows(db, "SELECT overall_score, status FROM latest_judge_scores") == [(40.0, "ok")]

    scores = iter([20.0, 60.0])

    def by_metric(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, {"score": next(scores), "comment": "c"})]
        )

    db2 = tmp_path / "j2.duckdb"
    judge_once(
        db2,
        write_config(tmp_path, TWO_METRICS),
        items([("a", "q", "x")]),
        model=FunctionModel(by_metric),
    )
    # ClarityCoherence (0.25) is judged first, then Relevance (0.75).
    assert query_rows(db2, "SELECT overall_score FROM latest_judge_scores") == [
        (0.25 * 20 + 0.75 * 60,)
    ]


def test_metrics_of_one_submission_run_in_order_and_submissions_concurrently(
    tmp_path: Path,
) -> None:
    active = 0
    peak = 0
    order: dict[str, list[str]] = {}

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal active, peak
        request = messages[-1]
        prompt = str(request.parts[-1].content)  # type: ignore[union-attr]
        item = prompt.split("<submission>\n")[1].split("\n")[0]
        order.setdefault(item, []).append(metric_of(prompt, request.instructions))  # type: ignore[union-attr]
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, {"score": 50, "comment": "c"})]
        )

    config = write_config(tmp_path, "max_concurrency = 4\n" + TWO_METRICS)
    frame = items([(f"i{n}", "q", f"answer-{n}") for n in range(12)])
    judge_once(tmp_path / "j.duckdb", config, frame, model=FunctionModel(respond))
    assert peak == 4
    assert all(seq == ["clarity", "relevance"] for seq in order.values())
    assert len(order) == 12


def test_second_run_makes_zero_calls_and_writes_nothing(tmp_path: Path) -> None:
    model, seen = counting_model()
    db = tmp_path / "j.duckdb"
    config = write_config(tmp_path, TWO_METRICS)
    frame = items([(f"i{n}", "q", f"answer {n}") for n in range(10)] + [("blank", "q", " ")])
    first = judge_once(db, config, frame, model=model)
    assert len(seen) == 20 and first.calls == 20
    before = (
        query_rows(db, "SELECT count(*) FROM judge_results")[0][0],
        query_rows(db, "SELECT count(*) FROM judge_scores")[0][0],
    )
    second = judge_once(db, config, frame, model=model)
    assert len(seen) == 20 and second.calls == 0 and second.cached == 22
    after = (
        query_rows(db, "SELECT count(*) FROM judge_results")[0][0],
        query_rows(db, "SELECT count(*) FROM judge_scores")[0][0],
    )
    assert after == before


def test_changes_that_determine_a_judgement_call_again(tmp_path: Path) -> None:
    model, seen = counting_model()
    db = tmp_path / "j.duckdb"
    judge_once(
        db,
        write_config(tmp_path, TWO_METRICS),
        items([("a", "q", "x"), ("b", "q", "y")]),
        model=model,
    )
    assert len(seen) == 4
    # A changed submission text: both metrics of that item only.
    judge_once(
        db,
        write_config(tmp_path, TWO_METRICS),
        items([("a", "q", "x"), ("b", "q", "y2")]),
        model=model,
    )
    assert len(seen) == 6
    # A changed temperature of one metric: that metric, for every item.
    changed = TWO_METRICS.replace("max_retries = 1", "max_retries = 1\ntemperature = 0.5")
    judge_once(
        db, write_config(tmp_path, changed), items([("a", "q", "x"), ("b", "q", "y2")]), model=model
    )
    assert len(seen) == 8
    # max_retries does not determine a judgement.
    more = changed.replace("max_retries = 1", "max_retries = 4")
    judge_once(
        db, write_config(tmp_path, more), items([("a", "q", "x"), ("b", "q", "y2")]), model=model
    )
    assert len(seen) == 8


def test_a_failed_metric_leaves_no_overall_score_and_the_rerun_retries_only_it(
    tmp_path: Path,
) -> None:
    broken = True

    def answer(n: int, prompt: str) -> dict[str, object]:
        if broken and "bad" in prompt:
            return {"score": 150, "comment": "out of range"}
        return {"score": 90, "comment": "good"}

    model, seen = counting_model(answer)
    db = tmp_path / "j.duckdb"
    config = write_config(tmp_path, TWO_METRICS)
    frame = items([("good", "q", "fine"), ("bad", "q", "bad answer")])
    result = judge_once(db, config, frame, model=model)
    assert result.failed and result.submissions_failed == 1 and result.submissions_ok == 1
    # ClarityCoherence: 1 + 3 retries, Relevance: 1 + 1 retry, for "bad"; 2 calls for "good".
    assert len(seen) == 2 + 4 + 2
    assert query_rows(
        db, "SELECT item_id, status, overall_score FROM latest_judge_scores ORDER BY 1"
    ) == [
        ("bad", "failed", None),
        ("good", "ok", 90.0),
    ]
    assert query_rows(
        db, "SELECT count(*) FROM judge_results WHERE status <> 'ok' AND score IS NOT NULL"
    ) == [(0,)]
    broken = False
    seen.clear()
    rerun = judge_once(db, config, frame, model=model)
    assert len(seen) == 2 and not rerun.failed
    assert query_rows(
        db, "SELECT item_id, status, overall_score FROM latest_judge_scores ORDER BY 1"
    ) == [
        ("bad", "ok", 90.0),
        ("good", "ok", 90.0),
    ]


def test_text_instead_of_a_judgement_is_a_refusal(tmp_path: Path) -> None:
    model, seen = counting_model(lambda n, p: "I cannot grade this.")
    db = tmp_path / "j.duckdb"
    config = write_config(
        tmp_path, '[[metrics]]\nname = "Coverage"\nmodel = "openai:gpt-5"\nmax_retries = 1\n'
    )
    judge_once(db, config, items([("a", "q", "x")]), model=model)
    assert len(seen) == 2
    ((status, error),) = query_rows(db, "SELECT status, error FROM judge_results")
    assert status == "refusal" and "I cannot grade this." in error


def test_circuit_breaker_stops_the_run(tmp_path: Path) -> None:
    model, seen = counting_model(lambda n, p: {"score": -5, "comment": "bad"})
    db = tmp_path / "j.duckdb"
    config = write_config(
        tmp_path,
        'max_concurrency = 1\n[[metrics]]\nname = "Coverage"\nmodel = "openai:gpt-5"\n'
        "max_retries = 0\n[retry]\nbase_delay_s = 0.0\ncircuit_breaker = 3\n",
    )
    result = judge_once(
        db, config, items([(f"i{n}", "q", f"x{n}") for n in range(10)]), model=model
    )
    assert len(seen) == 3
    assert result.failed and result.stop_reason is not None
    assert "circuit breaker: 3 judgements failed in a row" in result.stop_reason
    assert 'try output_mode = "tool" or "native"' in result.stop_reason  # none ever parsed
    assert result.submissions_left == 7


def test_budget_stops_new_calls_and_leaves_the_rest(tmp_path: Path) -> None:
    model, seen = counting_model()  # 100 input + 20 output tokens per call
    db = tmp_path / "j.duckdb"
    config = write_config(
        tmp_path,
        'max_concurrency = 1\n[[metrics]]\nname = "Coverage"\nmodel = "openai:gpt-5"\n'
        '[prices."openai:gpt-5"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 5000.0\n',
    )
    frame = items([(f"i{n}", "q", f"x{n}") for n in range(10)])
    # Each call costs 0.1 + 0.1 = $0.20: the budget of $0.50 allows three calls.
    result = judge_once(db, config, frame, model=model, budget_usd=0.5)
    assert len(seen) == 3 and not result.failed
    assert result.cost_usd == pytest.approx(0.6)
    assert result.stop_reason is not None and "budget" in result.stop_reason
    assert query_rows(db, "SELECT sum(cost_usd), count(*) FROM judge_results") == [
        (pytest.approx(0.6), 3)
    ]
    judge_once(db, config, frame, model=model)
    assert len(seen) == 10


def test_custom_non_llm_metric_beside_an_llm_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "short_metrics.py").write_text(BREVITY_METRIC, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    model, seen = counting_model()
    db = tmp_path / "j.duckdb"
    config = write_config(
        tmp_path,
        '[[metrics]]\nname = "short_metrics:Brevity"\nweight = 0.5\n'
        '[[metrics]]\nname = "Coverage"\nweight = 0.5\nmodel = "openai:gpt-5"\n',
    )
    judge_once(db, config, items([("a", "q", "x" * 10)]), model=model)
    assert len(seen) == 1
    assert query_rows(
        db, "SELECT metric, score, model, attempts FROM judge_results ORDER BY metric"
    ) == [
        ("Brevity", 90.0, None, 0),
        ("Coverage", 80.0, "openai:gpt-5", 1),
    ]
    assert query_rows(db, "SELECT overall_score FROM latest_judge_scores") == [(85.0,)]


def test_pacer_spaces_requests_by_the_rate_limit() -> None:
    pacer = Pacer(per_minute=600)  # one every 0.1 s
    waits = [pacer.reserve(1) for _ in range(5)]
    assert waits[0] == pytest.approx(0.0, abs=0.01)
    assert [round(b - a, 2) for a, b in zip(waits, waits[1:], strict=False)] == [0.1, 0.1, 0.1, 0.1]
    tokens = Pacer(per_minute=60_000)  # 1,000 tokens per second
    assert tokens.reserve(500) == pytest.approx(0.0, abs=0.01)
    assert tokens.reserve(10) == pytest.approx(0.5, abs=0.01)


def test_rate_limit_is_shared_by_every_call_of_a_provider(tmp_path: Path) -> None:
    stamps: list[float] = []

    def answer(n: int, prompt: str) -> dict[str, object]:
        stamps.append(time.monotonic())
        return {"score": 1, "comment": "c"}

    model, _ = counting_model(answer)
    config = write_config(
        tmp_path,
        "max_concurrency = 8\n"
        + TWO_METRICS
        + "\n[rate_limits.openai]\nrequests_per_minute = 1200\n",
    )
    judge_once(
        tmp_path / "j.duckdb",
        config,
        items([(f"i{n}", "q", f"x{n}") for n in range(5)]),
        model=model,
    )
    # 1,200 a minute is one call every 50 ms across all 8 concurrent submissions: ten calls
    # start over at least 9 intervals, where unlimited they would start at once.
    assert len(stamps) == 10 and stamps[-1] - stamps[0] >= 9 * 0.05 * 0.95


CRASH_SCRIPT = """
import asyncio, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from judge_helpers import items, judge_once
counter = Path({counter!r})
async def respond(messages, info):
    with counter.open("a") as handle:
        handle.write("x")
    await asyncio.sleep(0.05)
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {{"score": 60, "comment": "c"}})])
frame = items([(f"i{{n}}", "q", f"answer {{n}}") for n in range(40)])
judge_once(Path({db!r}), Path({config!r}), frame, model=FunctionModel(respond))
"""


def test_a_killed_run_loses_only_calls_in_flight_and_the_rerun_makes_only_those(
    tmp_path: Path,
) -> None:
    db, counter = tmp_path / "j.duckdb", tmp_path / "calls.txt"
    config = write_config(tmp_path, "max_concurrency = 4\n" + TWO_METRICS)
    script = CRASH_SCRIPT.format(
        tests=str(Path(__file__).parent), counter=str(counter), db=str(db), config=str(config)
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if counter.exists() and len(counter.read_text()) >= 30:
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    started = len(counter.read_text())
    assert 30 <= started < 80
    (stored,) = query_rows(db, "SELECT count(*) FROM judge_results WHERE status = 'ok'")[0]
    assert started - 4 <= stored <= started  # only the (at most 4) calls in flight are lost
    model, seen = counting_model()
    frame = items([(f"i{n}", "q", f"answer {n}") for n in range(40)])
    judge_once(db, config, frame, model=model)
    assert len(seen) == 80 - stored
    assert query_rows(db, "SELECT count(*), count(overall_score) FROM latest_judge_scores") == [
        (40, 40)
    ]


def test_custom_llm_judge_metric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tone_metrics.py").write_text(
        "from tracegrade.judge import LLMJudgeMetric\n"
        "class Politeness(LLMJudgeMetric):\n"
        "    prompt_version = 'polite-1'\n"
        "    instruction = 'Grade how polite the answer is.'\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    instructions: list[str | None] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        instructions.append(messages[-1].instructions)  # type: ignore[union-attr]
        return ModelResponse(
            parts=[ToolCallPart(info.output_tools[0].name, {"score": 33, "comment": "curt"})]
        )

    db = tmp_path / "j.duckdb"
    config = write_config(
        tmp_path, '[[metrics]]\nname = "tone_metrics:Politeness"\nmodel = "openai:gpt-5"\n'
    )
    judge_once(db, config, items([("a", "q", "no.")]), model=FunctionModel(respond))
    assert instructions == ["Grade how polite the answer is."]
    assert query_rows(db, "SELECT metric, prompt_version, score FROM judge_results") == [
        ("Politeness", "polite-1", 33.0)
    ]


def test_an_identical_answer_of_another_trace_is_reused_and_stored_for_it(tmp_path: Path) -> None:
    model, seen = counting_model()
    db = tmp_path / "j.duckdb"
    config = write_config(tmp_path, TWO_METRICS)
    judge_once(db, config, items([("a", "q", "same answer")]), model=model)
    assert len(seen) == 2
    result = judge_once(
        db, config, items([("a", "q", "same answer"), ("b", "q", "same answer")]), model=model
    )
    assert len(seen) == 2 and result.cached == 4
    assert query_rows(
        db,
        "SELECT item_id, metric, score, attempts, cost_usd FROM latest_judge_results "
        "WHERE item_id = 'b' ORDER BY metric",
    ) == [("b", "ClarityCoherence", 80.0, 0, 0.0), ("b", "Relevance", 80.0, 0, 0.0)]
    assert query_rows(db, "SELECT item_id, overall_score FROM latest_judge_scores ORDER BY 1") == [
        ("a", 80.0),
        ("b", 80.0),
    ]
    before = query_rows(db, "SELECT count(*) FROM judge_results")
    judge_once(
        db, config, items([("a", "q", "same answer"), ("b", "q", "same answer")]), model=model
    )
    assert len(seen) == 2 and query_rows(db, "SELECT count(*) FROM judge_results") == before


def test_identical_submissions_in_one_run_are_judged_once(tmp_path: Path) -> None:
    model, seen = counting_model()
    db = tmp_path / "j.duckdb"
    config = write_config(tmp_path, "max_concurrency = 4\n" + TWO_METRICS)
    frame = items([("a", "q", "Done."), ("b", "q", "Done."), ("c", "q", "Done."), ("d", "q", "x")])
    result = judge_once(db, config, frame, model=model)
    assert len(seen) == 4 and result.calls == 4 and result.cached == 4
    # Each submission has its two rows; the three identical ones made two requests in all.
    assert query_rows(db, "SELECT item_id, count(*) FROM judge_results GROUP BY 1 ORDER BY 1") == [
        ("a", 2),
        ("b", 2),
        ("c", 2),
        ("d", 2),
    ]
    assert query_rows(
        db, "SELECT sum(attempts) FROM judge_results WHERE item_id IN ('a', 'b', 'c')"
    ) == [(2,)]
    assert query_rows(db, "SELECT count(overall_score) FROM latest_judge_scores") == [(4,)]


def test_dry_run_estimate_counts_identical_texts_once(tmp_path: Path) -> None:
    from storage.config_files import load_judge_config
    from storage.judge.store import DuckDBJudgeSink
    from storage.store.duckdb_store import DuckDBStore
    from transforms.judge.plan import estimate, plan_items

    config = load_judge_config(write_config(tmp_path, TWO_METRICS), check_keys=False)
    frame = items([("a", "q", "Done."), ("b", "q", "Done."), ("c", "q", " "), ("d", "q", "x")])
    with DuckDBStore(tmp_path / "j.duckdb") as store:
        found = estimate(plan_items(frame, config, DuckDBJudgeSink(store)), config)
    assert (found.calls, found.cached, found.blank, found.judgements) == (4, 2, 2, 8)
