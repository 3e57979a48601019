"""`[endpoints.NAME]` of `configs/evaluator.toml`: OpenAI-compatible servers (llama.cpp, vLLM,
Ollama, LM Studio) named once and used as `NAME:model` beside the cloud providers of a run.

Keys never live here: an endpoint names the environment variable that holds its key.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlparse

from pydantic import field_validator

from transforms.config.base import StrictModel

__all__ = ["ENDPOINT_NAME", "Endpoint", "OutputMode"]

OutputMode = Literal["auto", "tool", "native", "prompted"]
"""How a judgement is asked for (docs/judge.md, "Output modes")."""
TokenField = Literal["max_tokens", "max_completion_tokens"]
"""The request field that carries the `max_tokens` cap."""

ENDPOINT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
"""What an endpoint may be called: it is written before the colon of a model name."""
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Endpoint(StrictModel):
    """One OpenAI-compatible chat completions server; `NAME:model` sends `model` to it."""

    base_url: str
    """The server's OpenAI-compatible root, e.g. "http://127.0.0.1:8080/v1"."""
    api_key_env: str | None = None
    """The environment variable holding the server's key; unset sends no key of ours (never
    OPENAI_API_KEY)."""
    token_field: TokenField = "max_tokens"
    """The field the `max_tokens` cap is sent in: `max_tokens`, which every OpenAI-compatible
    server reads (llama.cpp reads only this one), or OpenAI's newer `max_completion_tokens`."""
    native_format: Literal["json_schema", "json_object"] = "json_schema"
    """How `native` output sends the schema: OpenAI's `{"type": "json_schema", ...}`
    (vLLM, Ollama, LM Studio, llama.cpp's llama-server), or `{"type": "json_object",
    "schema": ...}` (llama-cpp-python's server)."""

    json_mode: bool = False
    """`prompted` requests also ask the server for JSON (`{"type": "json_object"}`, no schema),
    which llama.cpp enforces with a grammar; off by default, as some servers (LM Studio)
    refuse it."""
    system_role: Literal["system", "user"] = "system"
    """The role the metric's instructions are sent in: `system`, or `user` for models whose
    chat format drops system messages (Gemma's, in llama-cpp-python's server)."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or not urlparse(value).hostname:
            raise ValueError(
                "base_url must be an http:// or https:// address of an OpenAI-compatible "
                'server, e.g. "http://127.0.0.1:8080/v1"'
            )
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _variable(cls, value: str | None) -> str | None:
        # The value is never echoed: a key pasted here by mistake must not reach a log.
        if value is not None and not _VARIABLE.fullmatch(value):
            raise ValueError(
                "api_key_env must name an environment variable (letters, digits, _), e.g. "
                '"LOCAL_LLM_KEY", not hold the key itself; export the key in that variable'
            )
        return value
