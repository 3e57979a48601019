"""What every configuration file kind shares: the strict model base, the one validation step
and its error message, and importing a user's "module:Class".

Reading a file is storage's (`storage.config_files`); everything here works on the parsed data.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from transforms.errors import ConfigError

__all__ = [
    "StrictModel",
    "describe_validation_error",
    "import_object",
    "toml_text",
    "validate_config",
]

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """A configuration table: unknown keys are errors, values are frozen once loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_UNKNOWN_KEY_FIX = "remove it or check its spelling"


def describe_validation_error(
    error: ValidationError,
    source: str,
    *,
    subject: str = "configuration",
    unknown_key_fix: str = _UNKNOWN_KEY_FIX,
    skip_mapping_input: bool = False,
    show_input: bool = True,
) -> str:
    """One line per problem of `error`: the key, the value received and the rule it broke.

    Args:
        error: what pydantic raised while validating the file's data.
        source: where the data came from (a path, or "command-line options").
        subject: the kind of configuration, as in "invalid {subject} in {source}:".
        unknown_key_fix: what to tell the user about a key the model forbids.
        skip_mapping_input: leave out a received value that is a whole table (a dict), which
            would repeat the section instead of naming the value at fault.
        show_input: False leaves every received value out, for models whose own messages
            already name it.

    Returns:
        The message: a heading line, then one indented line per problem.
    """
    lines = [f"invalid {subject} in {source}:"]
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        if item["type"] == "extra_forbidden":
            lines.append(f"  {where}: unknown key; {unknown_key_fix}")
            continue
        received = item.get("input")
        message = item["msg"].removeprefix("Value error, ")
        if not show_input or (skip_mapping_input and isinstance(received, dict)):
            lines.append(f"  {where}: {message}")
        else:
            lines.append(f"  {where} = {received!r}: {message}")
    return "\n".join(lines)


def validate_config(
    data: Mapping[str, Any],
    model: type[M],
    source: str,
    *,
    kind: str = "configuration",
    error: type[ConfigError] = ConfigError,
    **describe: Any,
) -> M:
    """`data` validated as `model`, or `error` whose message names every bad key and the fix.

    Args:
        data: the parsed TOML (and any overrides).
        model: the pydantic model of the file kind.
        source: where the data came from (a path, or "command-line options").
        kind: the file kind, as in "invalid {kind} in {source}:".
        error: the ConfigError subclass to raise.
        describe: keyword arguments of `describe_validation_error`.
    """
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise error(describe_validation_error(exc, source, subject=kind, **describe)) from None


def import_object(spec: str, search: Sequence[Path] = ()) -> Any:
    """The object a "module:Name" names, importing the module from sys.path, the working
    directory, or one of the `search` folders (the configuration file's folder).

    Raises:
        ImportError: the module or the name cannot be found; the message says where it looked.
    """
    module_name, _, name = spec.partition(":")
    folders = [str(Path.cwd()), *(str(folder) for folder in search)]
    for folder in folders:
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            f"{spec!r} cannot be imported ({exc}); check the module path and that the module "
            f"is importable from the working directory or {', '.join(folders[1:]) or 'sys.path'}"
        ) from None


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)  # a TOML basic string


def _is_tables(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def toml_text(name: str, table: Mapping[str, Any], array: bool = False) -> list[str]:
    """`table` as the lines of TOML table `name` (an element of array `name` when `array`;
    the whole document when `name` is empty): its plain values, then its tables and arrays
    of tables. Keys that are not bare are quoted; None values are left out."""
    plain = [
        f"{_key(key)} = {_toml_value(value)}"
        for key, value in table.items()
        if value is not None and not isinstance(value, dict) and not _is_tables(value)
    ]
    header = f"[[{name}]]" if array else f"[{name}]"
    lines = [header] if name and (plain or array or not table) else []
    lines += plain
    for key, value in table.items():
        child = f"{name}.{_key(key)}" if name else _key(key)
        tables = [value] if isinstance(value, dict) and value else []
        for item in value if _is_tables(value) else tables:
            sub = toml_text(child, item, array=not tables)
            lines += ([""] if sub[:1] and sub[0].startswith("[") else []) + sub
    return lines
