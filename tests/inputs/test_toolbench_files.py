"""ToolBench answer files as ToolLLM wrote them (tests/data/SOURCES.md), each scored with
`tracegrade score FILE --db DB` and no other flag: the task is the objective, the argument of
the `Finish` call is the answer, the calls come in order, a result is an error only when its
`error` field says so, and `win` is the success label. Before, role `function` and
`function_call` were refused; converted by hand, both successful runs got a blank answer (and
ESCALATE) and every call counted as failed under the documented JSON error pattern."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "toolbench"
RUNS = {
    "G1/10_ChatGPT_DFS_woFilter_w2.json": (
        True,
        ["transitaires_for_transitaires", "transitaire_for_transitaires", "Finish"],
        "SILENT",
        [],
    ),
    # Gave up: Finish(give_up_and_restart) answers nothing; the 400 responses carry "error": "".
    "G2/127_ChatGPT_DFS_woFilter_w2.json": (
        False,
        ["api_tracking_for_pack_send", "api_tracking_for_pack_send", "Finish"],
        "ESCALATE",
        [],
    ),
    # One call failed ("error": "Message error..."), one of four: success rate 0.75.
    "G3/21_ChatGPT_DFS_woFilter_w2.json": (
        True,
        [
            "raiderio_call_for_raider_io",
            "dota_2_steam_web",
            "getsponsorships_for_diablo4_smartable",
            "Finish",
        ],
        "CONFIRM",
        ["tool_failures(rate=0.75)"],
    ),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_answer_file_is_one_trace_as_written(tmp_path: Path, name: str) -> None:
    success, tools, level, failures = RUNS[name]
    source = DATA / name
    shutil.copy(source, tmp_path / source.name)
    db = tmp_path / "t.duckdb"
    assert main(["score", str(tmp_path / source.name), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, won, calls),) = query_rows(
        db,
        "SELECT objective, result_summary, success, list_transform(list_filter(steps, "
        "s -> s.type IN ('tool_call', 'error_recovery')), s -> s.tool_name) FROM traces",
    )
    generation = json.loads(source.read_text())["answer_generation"]
    assert objective == generation["query"]
    finish = json.loads(generation["train_messages"][-1][-1]["function_call"]["arguments"])
    assert answer == finish.get("final_answer", "")
    assert won is success
    assert calls == tools
    ((found, penalties),) = query_rows(db, "SELECT level, penalties FROM confidence_traces")
    assert found == level
    assert [p for p in penalties if p.startswith("tool_failures")][-1:] == failures[-1:]
