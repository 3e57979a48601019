"""LangSmith's runs as a user exports them (tests/data/langsmith, made by its capture.py: the
same agent twice, as a LangGraph graph traced by LangChain's own tracer and as plain functions
under `@traceable` calling a `wrap_openai` client; three runs each, the third failing on a
tool's exception; read back with `Client.list_runs`) score with no flag: an array of runs, one
run a line, the run query's page, and the files of LangSmith's CLI. LangGraph's model calls
hold LangChain's `dumpd` messages, its chains the state's messages as their own fields, its
tools a `ToolMessage`; `@traceable` runs hold what the functions took and returned, a value
wrapped as `{"output": ...}`, and `wrap_openai` the request and the chat completion. The answer
is the last model message, a result the tool's output, a failed call the run's `error`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from captured import scored, weather_traces

DATA = Path(__file__).resolve().parents[1] / "data" / "langsmith"

ERROR = '{"error":"ValueError(\'weather service unavailable for Lima\')'
"""How the failed call's result starts: LangSmith keeps the exception with its traceback."""

EXPECTED = weather_traces(ERROR)


def _page(tmp_path: Path) -> Path:
    """The same runs as the API's run query answers them (`POST /runs/query`)."""
    page = tmp_path / "source" / "page.json"
    page.parent.mkdir()
    runs = json.loads((DATA / "runs.json").read_text())
    page.write_text(json.dumps({"runs": runs, "cursors": {"next": None}}))
    return page


def _cli_export(tmp_path: Path) -> Path:
    """The same runs as LangSmith's CLI exports them (`langsmith trace export DIR --full`, its
    `internal/extract/extract.go` at ca90720): a file per trace named by its id, one run a line
    with the CLI's fields (`run_id` for the id, RFC 3339 times, no `dotted_order`), inputs,
    outputs and error null where empty. Built here from the captured runs: the CLI itself is
    a Go program this machine cannot build."""
    folder = tmp_path / "source" / "export"
    folder.mkdir(parents=True)
    for run in json.loads((DATA / "runs.json").read_text()):
        line = {
            "run_id": run["id"],
            "trace_id": run["trace_id"],
            "name": run["name"],
            "run_type": run["run_type"],
            "parent_run_id": run["parent_run_id"],
            "start_time": run["start_time"].replace(" ", "T").replace("+00:00", "Z"),
            "end_time": run["end_time"].replace(" ", "T").replace("+00:00", "Z"),
            "status": run["status"],
            "custom_metadata": run["extra"].get("metadata", {}),
            "tags": run["tags"],
            "inputs": run["inputs"] or None,
            "outputs": run["outputs"] or None,
            "error": run["error"] or None,
            "feedback_stats": None,
        }
        with (folder / f"{run['trace_id']}.jsonl").open("a") as file:
            file.write(json.dumps(line) + "\n")
    return folder


@pytest.mark.parametrize(
    "form", ["runs.json", "runs.jsonl", "page", "cli export", "traceable.json"]
)
def test_langsmith_runs_read_as_their_traces(form: str, tmp_path: Path) -> None:
    source = {"page": _page, "cli export": _cli_export}.get(form, lambda _: DATA / form)(tmp_path)
    found = scored(source, tmp_path)
    failed = found[1][4][0]
    assert failed[2].startswith(ERROR) and "Traceback" in failed[2][len(ERROR) :]
    failed[2] = ERROR
    assert found == EXPECTED


@pytest.mark.parametrize("name", ["runs.jsonl", "traceable.json"])
def test_a_trace_has_the_tags_its_root_run_was_invoked_with(name: str, tmp_path: Path) -> None:
    # LangGraph tags each inner run with its step (`graph:step:1`, `seq:step:1`): not the trace's
    found = scored(DATA / name, tmp_path, "SELECT list_sort(tags) FROM traces")
    assert found == [(["capture", "weather"],)] * 3
