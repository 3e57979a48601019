"""Judge models: the "provider:model-name" form, and the API key each provider reads."""

from __future__ import annotations

__all__ = ["KEYLESS_WITH_BASE_URL", "api_key_variable", "parse_model"]

_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google-gla": "GOOGLE_API_KEY",
    "google": "GOOGLE_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "CO_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "XAI_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
}
"""The environment variable holding each provider's API key."""

KEYLESS_WITH_BASE_URL = {"openai", "openai-chat", "openai-responses"}
"""Providers that accept no key when OPENAI_BASE_URL points at a local server."""


def parse_model(model: str) -> tuple[str, str]:
    """Split "provider:model-name"; raises ValueError naming the value and the expected form."""
    provider, sep, name = model.partition(":")
    if not sep or not provider.strip() or not name.strip():
        raise ValueError(
            f"model {model!r} must read 'provider:model-name', for example "
            "'openai:gpt-5' or 'anthropic:claude-sonnet-4-5-20250929'"
        )
    from pydantic_ai.providers import infer_provider_class

    try:
        infer_provider_class(provider)
    except ValueError:
        raise ValueError(
            f"model {model!r} names provider {provider!r}, which pydantic-ai does not know; "
            f"use a provider such as {', '.join(sorted(_KEY_VARIABLES))}"
        ) from None
    return provider, name


def api_key_variable(model: str) -> str | None:
    """The environment variable the model's provider reads its key from (None if unknown)."""
    return _KEY_VARIABLES.get(model.partition(":")[0])
