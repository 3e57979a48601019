"""The traces that the captures of tests/data score to (`strands/`, `haystack/`,
`monocle-0.8/`: a weather agent's runs on the fake model of tests/data/otlp_capture.py, written
by each framework's own exporters), as the tests compare them."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import query_rows

from tracegrade.cli import main

TRACES_SQL = (
    "SELECT objective, result_summary, agent_id, success, "
    "list_transform(list_filter(steps, s -> s.type = 'tool_call'), "
    "  s -> [s.tool_name, s.input, s.output_summary]), "
    "list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content) "
    "FROM traces ORDER BY objective"
)
"""Per trace: objective, answer, agent, success, tool calls (tool, arguments, result), thoughts."""

PARIS, TOKYO = "Paris: 18 C, cloudy", "Tokyo: 24 C, sunny"
"""What the capture's get_weather tool answers."""


def weather_traces(failed: str) -> list[tuple[object, ...]]:
    """`TRACES_SQL`'s rows for the three runs of the weather agent whose tool calls name their
    arguments as `{"city": ...}` and whose tracer names the agent `weather_agent`, the Lima
    call's result `failed`: the run that raised has no answer."""
    found = f"Here is what I found: {PARIS} {TOKYO}"
    city = '{{"city": "{}"}}'.format
    return [
        (
            "Compare the weather in Tokyo and Paris.",
            found,
            "weather_agent",
            True,
            [["get_weather", city("Paris"), PARIS], ["get_weather", city("Tokyo"), TOKYO]],
            [found],
        ),
        (
            "Is it raining in Lima?",
            "",
            "weather_agent",
            False,
            [["get_weather", city("Lima"), failed]],
            [],
        ),
        (
            "What is the weather in Paris?",
            f"Here is what I found: {PARIS}",
            "weather_agent",
            True,
            [["get_weather", city("Paris"), PARIS]],
            [f"Here is what I found: {PARIS}"],
        ),
    ]


def scored(source: Path, tmp_path: Path, sql: str = TRACES_SQL) -> list[tuple[object, ...]]:
    """`sql`'s rows once `source` (a file or a folder, copied) is scored with no flag but
    `--no-embedder`; no row or file may be quarantined."""
    copied = tmp_path / source.name
    if source.is_dir():
        shutil.copytree(source, copied)
    else:
        shutil.copyfile(source, copied)
    db = tmp_path / "t.duckdb"
    assert main(["score", str(copied), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
    return query_rows(db, sql)
