"""Turn a pydantic ValidationError into the message a ConfigError carries."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["describe_validation_error"]

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
