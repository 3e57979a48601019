"""What a judge configuration needs from the machine it runs on: every model's API key in the
environment and its provider's client package installed (SPEC 4: checked before any call), what
a live run needs in words (for `--check` and `--dry-run`, which need no key), and what usually
fixes a model whose replies never parse."""

from __future__ import annotations

import os
from collections.abc import Mapping

from transforms.errors import MissingApiKeyError, ProviderPackageError
from transforms.judge.providers import api_key_variables, keyless_with_base_url, missing_package
from transforms.judge.resolve import JudgeConfig

__all__ = [
    "check_api_keys",
    "check_environment",
    "check_packages",
    "live_run_needs",
    "parse_error_hint",
]


def _as_known(config: JudgeConfig, model: str) -> str:
    """The model as pydantic-ai names it: an endpoint's model is an OpenAI chat model."""
    provider, _, name = model.partition(":")
    return f"openai-chat:{name}" if provider in config.settings.endpoints else model


def check_packages(config: JudgeConfig) -> None:
    """Raise ProviderPackageError naming what to install for the first model whose provider's
    client package is missing."""
    for model in config.models:
        package = missing_package(_as_known(config, model))
        if package is None:
            continue
        provider = model.partition(":")[0]
        users = [m.name for m in config.metrics if m.model == model]
        raise ProviderPackageError(
            f"{config.source}: model {model!r} (metrics {', '.join(users)}) needs the client "
            f"package of provider {provider!r}, which is not installed; install it with "
            f'pip install "{package}"',
            provider=provider,
            package=package,
        )


def _key_variables(config: JudgeConfig, model: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The variables one of which must be set for `model`; empty when none is needed."""
    endpoint = config.settings.endpoints.get(model.partition(":")[0])
    if endpoint is not None:
        return () if endpoint.api_key_env is None else (endpoint.api_key_env,)
    if keyless_with_base_url(model) and env.get("OPENAI_BASE_URL", "").strip():
        return ()
    return api_key_variables(model)


def check_api_keys(config: JudgeConfig, environ: Mapping[str, str] | None = None) -> None:
    """Raise MissingApiKeyError naming the variable of the first model whose key is unset."""
    env = os.environ if environ is None else environ
    for model in config.models:
        variables = _key_variables(config, model, env)
        if not variables or any(env.get(name, "").strip() for name in variables):
            continue
        variable = variables[0]
        provider = model.partition(":")[0]
        users = [m.name for m in config.metrics if m.model == model]
        others = f" (or {', '.join(variables[1:])})" if len(variables) > 1 else ""
        named = (
            f" ([endpoints.{provider}] api_key_env)"
            if provider in config.settings.endpoints
            else ""
        )
        raise MissingApiKeyError(
            f"{config.source}: model {model!r} (metrics {', '.join(users)}) needs an API key in "
            f"the environment variable {variable}{others}{named}, which is not set; export "
            f"{variable}=... before running (keys are never read from the configuration file)",
            variable=variable,
        )


def parse_error_hint(config: JudgeConfig) -> str:
    """What usually fixes replies that never parse as a judgement: for a model on an
    OpenAI-compatible server ([endpoints.NAME], llama.cpp among them) the endpoint keys it does
    not set yet, else another output mode. Said when a run's first replies all fail to parse,
    and by a failed probe."""
    fixes = []
    for name, endpoint in config.settings.endpoints.items():
        if not any(m.partition(":")[0] == name for m in config.models):
            continue
        keys = []
        if not endpoint.json_mode:
            keys.append("json_mode = true (the server then holds replies to JSON)")
        if endpoint.system_role == "system":
            keys.append(
                'system_role = "user" (chat formats such as Gemma\'s drop the system message, '
                "and the instructions with it)"
            )
        if keys:
            fixes.append(f"[endpoints.{name}] " + " and ".join(keys))
    if fixes:
        return (
            "the replies are not the judgement's JSON; for a llama.cpp or other local server "
            "these keys usually fix it: " + "; ".join(fixes) + ' (docs/judge.md, "Judging '
            'with a local model"; tracegrade judge --check --probe tries one call)'
        )
    return (
        'the replies are not the judgement\'s JSON; try output_mode = "tool" or "native" for '
        'the model (docs/judge.md, "Output modes"; tracegrade judge --check --probe tries '
        "one call)"
    )


def live_run_needs(config: JudgeConfig, environ: Mapping[str, str] | None = None) -> list[str]:
    """What a live run of `config` needs from this machine, one line per model: its API key
    variable (and whether it is set) and its provider package (and whether it is installed).
    A dry run and a check print these instead of refusing without them."""
    env = os.environ if environ is None else environ
    lines = []
    for model in config.models:
        users = ", ".join(m.name for m in config.metrics if m.model == model)
        variables = _key_variables(config, model, env)
        if not variables:
            key = "no API key"
        else:
            named = " or ".join(variables)
            state = "set" if any(env.get(v, "").strip() for v in variables) else "not set"
            key = f"{named} ({state})"
        package = missing_package(_as_known(config, model))
        installed = "installed" if package is None else f'missing: pip install "{package}"'
        lines.append(f"  {model} (metrics {users}): {key}; provider package {installed}")
    return lines


def check_environment(config: JudgeConfig, environ: Mapping[str, str] | None = None) -> None:
    """Every model's API key set, then its provider package installed (SPEC 4: both before
    any call). The key is checked first because it costs nothing, while finding a provider's
    package imports its SDK (seconds for some): a command without its key stops at once.

    Raises:
        ProviderPackageError: a provider's client package is missing.
        MissingApiKeyError: a model's API key is not in the environment.
    """
    check_api_keys(config, environ)  # first: it is instant, the package check imports SDKs
    check_packages(config)
