"""Grafana Tempo's trace exports as OTLP requests.

Tempo hands a trace out as OTLP JSON in the names OTLP had before 1.0: the trace-by-id API
(`GET /api/traces/{id}`, what Grafana downloads) gives `{"batches": [...]}`, each batch a
`resourceSpans` whose `instrumentationLibrarySpans` are its `scopeSpans`, each with its
`instrumentationLibrary` as its `scope`; the v2 API (`GET /api/v2/traces/{id}`) gives
`{"trace": {"resourceSpans": [...]}}`. Ids are hex, as OTLP JSON writes them. Renamed, such a
document is the request the OTLP reader reads; the spans are not touched.
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_tempo_export", "otlp_request"]

_SCOPE_SPANS = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans")


def _batches(value: Any) -> list[Any] | None:
    """The resource spans of a Tempo export (`batches`, or a v2 `trace` holding them)."""
    if not isinstance(value, dict):
        return None
    batches, trace = value.get("batches"), value.get("trace")
    if batches is None and isinstance(trace, dict):
        batches = trace.get("batches", trace.get("resourceSpans"))
    if not isinstance(batches, list) or not batches or not isinstance(batches[0], dict):
        return None
    return batches if any(key in batches[0] for key in _SCOPE_SPANS) else None


def is_tempo_export(value: Any) -> bool:
    """A trace as Tempo exports it: `batches` (or a v2 `trace`) of resource spans."""
    return _batches(value) is not None


def _scope_spans(scope: Any) -> Any:
    if not isinstance(scope, dict) or "instrumentationLibrary" not in scope:
        return scope
    renamed = {key: item for key, item in scope.items() if key != "instrumentationLibrary"}
    return {"scope": scope["instrumentationLibrary"], **renamed}


def _resource_spans(batch: Any) -> Any:
    if not isinstance(batch, dict) or "instrumentationLibrarySpans" not in batch:
        return batch
    renamed = {key: item for key, item in batch.items() if key != "instrumentationLibrarySpans"}
    scopes = batch["instrumentationLibrarySpans"]
    if isinstance(scopes, list):
        scopes = [_scope_spans(scope) for scope in scopes]
    return {**renamed, "scopeSpans": scopes}


def otlp_request(value: Any) -> Any:
    """A Tempo export as the ExportTraceServiceRequest it holds; anything else as it is."""
    batches = _batches(value)
    if batches is None:
        return value
    return {"resourceSpans": [_resource_spans(batch) for batch in batches]}
