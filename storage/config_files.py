"""The one loader of every configuration file: read the TOML, then validate it as its kind.

Each kind's model lives in `transforms.config` (one module per kind); this module only reads
bytes and hands them over, so every kind fails the same way, with one message that names the
file, the line or key, and the fix.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from transforms.errors import ConfigError, JudgeConfigError

if TYPE_CHECKING:  # each kind's model is imported by its loader: a command loads what it reads
    from transforms.config.chat import ChatImportConfig
    from transforms.config.confidence import ConfidenceConfig
    from transforms.config.operations import OperationsConfig, OperationsFile
    from transforms.config.otel import OtelImportConfig
    from transforms.config.scoring import ScoringFile
    from transforms.judge.resolve import JudgeConfig

__all__ = [
    "load_chat_config",
    "load_confidence_config",
    "load_judge_config",
    "load_operations_settings",
    "load_otel_config",
    "load_scorer_set",
    "load_settings",
]


_Mapping = TypeVar("_Mapping", "ChatImportConfig", "OtelImportConfig")

BUILTIN_SOURCE = "(built-in defaults)"
"""The source named by a judge configuration loaded from no file."""


def read_toml(
    path: str | Path, kind: str = "configuration file", error: type[ConfigError] = ConfigError
) -> dict[str, Any]:
    """The parsed TOML of `path`.

    Raises:
        `error`: the file is missing, a folder, unreadable, not UTF-8 text, or not TOML; the
            message names the file (and the line, for TOML syntax) and the fix.
    """
    source = Path(path)
    try:
        raw = source.read_bytes()
    except FileNotFoundError:
        raise error(f"{kind} {source} does not exist; check the path") from None
    except IsADirectoryError:
        raise error(f"{kind} {source} is a folder; give the path of a TOML file") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise error(f"{kind} {source} cannot be read ({reason}); check its permissions") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{kind} {source} is not UTF-8 text (byte {raw[exc.start]:#04x} at offset "
            f"{exc.start}); save it as a UTF-8 TOML file"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{kind} {source} is not valid TOML: {exc}; fix that line") from None


def load_settings(path: str | Path | None = None) -> ScoringFile:
    """The scoring configuration (docs/configuration.md); None gives the defaults."""
    from transforms.config.base import validate_config
    from transforms.config.scoring import ScoringFile

    if path is None:
        return ScoringFile()
    return validate_config(read_toml(path), ScoringFile, str(path))


def load_confidence_config(path: str | Path | None = None) -> ConfidenceConfig:
    """The confidence configuration's `[confidence]` table; None gives the defaults."""
    from transforms.config.base import validate_config
    from transforms.config.confidence import ConfidenceConfig, ConfidenceFile

    if path is None:
        return ConfidenceConfig()
    data = read_toml(path, "confidence configuration file")
    return validate_config(
        data,
        ConfidenceFile,
        str(path),
        kind="confidence configuration",
        unknown_key_fix="remove it or check its spelling; docs/configuration.md lists the keys, "
        "and the keys that replaced those without a counterpart in GRACE's calculator",
    ).confidence


def _import_mapping(
    path: str | Path | None,
    overrides: Mapping[str, Any] | None,
    model: type[_Mapping],
    kind: str,
    *,
    skip_mapping_input: bool = False,
) -> _Mapping:
    """An importer's mapping: the file's keys (top level), then every key of `overrides`."""
    from transforms.config.base import validate_config

    data = {} if path is None else read_toml(path, kind)
    return validate_config(
        data | dict(overrides or {}),
        model,
        "command-line options" if path is None else str(path),
        kind=kind,
        unknown_key_fix=f"the keys are {', '.join(model.model_fields)}",
        skip_mapping_input=skip_mapping_input,
    )


def load_chat_config(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> ChatImportConfig:
    """The chat import mapping: the file's keys (top level), then every key of `overrides`."""
    from transforms.config.chat import ChatImportConfig

    return _import_mapping(path, overrides, ChatImportConfig, "chat import configuration")


def load_otel_config(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> OtelImportConfig:
    """The OTel import mapping: the file's keys (top level), then every key of `overrides`."""
    from transforms.config.otel import OtelImportConfig

    return _import_mapping(
        path, overrides, OtelImportConfig, "OTel import configuration", skip_mapping_input=True
    )


def load_operations_settings(path: str | Path | None = None) -> OperationsFile:
    """A scorer-set file; None gives the presets alone."""
    from transforms.config.base import validate_config
    from transforms.config.operations import OperationsFile

    if path is None:
        return OperationsFile()
    return validate_config(
        read_toml(path, "scorer configuration file"),
        OperationsFile,
        str(path),
        kind="scorer configuration",
        skip_mapping_input=True,
    )


def load_scorer_set(path: str | Path | None = None, name: str | None = None) -> OperationsConfig:
    """The scorer set `name` (else the file's default_set), custom classes constructed."""
    from transforms.config.operations import scorer_set

    settings = load_operations_settings(path)
    return scorer_set(settings, name, None if path is None else Path(path))


def load_judge_config(
    path: str | Path | None,
    *,
    check_keys: bool = True,
    environ: Mapping[str, str] | None = None,
) -> JudgeConfig:
    """The judge configuration (evaluator.toml), resolved; None gives the built-in defaults
    (the four built-in metrics at equal weights). Custom metric modules are also imported from
    the file's folder.

    Raises:
        JudgeConfigError: the file is unreadable or breaks a rule of SPEC section 4.
        ProviderPackageError: `check_keys` and a model's provider package is not installed.
        MissingApiKeyError: `check_keys` and a model's API key is not in the environment.
    """
    from transforms.judge.environment import check_environment
    from transforms.judge.resolve import judge_config

    if path is None:
        config = judge_config({}, BUILTIN_SOURCE)
    else:
        data = read_toml(path, "judge configuration file", JudgeConfigError)
        config = judge_config(data, str(path), Path(path).resolve().parent)
    if check_keys:
        check_environment(config, environ)
    return config
