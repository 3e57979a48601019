"""The judge's models: "provider:model-name" turned into a pydantic-ai Model, for the
providers pydantic-ai knows and for the configuration's `[endpoints]`, and what each model's
profile says about output modes and the field of the token cap.

Nothing here sends a request; `pipelines.judge.calls` does.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from urllib.parse import urlparse

from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.profiles.openai import OpenAIModelProfile
from pydantic_ai.providers.openai import OpenAIProvider

from transforms.config.endpoints import Endpoint
from transforms.judge.providers import pydantic_ai_model

__all__ = [
    "EndpointChatModel",
    "ModelFactory",
    "default_model_factory",
    "effective_output_mode",
    "judge_model_factory",
    "token_field",
]

ModelFactory = Callable[[str], Model]
"""Turns "provider:model-name" into a pydantic-ai Model (tests pass FunctionModel here)."""

_NO_KEY = "no-key"
"""Sent to an endpoint without `api_key_env`: the OpenAI client needs some key, and it must not
fall back to OPENAI_API_KEY, which belongs to another server."""


class EndpointChatModel(OpenAIChatModel):
    """A chat model of one `[endpoints.NAME]` server, with that server's base URL and key."""

    def __init__(self, model_name: str, endpoint_name: str, endpoint: Endpoint, key: str) -> None:
        profile = OpenAIModelProfile(
            # Whether an arbitrary server can call tools is unknown; every one answers text.
            default_structured_output_mode="prompted",
            supports_json_schema_output=True,
            supports_json_object_output=endpoint.json_mode,
            openai_system_prompt_role=endpoint.system_role,
            openai_chat_supports_max_completion_tokens=(
                endpoint.token_field == "max_completion_tokens"
            ),
        )
        provider = OpenAIProvider(base_url=endpoint.base_url, api_key=key)
        super().__init__(model_name, provider=provider, profile=profile)
        self.endpoint_name = endpoint_name
        self.native_format = endpoint.native_format


_models: dict[str, Model] = {}


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _foreign_openai_base_url() -> bool:
    """OPENAI_BASE_URL points at a server other than OpenAI's (vLLM, llama.cpp, Ollama)."""
    url = os.environ.get("OPENAI_BASE_URL", "").strip()
    return bool(url) and urlparse(url).hostname != "api.openai.com"


def default_model_factory(model: str) -> Model:
    """pydantic-ai's model for "provider:model-name", built once per process.

    Keys and base URLs come from the provider's environment variables (e.g. OPENAI_API_KEY,
    OPENAI_BASE_URL); "openai-chat:" reaches any OpenAI-compatible chat completions server,
    and with OPENAI_BASE_URL set to a server other than OpenAI's the token cap is sent as
    `max_tokens`, the field every such server reads.
    """
    # A model holds the client built from the environment when it was made: a changed base URL
    # or key (another server, a rotated key) gets a new one. Only a digest of the key is kept.
    environment = sorted(
        (name, _digest(value))
        for name, value in os.environ.items()
        if name.endswith(("_BASE_URL", "_API_KEY"))
    )
    key = f"{model}|{environment}"
    if key not in _models:
        provider, _, name = model.partition(":")
        if provider == "openai-chat" and _foreign_openai_base_url():
            profile = OpenAIModelProfile(openai_chat_supports_max_completion_tokens=False)
            _models[key] = OpenAIChatModel(name, provider="openai", profile=profile)
        else:
            _models[key] = infer_model(pydantic_ai_model(model))
    return _models[key]


def _endpoint_model(model: str, endpoint_name: str, endpoint: Endpoint) -> Model:
    key_value = _NO_KEY
    if endpoint.api_key_env is not None:
        key_value = os.environ.get(endpoint.api_key_env, "").strip() or _NO_KEY
    cache = f"{model}|{endpoint.model_dump_json()}|{_digest(key_value)}"
    if cache not in _models:
        name = model.partition(":")[2]
        _models[cache] = EndpointChatModel(name, endpoint_name, endpoint, key_value)
    return _models[cache]


def judge_model_factory(
    endpoints: Mapping[str, Endpoint], fallback: ModelFactory | None = None
) -> ModelFactory:
    """The factory of a run: `NAME:model` goes to `[endpoints.NAME]`, any other model to
    `fallback` (pydantic-ai's model for it, by default)."""
    other = fallback or default_model_factory

    def factory(model: str) -> Model:
        provider = model.partition(":")[0]
        if provider in endpoints:
            return _endpoint_model(model, provider, endpoints[provider])
        return other(model)

    return factory


def effective_output_mode(configured: str, model: Model) -> str:
    """The output mode a request uses: the configured one, or for `auto` the profile's default
    structured output mode, moved to one the profile supports."""
    if configured != "auto":
        return configured
    profile = model.profile
    mode = str(profile.get("default_structured_output_mode", "tool"))
    if mode == "tool" and not profile.get("supports_tools", True):
        mode = "native"
    if mode == "native" and not profile.get("supports_json_schema_output", False):
        mode = "prompted"
    return mode if mode in ("tool", "native", "prompted") else "tool"


def token_field(model: Model) -> str:
    """The request field the `max_tokens` setting is sent in by this model."""
    if isinstance(model, OpenAIChatModel):
        supported = model.profile.get("openai_chat_supports_max_completion_tokens", True)
        return "max_completion_tokens" if supported else "max_tokens"
    if model.system == "openai":
        return "max_output_tokens"
    return "max_tokens"
