"""Loading the confidence configuration: defaults, TOML, and the errors a user sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.config_files import load_confidence_config
from transforms.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "confidence.toml"
    path.write_text(text)
    return path


def test_defaults_match_the_shipped_file() -> None:
    assert load_confidence_config(ROOT / "configs" / "confidence.toml") == load_confidence_config()


def test_values_are_read_from_toml(tmp_path: Path) -> None:
    config = load_confidence_config(
        write(
            tmp_path,
            """
[confidence]
aggregation = "min"
[confidence.thresholds]
silent = 0.95
notify = 0.8
confirm = 0.5
[confidence.penalties]
no_sources = 0.0
""",
        )
    )
    assert (config.aggregation, config.thresholds.silent, config.penalties.no_sources) == (
        "min",
        0.95,
        0.0,
    )
    assert config.config_hash != load_confidence_config().config_hash


@pytest.mark.parametrize("values", ["silent = 0.5\nnotify = 0.7", "notify = 0.4\nconfirm = 0.4"])
def test_thresholds_must_descend(tmp_path: Path, values: str) -> None:
    with pytest.raises(
        ConfigError, match="strictly descending, silent > notify > confirm; received"
    ):
        load_confidence_config(write(tmp_path, f"[confidence.thresholds]\n{values}\n"))


def test_unknown_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"confidence.penalties.slow_answer: unknown key"):
        load_confidence_config(write(tmp_path, "[confidence.penalties]\nslow_answer = 0.1\n"))


def test_bad_values_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"confidence.aggregation = 'median'"):
        load_confidence_config(write(tmp_path, '[confidence]\naggregation = "median"\n'))
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        load_confidence_config(write(tmp_path, '[confidence]\nsearch_tool_pattern = "(("\n'))


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_confidence_config(tmp_path / "nope.toml")


def test_the_shipped_file_names_every_key() -> None:
    import tomllib

    from pydantic import BaseModel

    from transforms.config.confidence import ConfidenceConfig

    shipped = tomllib.loads((ROOT / "configs" / "confidence.toml").read_text())["confidence"]

    def missing(model: type[BaseModel], table: dict[str, object], where: str) -> list[str]:
        out = []
        for name, field in model.model_fields.items():
            kind = field.annotation
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                out += missing(kind, table.get(name, {}), f"{where}{name}.")  # type: ignore[arg-type]
            elif name not in table and f"{where}{name}" not in ("llm.model", "profile"):
                out.append(f"{where}{name}")
        return out

    assert missing(ConfidenceConfig, shipped, "") == []
    text = (ROOT / "configs" / "confidence.toml").read_text()
    assert '# model = "' in text and '# profile = "' in text  # the two without a default value


@pytest.mark.parametrize(
    "text",
    [
        "[confidence]\nexpected_results = 5\n",
        "[confidence.penalties]\nzero_search_results = 0.3\n",
        "[confidence.penalties]\ntool_failure = 0.1\n",
    ],
)
def test_removed_keys_point_at_what_replaced_them(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="unknown key; .*docs/configuration.md lists the keys"):
        load_confidence_config(write(tmp_path, text))
