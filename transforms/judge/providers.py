"""Judge models: the "provider:model-name" form, the providers it may name, the API key each
reads, and the package each needs.

A provider is accepted when it is in `PROVIDERS` (the names the docs list, with the original
evaluator's `google-gla` and `google-vertex`) or when pydantic-ai knows it. Which package a
provider needs is only learnt by importing pydantic-ai's provider module, which `missing_package`
does and nothing else here.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

__all__ = [
    "PROVIDERS",
    "Provider",
    "api_key_variables",
    "keyless_with_base_url",
    "missing_package",
    "model_parts",
    "parse_model",
    "pydantic_ai_model",
]


@dataclass(frozen=True)
class Provider:
    """What tracegrade knows of one provider name as written before the colon."""

    pydantic_ai: str
    """pydantic-ai's name of the provider the prefix stands for."""
    key_variables: tuple[str, ...]
    """Environment variables holding its API key (any one will do); empty when the provider
    authenticates otherwise (cloud credentials), and no key is checked."""
    extra: str
    """The pydantic-ai-slim extra that installs its client package."""
    keyless_with_base_url: bool = False
    """No key is needed when OPENAI_BASE_URL points at a (local) OpenAI-compatible server."""


_OPENAI = Provider("openai", ("OPENAI_API_KEY",), "openai", keyless_with_base_url=True)
_GEMINI = Provider("google", ("GOOGLE_API_KEY", "GEMINI_API_KEY"), "google")
_VERTEX = Provider("google-cloud", (), "google")

PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider("anthropic", ("ANTHROPIC_API_KEY",), "anthropic"),
    "cerebras": Provider("cerebras", ("CEREBRAS_API_KEY",), "cerebras"),
    "cohere": Provider("cohere", ("CO_API_KEY",), "cohere"),
    "deepseek": Provider("deepseek", ("DEEPSEEK_API_KEY",), "openai"),
    "fireworks": Provider("fireworks", ("FIREWORKS_API_KEY",), "openai"),
    "google": _GEMINI,
    "google-cloud": _VERTEX,
    "google-gla": _GEMINI,
    "google-vertex": _VERTEX,
    "groq": Provider("groq", ("GROQ_API_KEY",), "groq"),
    "mistral": Provider("mistral", ("MISTRAL_API_KEY",), "mistral"),
    "openai": _OPENAI,
    "openai-chat": _OPENAI,
    "openai-responses": _OPENAI,
    "openrouter": Provider("openrouter", ("OPENROUTER_API_KEY",), "openai"),
    "together": Provider("together", ("TOGETHER_API_KEY",), "openai"),
    "xai": Provider("xai", ("XAI_API_KEY",), "xai"),
}
"""Providers by the name written before the colon. `google-gla` (Gemini API) and
`google-vertex` (Vertex AI) are the original evaluator's names for pydantic-ai's `google` and
`google-cloud`."""

_ALIASES = {"google-gla": "google", "google-vertex": "google-cloud"}


def _known_to_pydantic_ai(provider: str) -> bool:
    from pydantic_ai.providers import infer_provider_class

    try:
        infer_provider_class(provider)
    except ValueError:
        return False
    except ImportError:
        return True  # known; its package is missing, which `missing_package` reports
    return True


def model_parts(model: str) -> tuple[str, str]:
    """Split "provider:model-name", checking the form only.

    Raises:
        ValueError: either side of the colon is missing; the message names the value.
    """
    provider, sep, name = model.partition(":")
    if not sep or not provider.strip() or not name.strip():
        raise ValueError(
            f"model {model!r} must read 'provider:model-name', for example "
            "'openai:gpt-5' or 'anthropic:claude-sonnet-4-5-20250929'"
        )
    return provider, name


def parse_model(model: str, endpoints: Collection[str] = ()) -> tuple[str, str]:
    """Split "provider:model-name" whose provider is known or one of `endpoints` (the names of
    the configuration's `[endpoints]`).

    Raises:
        ValueError: the form is wrong or the provider is unknown; the message names the value
            and lists the providers that are accepted.
    """
    provider, name = model_parts(model)
    known = provider in endpoints or provider in PROVIDERS
    if not known and not _known_to_pydantic_ai(provider):
        named = f", an endpoint ({', '.join(sorted(endpoints))})" if endpoints else ""
        raise ValueError(
            f"model {model!r} names provider {provider!r}, which is not known; use one of "
            f"{', '.join(sorted(PROVIDERS))}{named}; or another provider pydantic-ai knows; "
            f"or add [endpoints.{provider}] with the base_url of an OpenAI-compatible server"
        )
    return provider, name


def pydantic_ai_model(model: str) -> str:
    """The model name pydantic-ai's `infer_model` takes: the original's `google-gla:` and
    `google-vertex:` become `google:` and `google-cloud:`."""
    provider, _, name = model.partition(":")
    return f"{_ALIASES[provider]}:{name}" if provider in _ALIASES else model


def api_key_variables(model: str) -> tuple[str, ...]:
    """The environment variables the model's provider reads its key from (any one of them);
    empty when tracegrade checks no key for it."""
    known = PROVIDERS.get(model.partition(":")[0])
    return () if known is None else known.key_variables


def keyless_with_base_url(model: str) -> bool:
    """The provider needs no key when OPENAI_BASE_URL is set (an OpenAI-compatible server)."""
    known = PROVIDERS.get(model.partition(":")[0])
    return known is not None and known.keyless_with_base_url


_EXTRA = re.compile(r"pydantic-ai-slim\[[a-z0-9_-]+\]")


def missing_package(model: str) -> str | None:
    """What to install for the model's provider (e.g. `pydantic-ai-slim[google]`) when its
    client package is missing, else None. Imports pydantic-ai's provider module to find out."""
    from pydantic_ai.providers import infer_provider_class

    provider = model.partition(":")[0]
    try:
        infer_provider_class(pydantic_ai_model(model).partition(":")[0])
    except ImportError as exc:
        known = PROVIDERS.get(provider)
        if known is not None:
            return f"pydantic-ai-slim[{known.extra}]"
        found = _EXTRA.search(str(exc))
        return found.group(0) if found else f"pydantic-ai-slim[{provider}]"
    except ValueError:
        return None
    return None
