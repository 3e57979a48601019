"""Every bad input a user can give, through the real command line (docs/input-format.md):
a bad row or file is quarantined with its rule and the good rows of the same run are scored;
a bad configuration, database path or argument stops before any work with one message and no
traceback, and the exit status the README lists."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import SEED_TRACE, query_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spans"))
from otel_helpers import (  # noqa: E402
    CollectorFileExporter,
    close_agent_loop,  # noqa: F401 (autouse: the OTel case runs an agent)
    tracer_provider,
    weather_agent,
)

TRACEGRADE = str(Path(sys.executable).with_name("tracegrade"))
DEEP = "[" * 10_000 + "]" * 10_000


def trace(n: int, **metadata: object) -> dict[str, object]:
    row = json.loads(json.dumps(SEED_TRACE))
    row["id"] = f"kp:trace:{n}"
    row["metadata"].update(metadata)
    return row


def jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def good(folder: Path) -> Path:
    return jsonl(folder / "good.jsonl", [trace(1), trace(2)])


@dataclass
class Case:
    """One bad input: the command (placeholders {tmp}), the status it must end with, and for
    a completed run the rows that must balance and the rule that must be quarantined."""

    name: str
    prepare: Callable[[Path], list[str]]
    status: int
    rule: str | None = None
    message: str | None = None
    scored: int | None = None
    checks: list[Callable[[Path], None]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def _score(*files: str, extra: tuple[str, ...] = ()) -> list[str]:
    return ["score", *files, "--db", "t.duckdb", "--no-embedder", *extra]


def _unreadable(tmp: Path) -> list[str]:
    good(tmp)
    # a file that even root cannot read: reading a process's own memory at offset 0 fails
    (tmp / "a.jsonl").symlink_to("/proc/self/mem")
    return _score("a.jsonl", "good.jsonl")


def _non_utf8_name(tmp: Path) -> list[str]:
    folder = tmp / "d"
    folder.mkdir()
    good(folder)
    raw = os.fsencode(folder) + b"/x\xff.jsonl"
    with open(raw, "w") as handle:
        handle.write(json.dumps(trace(3)) + "\n")
    return _score("d")


def _not_duckdb(tmp: Path) -> list[str]:
    good(tmp)
    (tmp / "t.duckdb").write_text("hi\n")
    return _score("good.jsonl")


def _db_folder(tmp: Path) -> list[str]:
    good(tmp)
    (tmp / "t.duckdb").mkdir()
    return _score("good.jsonl")


def _sql_not_duckdb(tmp: Path) -> list[str]:
    (tmp / "t.duckdb").write_text("hi\n")
    return ["sql", "SELECT 1", "--db", "t.duckdb"]


def _sql_bad_column(tmp: Path) -> list[str]:
    assert _run(_score(str(good(tmp))), tmp, {}).returncode == 0
    return ["sql", "--db", "t.duckdb", "SELECT no_such_column FROM scores"]


def _binary(tmp: Path) -> Path:
    path = tmp / "c.toml"
    path.write_bytes(b"\xff\xfe")
    return path


def _folder_config(tmp: Path) -> Path:
    path = tmp / "c.toml"
    path.mkdir()
    return path


def _config_cases() -> list[Case]:
    commands: dict[str, Callable[[Path, Path], list[str]]] = {
        "score": lambda tmp, c: _score(str(good(tmp)), extra=("--config", str(c))),
        "judge": lambda tmp, c: ["judge", "--check", "--config", str(c)],
        "import chat": lambda tmp, c: [
            "import",
            "chat",
            str(jsonl(tmp / "chat.jsonl", [_trajectory(1)])),
            "--out",
            "o.parquet",
            "--config",
            str(c),
        ],
        "confidence": lambda tmp, c: ["confidence", "--db", "t.duckdb", "--config", str(c)],
        "operations": lambda tmp, c: [
            "operations",
            str(jsonl(tmp / "cases.jsonl", [{"case_id": "a"}])),
            "--db",
            "t.duckdb",
            "--scorers",
            str(c),
        ],
    }
    cases = []
    for command, args in commands.items():
        for kind, make, message in (
            ("binary", _binary, "is not UTF-8 text"),
            ("folder", _folder_config, "is a folder"),
        ):
            cases.append(
                Case(
                    f"{command}: a {kind} configuration file",
                    lambda tmp, args=args, make=make: args(tmp, make(tmp)),  # type: ignore[misc]
                    2,
                    message=message,
                    checks=[_no_database],
                )
            )
    return cases


def _trajectory(n: int) -> dict[str, object]:
    return {
        "task_id": n,
        "trial": 0,
        "reward": 1,
        "traj": [{"role": "user", "content": f"task {n}"}, {"role": "assistant", "content": "ok"}],
    }


def _deep_chat_lines(tmp: Path) -> list[str]:
    path = tmp / "chat.jsonl"
    path.write_text(json.dumps(_trajectory(1)) + "\n" + '{"traj": ' + DEEP + "}\n")
    return ["import", "chat", str(path), "--out", "o.parquet"]


def _deep_chat_array(tmp: Path) -> list[str]:
    path = tmp / "chat.json"
    path.write_text("[" + json.dumps(_trajectory(1)) + ', {"traj": ' + DEEP + "}]")
    return ["import", "chat", str(path), "--out", "o.parquet"]


def _imported_one_rejected_one(tmp: Path) -> None:
    rows = (tmp / "o.import-report.csv").read_text().splitlines()
    assert len(rows) == 2 and "more than 100 levels deep" in rows[1]
    assert query_parquet_rows(tmp / "o.parquet") == 1


def query_parquet_rows(path: Path) -> int:
    import polars as pl

    return pl.read_parquet(path).height


def _operations(tmp: Path, lines: bytes) -> list[str]:
    (tmp / "cases.jsonl").write_bytes(lines)
    return ["operations", "cases.jsonl", "--db", "t.duckdb"]


def _ops_deep(tmp: Path) -> list[str]:
    return _operations(tmp, b'{"case_id": "a"}\n' + DEEP.encode() + b"\n")


def _ops_bad_lines(tmp: Path) -> list[str]:
    return _operations(
        tmp,
        b'{"case_id": "a"}\n{broken\n{"original_blocks": []}\n'
        b'{"case_id": "b", "original_blocks": 7}\n',
    )


def _ops_bom(tmp: Path) -> list[str]:
    return _operations(tmp, b'\xef\xbb\xbf{"case_id": "a"}\n')


def _operation_quarantine(count: int) -> Callable[[Path], None]:
    def check(tmp: Path) -> None:
        rows = query_rows(tmp / "t.duckdb", "SELECT count(*) FROM operation_quarantine")
        scored = query_rows(tmp / "t.duckdb", "SELECT count(*) FROM operation_cases")
        assert rows == [(count,)] and scored == [(1,)]

    return check


def _rows(tmp: Path, *lines: object) -> list[str]:
    path = tmp / "a.jsonl"
    path.write_text("".join(line if isinstance(line, str) else json.dumps(line) for line in lines))
    good(tmp)
    return _score("a.jsonl", "good.jsonl")


def _no_database(tmp: Path) -> None:
    assert not (tmp / "t.duckdb").exists() or (tmp / "t.duckdb").is_dir()


def _folder_with_odd_entries(tmp: Path) -> list[str]:
    folder = tmp / "e"
    folder.mkdir()
    good(folder)
    (folder / "dangling.jsonl").symlink_to("nowhere.jsonl")
    (folder / "l1.jsonl").symlink_to("l2.jsonl")
    (folder / "l2.jsonl").symlink_to("l1.jsonl")
    jsonl(folder / ".hidden.jsonl", [trace(9)])
    return _score("e")


def _parquet_broken(tmp: Path) -> list[str]:
    (tmp / "a.parquet").write_bytes(b"PAR1 truncated")
    good(tmp)
    return _score("a.parquet", "good.jsonl")


def _gzip(name: str, data: Callable[[bytes], bytes]) -> Callable[[Path], list[str]]:
    """A file `name` of `data` made of a gzip-compressed trace, beside a good file."""

    def prepare(tmp: Path) -> list[str]:
        (tmp / name).write_bytes(data(gzip.compress(json.dumps(trace(4)).encode())))
        good(tmp)
        return _score(name, "good.jsonl")

    return prepare


def _no_work_files(tmp: Path) -> None:
    """Nothing a run unpacked is left behind (`storage.inputs.packed`)."""
    assert not list(tmp.glob(".t.duckdb.work/**/*.jsonl")), list(tmp.rglob("*"))


FACTOR_ROW = {"trace_id": "t1", "step_index": 0, "search_result_count": 3}


def _factors(tmp: Path, payload: bytes) -> list[str]:
    (tmp / "factors.jsonl").write_bytes(payload)
    return ["confidence", "--db", "t.duckdb", "--factors", "factors.jsonl"]


def _factor_lines(*lines: str) -> Callable[[Path], list[str]]:
    good_line = json.dumps(FACTOR_ROW) + "\n"
    return lambda tmp: _factors(tmp, (good_line + "".join(lines)).encode())


def _factors_quarantined(rule: str) -> Callable[[Path], None]:
    def check(tmp: Path) -> None:
        rules = query_rows(tmp / "t.duckdb", "SELECT rule FROM confidence_quarantine")
        assert (rule,) in rules
        scored = query_rows(tmp / "t.duckdb", "SELECT count(*) FROM confidence_steps")
        assert scored == [(1,)]

    return check


def _agent_spans(tmp: Path) -> list[str]:
    """The OTLP JSON lines of a real pydantic-ai run (FunctionModel) in tmp/spans.jsonl."""
    exporter = CollectorFileExporter(tmp / "spans.jsonl")
    weather_agent(tracer_provider(exporter), fail_first_convert=False).run_sync("Weather?")
    return (tmp / "spans.jsonl").read_text().splitlines()


def _otel_truncated_line(tmp: Path) -> list[str]:
    lines = _agent_spans(tmp)
    (tmp / "spans.jsonl").write_text("\n".join([*lines, lines[0][: len(lines[0]) // 2]]) + "\n")
    return _score("spans.jsonl", extra=("--format", "otel"))


def _otel_not_otlp_protobuf(tmp: Path) -> list[str]:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    _agent_spans(tmp)
    (tmp / "value.pb").write_bytes(AnyValue(string_value="not a trace request").SerializeToString())
    return ["import", "otel", "value.pb", "spans.jsonl", "--out", "o.parquet"]


def _otel_report_names(tmp: Path) -> None:
    import polars as pl

    report = pl.read_csv(tmp / "o.import-report.csv")
    assert report["rule"].to_list() == ["malformed_record"]
    assert report["source_file"].to_list() == [str(tmp / "value.pb")]
    assert "not an OTLP ExportTraceServiceRequest" in report["reason"][0]
    assert query_parquet_rows(tmp / "o.parquet") == 1


def _judge_table(tmp: Path) -> list[str]:
    (tmp / "ev.toml").write_text('[llm_default]\nmodel = "openai:gpt-4o-mini"\n')
    (tmp / "answers.jsonl").write_text(
        '{"id": 1, "user_query": "q", "submission": "s"}\n{"id": 2\n'
    )
    return ["judge", "--db", "t.duckdb", "--table", "answers.jsonl", "--config", "ev.toml"]


CASES = [
    Case(
        "otel: a truncated OTLP JSON line after a whole run",
        _otel_truncated_line,
        0,
        "malformed_record",
        scored=1,
    ),
    Case(
        "otel: a protobuf file that is not an OTLP request",
        _otel_not_otlp_protobuf,
        0,
        checks=[_otel_report_names],
    ),
    Case(
        "judge: a table line that is not JSON",
        _judge_table,
        2,
        message="line 2 is not valid JSON",
        checks=[_no_database],
        env={"OPENAI_API_KEY": "sk-test-not-used"},
    ),
    Case("an unreadable file beside a good one", _unreadable, 0, "unreadable_file", scored=2),
    Case("a file name that is not UTF-8", _non_utf8_name, 0, scored=3),
    Case("--db is not a DuckDB file", _not_duckdb, 2, message="cannot be opened as a DuckDB"),
    Case("--db is a folder", _db_folder, 2, message="is a folder"),
    Case("sql --db is not a DuckDB file", _sql_not_duckdb, 2, message="cannot be opened"),
    Case("sql: a column that does not exist", _sql_bad_column, 2, message="the query failed"),
    Case(
        "report --db does not exist",
        lambda tmp: ["report", "--db", "t.duckdb", "--out", "r.html"],
        2,
        message="database t.duckdb does not exist",
    ),
    Case(
        "report --db is not a DuckDB file",
        lambda tmp: ["report", *_sql_not_duckdb(tmp)[2:], "--out", "r.html"],
        2,
        message="cannot be opened as a DuckDB",
    ),
    Case(
        "report --since is not a date",
        lambda tmp: ["report", "--db", "t.duckdb", "--since", "2026-13-01"],
        2,
        message="--since '2026-13-01' is not a date",
    ),
    Case(
        "report --since after --until",
        lambda tmp: [
            "report",
            "--db",
            "t.duckdb",
            "--since",
            "2026-10-05",
            "--until",
            "2026-10-01",
        ],
        2,
        message="--since 2026-10-05 is after --until 2026-10-01",
    ),
    *_config_cases(),
    Case(
        "chat: a JSONL line nested 10,000 deep",
        _deep_chat_lines,
        0,
        checks=[_imported_one_rejected_one],
    ),
    Case(
        "chat: a JSON element nested 10,000 deep",
        _deep_chat_array,
        0,
        checks=[_imported_one_rejected_one],
    ),
    Case("operations: a line nested 10,000 deep", _ops_deep, 0, checks=[_operation_quarantine(1)]),
    Case(
        "operations: malformed, id-less and mistyped lines",
        _ops_bad_lines,
        0,
        checks=[_operation_quarantine(3)],
    ),
    Case("operations: a UTF-8 BOM", _ops_bom, 0, checks=[_operation_quarantine(0)]),
    Case(
        "created_at pushed past year 9999 by its offset",
        lambda tmp: _rows(tmp, trace(7, created_at="9999-12-31T23:59:59-01:00")),
        0,
        "invalid_created_at",
        message=None,
        scored=2,
    ),
    Case(
        "dangling links, link loops, hidden files",
        _folder_with_odd_entries,
        0,
        "unreadable_file",
        scored=2,
    ),
    Case(
        "a missing input path",
        lambda tmp: _score("nothere.jsonl"),
        2,
        message="does not exist",
        checks=[_no_database],
    ),
    Case(
        "invalid and truncated JSON lines",
        lambda tmp: _rows(tmp, "{broken\n", '{"id": "x"'),
        0,
        "invalid_json",
        scored=2,
    ),
    Case("a BOM and a NUL byte", lambda tmp: _rows(tmp, "\ufeff", trace(5), "\n\0\n"), 0, scored=3),
    Case("a lone surrogate", lambda tmp: _rows(tmp, '{"id": "\\ud800"}\n'), 0, scored=2),
    Case(
        "a truncated Parquet file", lambda tmp: _parquet_broken(tmp), 0, "unreadable_file", scored=2
    ),
    Case(  # read by its first bytes, as gzip: a mistake of the name, not of the data
        "a gzip file named .jsonl", _gzip("a.jsonl", bytes), 0, scored=3, checks=[_no_work_files]
    ),
    Case(
        "a gzip file cut off",
        _gzip("a.jsonl.gz", lambda data: data[:-12]),
        0,
        "unreadable_file",
        scored=2,
        checks=[_no_work_files],
    ),
    Case(
        "a .gz file that is not gzip",
        _gzip("a.jsonl.gz", lambda data: b"not gzip: " + data),
        0,
        "unreadable_file",
        scored=2,
    ),
    Case(
        "factors: a line nested 5,000 deep",
        _factor_lines('{"trace_id": "t2", "x": ' + "[" * 5000 + "]" * 5000 + "}\n"),
        0,
        checks=[_factors_quarantined("too_deep")],
    ),
    Case(
        "factors: an integer past 64 bits",
        _factor_lines(json.dumps({**FACTOR_ROW, "trace_id": "t3", "step_index": 2**70}) + "\n"),
        0,
        checks=[_factors_quarantined("wrong_type")],
    ),
    Case(
        "factors: a lone surrogate",
        _factor_lines('{"trace_id": "\\ud800", "step_index": 0}\n'),
        0,
        checks=[_factors_quarantined("invalid_text")],
    ),
    Case(
        "factors: a gzip file named .jsonl",
        lambda tmp: _factors(tmp, gzip.compress(json.dumps(FACTOR_ROW).encode())),
        2,
        message="not UTF-8",
    ),
]


def _run(args: list[str], cwd: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **extra}
    env.pop("PREFECT_API_URL", None)
    return subprocess.run(
        [TRACEGRADE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("tracegrade:")]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_gets_one_clear_answer(tmp_path: Path, case: Case) -> None:
    done = _run(case.prepare(tmp_path), tmp_path, case.env)
    assert "Traceback" not in done.stderr + done.stdout
    assert "leaked" not in done.stderr
    assert done.returncode == case.status, done.stderr
    if case.status != 0:
        (message,) = _messages(done.stderr)
        assert case.message is not None and case.message in message
    db = tmp_path / "t.duckdb"
    if case.scored is not None:
        ((read, scored, quarantined),) = query_rows(
            db, "SELECT sum(rows_read), sum(rows_scored), sum(rows_quarantined) FROM files"
        )
        assert read == scored + quarantined and scored == case.scored
    if case.rule is not None:
        rules = {rule for (rule,) in query_rows(db, "SELECT rule FROM quarantine")}
        assert case.rule in rules
    for check in case.checks:
        check(tmp_path)
