"""Local model servers (issue 14): named endpoints beside a cloud model, the output modes, the
token field, the probe and progress lines, against fake OpenAI-compatible servers on
127.0.0.1."""

from __future__ import annotations

import io
from pathlib import Path

import duckdb
import pytest
from judge_helpers import (
    fake_server,
    items,
    judge_once,
    responses_reply,
    serve,
    text_reply,
    tool_reply,
    write_config,
)

from pipelines.judge.probe import probe_models
from storage.config_files import load_judge_config
from tracegrade.cli.progress import LogProgress
from transforms.errors import MissingApiKeyError, ModelFormatError

MIXED = """
[[metrics]]
name = "Relevance"
model = "local:gemma"
weight = 0.5
[[metrics]]
name = "Coverage"
model = "openai:gpt-judge"
weight = 0.5

[endpoints.local]
base_url = "{url}"
api_key_env = "LOCAL_LLM_KEY"
"""

LOCAL = """
[llm_default]
model = "local:gemma"
max_tokens = 64
max_retries = 0
{mode}

[[metrics]]
name = "Relevance"

[endpoints.local]
base_url = "{url}"
{endpoint}
"""


def rows(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT item_id, metric, status, score, comment FROM judge_results "
            "ORDER BY item_id, metric"
        ).fetchall()
    finally:
        con.close()


