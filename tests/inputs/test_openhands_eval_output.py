"""OpenHands' evaluation output as its harness writes it (tests/data/SOURCES.md: the
multi-SWE-bench example `output.jsonl` of OpenHands' repository, today's `EvalOutput` with a
flat event history, and a ProntoQA run of May 2024 whose history is `[action, observation]`
pairs) scores with no flag: each line is one trace, the user's first message its objective, the
patch or the final message its answer, every call the agent made in order, the model its
metadata names the agent, the benchmark's `test_result.result` the outcome where there is one
(a SWE-bench run before its evaluation has none: unknown). Before, the lines were refused: no
format took them. Expectations are read from the raw lines here, not with the code under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "openhands-eval"
TRACE_SQL = (
    "SELECT regexp_extract(source_file, '[^/]+$'), row_number, objective, result_summary, "
    "agent_id, success, list_transform(list_filter(steps, s -> s.tool_present), s -> s.tool_name) "
    "FROM traces ORDER BY 1, 2"
)


def _events(line: dict[str, Any]) -> list[dict[str, Any]]:
    flat: list[dict[str, Any]] = []
    for item in line["history"]:
        flat += item if isinstance(item, list) else [item]
    return flat


def _expected(line: dict[str, Any]) -> tuple[Any, ...]:
    events = _events(line)
    user = next(e for e in events if e.get("source") == "user" and e.get("action") == "message")
    paired = isinstance(line["history"][0], list)
    calls = [
        e.get("tool_call_metadata", {}).get("function_name") or e["action"]
        for e in events
        if e.get("source") == "agent"
        and "action" in e
        and e["action"] not in ("message", "finish", "system", "recall", "change_agent_state")
        and (paired or e.get("tool_call_metadata"))
    ]
    answer = line["test_result"].get("git_patch") or line.get("final_message")
    metadata = line.get("metadata") or {}
    model = (metadata.get("llm_config") or {}).get("model") or metadata.get("model_name")
    return user["args"]["content"], answer, model, line["test_result"].get("result"), calls


def test_each_evaluated_instance_is_one_trace_as_the_harness_wrote_it(tmp_path: Path) -> None:
    db = tmp_path / "eval.duckdb"
    assert main(["score", str(DATA), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
    rows = query_rows(db, TRACE_SQL)
    lines = {
        path.name: [json.loads(text) for text in path.read_text().splitlines()]
        for path in sorted(DATA.iterdir())
    }
    assert [(row[0], row[1]) for row in rows] == [
        (name, number) for name, found in lines.items() for number in range(1, len(found) + 1)
    ]
    for name, number, objective, answer, agent, success, calls in rows:
        expected = _expected(lines[str(name)][int(number) - 1])  # type: ignore[call-overload]
        assert (objective, answer, agent, success, calls) == expected, (name, number)
    # the ProntoQA run labels its instances; the SWE-bench run, before its evaluation, does not
    outcomes = query_rows(db, "SELECT success, count(*) FROM traces GROUP BY 1 ORDER BY 1")
    assert outcomes == [(False, 1), (True, 5), (None, 3)]
    # the patch (or final message) is the answer, not also a thought after the last step
    added = query_rows(
        db,
        "SELECT count(*) FROM traces WHERE steps[-1].type = 'thought' "
        "AND steps[-1].content = result_summary AND result_summary LIKE 'diff --git%'",
    )
    assert added == [(0,)]
