"""The chat import configuration: success expressions, field paths and the TOML file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage.config_files import load_chat_config
from transforms.config.chat import ChatImportConfig, SuccessRule, parse_success_rule
from transforms.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("reward == 1", SuccessRule("reward", "==", 1)),
        ("  info.reward_info.reward>=0.5 ", SuccessRule("info.reward_info.reward", ">=", 0.5)),
        ("info.passed", SuccessRule("info.passed")),
        ('status != "failed"', SuccessRule("status", "!=", "failed")),
        ("done == true", SuccessRule("done", "==", True)),
    ],
)
def test_success_expressions_parse(text: str, rule: SuccessRule) -> None:
    assert parse_success_rule(text) == rule


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("reward = 1", "is not FIELD or FIELD OP VALUE"),
        ("reward == one", "not a JSON literal"),
        ("reward == null", "compare with a number"),
        ('status > "a"', "needs a number"),
        ("", "is not FIELD"),
    ],
)
def test_bad_success_expressions_say_how_to_write_one(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_success_rule(text)


def test_the_defaults_read_the_tau_bench_layout() -> None:
    config = ChatImportConfig()
    assert (config.messages_field, config.id_fields, config.success) == (
        "traj",
        ["task_id", "trial"],
        "reward == 1",
    )
    assert config.base_time == datetime(1970, 1, 1, tzinfo=UTC) and config.retry_window == 3


def test_a_file_is_read_and_options_override_it(tmp_path: Path) -> None:
    path = tmp_path / "chat.toml"
    path.write_text(
        'messages_field = "messages"\nagent_id = "a"\nbase_time = 2024-05-15T20:00:00Z\nretry_window = 1\n'
    )
    config = load_chat_config(path, {"agent_id": "b", "retry_window": None})
    assert (config.messages_field, config.agent_id, config.retry_window) == ("messages", "b", None)
    assert config.base_time == datetime(2024, 5, 15, 20, tzinfo=UTC)


def test_any_retry_window_means_no_limit(tmp_path: Path) -> None:
    path = tmp_path / "chat.toml"
    path.write_text('retry_window = "any"\n')
    assert load_chat_config(path).retry_window is None
    assert load_chat_config(None, {"retry_window": "any"}).retry_window is None
    with pytest.raises(ConfigError, match="retry_window = 'many'"):
        load_chat_config(None, {"retry_window": "many"})


def test_naive_base_time_means_utc() -> None:
    assert load_chat_config(None, {"base_time": "2024-05-15T20:00:00"}).base_time == datetime(
        2024, 5, 15, 20, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"colour": "red"}, "colour: unknown key; the keys are messages_field"),
        ({"success": "reward = 1"}, "success = 'reward = 1'"),
        ({"error_pattern": "("}, "not a regular expression"),
        ({"default_confidence": 1.5}, "default_confidence = 1.5"),
        ({"objective_field": "info..task"}, "is not a field path"),
        ({"id_fields": ["task_id", "task_id"]}, "names a field twice"),
        ({"retry_window": -1}, "retry_window = -1"),
        ({"time_step_seconds": 0}, "time_step_seconds = 0"),
    ],
)
def test_invalid_values_raise_a_config_error_naming_them(
    options: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match="invalid chat import configuration") as raised:
        load_chat_config(None, options)
    assert says in str(raised.value)


def test_a_missing_or_broken_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_chat_config(tmp_path / "none.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("agent_id = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_chat_config(broken)