def test_a_local_endpoint_and_an_openai_model_each_get_their_own_url_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_LLM_KEY", "local-secret-1")
    with serve(lambda n: responses_reply({"score": 64, "comment": "cloud"})) as cloud:
        monkeypatch.setenv("OPENAI_BASE_URL", cloud.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-cloud-secret-2")
        with serve(lambda n: text_reply('{"score": 81, "comment": "local"}')) as local:
            config = write_config(tmp_path, MIXED.format(url=local.url))
            result = judge_once(tmp_path / "j.duckdb", config, items([("t1", "q?", "an answer")]))
    assert local.seen == [("/v1/chat/completions", "Bearer local-secret-1")]
    assert cloud.seen == [("/v1/responses", "Bearer sk-cloud-secret-2")]
    assert result.statuses == {"ok": 2}
    assert rows(tmp_path / "j.duckdb") == [
        ("t1", "Coverage", "ok", 64.0, "cloud"),
        ("t1", "Relevance", "ok", 81.0, "local"),
    ]


def test_an_endpoint_without_a_key_never_receives_openai_api_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-stay-home")
    with serve(lambda n: text_reply('{"score": 50, "comment": "fine"}')) as local:
        config = write_config(tmp_path, LOCAL.format(url=local.url, mode="", endpoint=""))
        judge_once(tmp_path / "j.duckdb", config, items([("t1", "q?", "a")]))
    assert local.seen[0][1] != "" and "sk-must-stay-home" not in local.seen[0][1]


@pytest.mark.parametrize(
    ("endpoint", "field", "absent"),
    [
        ("", "max_tokens", "max_completion_tokens"),
        ('token_field = "max_completion_tokens"', "max_completion_tokens", "max_tokens"),
    ],
)
def test_prompted_mode_reads_json_from_text_and_sends_the_cap_in_the_token_field(
    tmp_path: Path, endpoint: str, field: str, absent: str
) -> None:
    reply = 'Here it is:\n```json\n{"score": 77, "comment": "close", "title": "extra"}\n```'
    with serve(lambda n: text_reply(reply)) as local:
        text = LOCAL.format(url=local.url, mode='output_mode = "prompted"', endpoint=endpoint)
        judge_once(tmp_path / "j.duckdb", write_config(tmp_path, text), items([("t1", "q?", "a")]))
    sent = local.requests[0]
    assert sent[field] == 64 and absent not in sent
    assert "tools" not in sent and "response_format" not in sent
    assert '"score"' in sent["messages"][0]["content"]  # the JSON asked for in the instructions
    assert rows(tmp_path / "j.duckdb") == [("t1", "Relevance", "ok", 77.0, "close")]


@pytest.mark.parametrize(
    ("native_format", "expected_type"),
    [("json_schema", "json_schema"), ("json_object", "json_object")],
)
def test_native_mode_sends_the_schema_as_the_response_format(
    tmp_path: Path, native_format: str, expected_type: str
) -> None:
    with serve(lambda n: text_reply('{"score": 12, "comment": "poor"}')) as local:
        text = LOCAL.format(
            url=local.url,
            mode='output_mode = "native"',
            endpoint=f'native_format = "{native_format}"',
        )
        judge_once(tmp_path / "j.duckdb", write_config(tmp_path, text), items([("t1", "q?", "a")]))
    response_format = local.requests[0]["response_format"]
    assert response_format["type"] == expected_type
    schema = response_format.get("schema") or response_format["json_schema"]["schema"]
    assert set(schema["properties"]) == {"score", "comment"}
    assert rows(tmp_path / "j.duckdb") == [("t1", "Relevance", "ok", 12.0, "poor")]


@pytest.mark.parametrize(
    "reply",
    ["I would give it a good score.", '{"score": 150, "comment": "too high"}', '{"score": 5'],
)
def test_a_text_reply_that_cannot_be_read_is_a_parse_error(tmp_path: Path, reply: str) -> None:
    with serve(lambda n: text_reply(reply, "length")) as local:
        text = LOCAL.format(url=local.url, mode='output_mode = "prompted"', endpoint="")
        judge_once(tmp_path / "j.duckdb", write_config(tmp_path, text), items([("t1", "q?", "a")]))
    assert rows(tmp_path / "j.duckdb") == [("t1", "Relevance", "parse_error", None, None)]


def test_auto_picks_tool_for_openai_chat_and_prompted_for_an_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = {"score": 70, "comment": "ok"}
    with fake_server(lambda n: tool_reply(good), monkeypatch) as cloud:
        config = write_config(
            tmp_path, '[[metrics]]\nname = "Relevance"\nmodel = "openai-chat:j"\n'
        )
        judge_once(tmp_path / "a.duckdb", config, items([("t1", "q?", "a")]))
    assert cloud.requests[0]["tools"][0]["function"]["name"] == "record_judgement"
    with serve(lambda n: text_reply('{"score": 70, "comment": "ok"}')) as local:
        text = LOCAL.format(url=local.url, mode="", endpoint="")
        judge_once(tmp_path / "b.duckdb", write_config(tmp_path, text), items([("t1", "q?", "a")]))
    assert "tools" not in local.requests[0]


def test_openai_base_url_of_another_server_gets_max_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.judge.models import default_model_factory, token_field

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert token_field(default_model_factory("openai-chat:m")) == "max_tokens"
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    assert token_field(default_model_factory("openai-chat:m")) == "max_completion_tokens"


def test_check_names_a_missing_endpoint_key_and_an_unknown_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOCAL_LLM_KEY", raising=False)
    path = write_config(tmp_path, MIXED.format(url="http://127.0.0.1:9/v1"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    with pytest.raises(
        MissingApiKeyError, match=r"LOCAL_LLM_KEY \(\[endpoints.local\] api_key_env\)"
    ):
        load_judge_config(path)
    path.write_text(
        '[llm_default]\nmodel = "lokal:gemma"\n[endpoints.local]\nbase_url = "http://x"\n'
    )
    with pytest.raises(
        ModelFormatError, match=r"llm_default.model: .*'lokal'.*an endpoint \(local\)"
    ):
        load_judge_config(path, check_keys=False)


def test_an_endpoint_key_pasted_into_api_key_env_is_refused_without_echoing_it(
    tmp_path: Path,
) -> None:
    from transforms.errors import JudgeConfigError

    path = tmp_path / "e.toml"
    path.write_text(
        '[llm_default]\nmodel = "local:m"\n[endpoints.local]\nbase_url = "http://127.0.0.1:1/v1"\n'
        'api_key_env = "sk-live-abc123-secret"\n'
    )
    with pytest.raises(JudgeConfigError) as caught:
        load_judge_config(path, check_keys=False)
    assert "endpoints.local.api_key_env" in str(caught.value)
    assert "sk-live-abc123-secret" not in str(caught.value)


def test_the_probe_reports_mode_token_field_and_whether_it_worked(tmp_path: Path) -> None:
    replies = ['{"score": 90, "comment": "right"}', "no json at all"]
    with serve(lambda n: text_reply(replies[(n - 1) % 2])) as local:
        text = LOCAL.format(url=local.url, mode="", endpoint="")
        config = load_judge_config(write_config(tmp_path, text), check_keys=False)
        first, second = probe_models(config)[0], probe_models(config)[0]
    assert (first.output_mode, first.token_field, first.worked) == ("prompted", "max_tokens", True)
    assert "output mode prompted (auto) worked; token field max_tokens" in first.line()
    assert not second.worked and "failed (parse_error" in second.line()
    assert local.count == 2


def test_log_progress_writes_every_tenth_and_after_the_interval() -> None:
    now = [0.0]
    stream = io.StringIO()
    with LogProgress(stream, interval_s=30.0, clock=lambda: now[0]) as sink:
        advance = sink.start("judge", 20, lambda: "judgements ok 3")
        for _ in range(4):
            now[0] += 1.0
            advance(1)
        now[0] += 31.0
        sink.write_due()
        for _ in range(16):
            advance(1)
    lines = stream.getvalue().splitlines()
    assert "judge: 0/20 (0%); judgements ok 3; elapsed 0s" in lines[0]
    assert "judge: 2/20 (10%)" in lines[1] and "ETA 18s" in lines[1]
    assert "judge: 4/20 (20%)" in lines[2]
    assert "judge: 4/20 (20%)" in lines[3] and "elapsed 35s" in lines[3]
    assert "judge: 20/20 (100%)" in lines[-1] and "ETA" not in lines[-1]
    assert len(lines) == 1 + 10 + 1


def test_json_mode_makes_prompted_requests_ask_the_server_for_json(tmp_path: Path) -> None:
    with serve(lambda n: text_reply('{"score": 40, "comment": "thin"}')) as local:
        text = LOCAL.format(
            url=local.url, mode='output_mode = "prompted"', endpoint="json_mode = true"
        )
        judge_once(tmp_path / "j.duckdb", write_config(tmp_path, text), items([("t1", "q?", "a")]))
    assert local.requests[0]["response_format"] == {"type": "json_object"}
    assert rows(tmp_path / "j.duckdb") == [("t1", "Relevance", "ok", 40.0, "thin")]


def test_a_server_whose_first_replies_never_parse_is_told_which_keys_fix_it(
    tmp_path: Path,
) -> None:
    """A llama.cpp config of base_url and output_mode = "prompted" only (what a user writes
    first) got 21 of 21 parse_error and a bare circuit breaker; the stop reason, and the
    probe before the run, now name the endpoint keys that usually fix it."""
    prose = "The answer is correct and clear, so I would give it a high score."
    with serve(lambda n: text_reply(prose)) as local:
        text = LOCAL.format(url=local.url, mode='output_mode = "prompted"', endpoint="")
        text = "max_concurrency = 1\n[retry]\nbase_delay_s = 0.0\ncircuit_breaker = 3\n" + text
        config = write_config(tmp_path, text)
        result = judge_once(
            tmp_path / "j.duckdb", config, items([(f"t{n}", "q?", f"a{n}") for n in range(6)])
        )
        (probe,) = probe_models(load_judge_config(config))
    assert result.stop_reason is not None and "circuit breaker: 3" in result.stop_reason
    for said in (result.stop_reason, probe.line()):
        assert "[endpoints.local] json_mode = true" in said
        assert 'system_role = "user"' in said
