"""Phoenix's REST API and OTLP/HTTP receivers, with bounded retries (docs/phoenix.md).

The one module that talks to a Phoenix server or an OpenTelemetry receiver. A request that meets a refused connection, a
timeout, a 429 or a 5xx is tried again after a growing wait (a 429's or 503's `Retry-After`
when it gives one), at most `len(WAITS_S) + 1` times; then `ServerUnavailable` says in one line what
happened. Phoenix's API key, when `PHOENIX_API_KEY` holds one, and an OTLP receiver's headers,
from `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,...`, as OpenTelemetry's exporters take them),
go in the requests' headers only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Self
from urllib.parse import quote, unquote

import httpx

from pipelines.errors import ServerUnavailable, UnreadableAnswer
from transforms.errors import PageError
from transforms.phoenix import PulledSpan, page_spans

__all__ = ["PAGE_SIZE", "TIMEOUT_S", "WAITS_S", "OtlpReceiver", "PhoenixApi"]

TIMEOUT_S = 30.0
"""How long one request may take (to connect, or between two reads of its answer)."""
WAITS_S = (0.5, 1.0, 2.0, 4.0)
"""The waits before each retry of a request, in seconds."""
_MAX_RETRY_AFTER_S = 30.0
PAGE_SIZE = 1000
"""Spans per page: the most Phoenix's API gives at once."""


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise UnreadableAnswer("an answer that is not JSON") from None


def _page(response: httpx.Response) -> tuple[list[PulledSpan], str | None]:
    try:
        return page_spans(_json(response))
    except PageError as exc:
        raise UnreadableAnswer(str(exc)) from None


def _body(response: httpx.Response) -> bytes:
    return response.content


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return min(float(value), _MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


class _Http:
    """One server's requests, each tried again on a transient fault."""

    who = "the server"

    def __init__(
        self,
        endpoint: str,
        headers: dict[str, str],
        *,
        timeout_s: float | None = None,
        waits_s: tuple[float, ...] | None = None,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._waits = WAITS_S if waits_s is None else waits_s
        headers = {"User-Agent": "tracegrade", **headers}
        timeout = TIMEOUT_S if timeout_s is None else timeout_s
        self._client = httpx.Client(base_url=self.endpoint, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(
        self,
        method: str,
        path: str,
        *,
        read: Callable[[httpx.Response], Any] = _json,
        **kwargs: Any,
    ) -> Any:
        """What `read` makes of the answer to one request (by default its JSON). A refused
        connection, a timeout, a 429, a 5xx or an answer `read` finds unreadable is tried
        again after the next wait; a 4xx is an error at once."""
        what = f"{method} {self.endpoint}{path}"
        problem = ""
        for attempt in range(len(self._waits) + 1):
            wait = self._waits[attempt] if attempt < len(self._waits) else None
            try:
                response = self._client.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if response.status_code == 429 or response.status_code >= 500:
                    problem = f"HTTP {response.status_code}"
                    if wait is not None:
                        wait = max(wait, _retry_after(response) or 0.0)
                elif response.status_code >= 400:
                    detail = response.text.strip().replace("\n", " ")[:300]
                    raise ServerUnavailable(
                        f"{what} answered HTTP {response.status_code}: {detail}"
                    )
                else:
                    try:
                        return read(response)
                    except UnreadableAnswer as exc:
                        problem = str(exc)
            if wait is None:
                break
            time.sleep(wait)
        raise ServerUnavailable(
            f"{self.who} gave no usable answer to {what} in {len(self._waits) + 1} tries "
            f"(the last: {problem}); what was done before stays done (whole pages, whole "
            "requests), and the next run continues from there"
        )


class PhoenixApi(_Http):
    """The endpoints of one Phoenix server that a pull and a push use."""

    who = "Phoenix"

    def __init__(self, endpoint: str, **options: Any) -> None:
        key = os.environ.get("PHOENIX_API_KEY")
        super().__init__(endpoint, {"Authorization": f"Bearer {key}"} if key else {}, **options)

    def spans_page(
        self,
        project: str,
        cursor: str | None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> tuple[list[PulledSpan], str | None]:
        """One page of `project`'s spans, newest first, from `cursor` (None: the newest): its
        spans and the next page's cursor (None after the last)."""
        params: dict[str, Any] = {"limit": limit or PAGE_SIZE}
        if cursor is not None:
            params["cursor"] = cursor
        if since is not None:
            params["start_time"] = since.isoformat()
        path = f"/v1/projects/{quote(project, safe='')}/spans"
        page: tuple[list[PulledSpan], str | None] = self._request(
            "GET", path, read=_page, params=params
        )
        return page

    def annotate(self, annotations: Sequence[Mapping[str, Any]]) -> Any:
        """Write span annotations (each updates the one of its name, span and identifier)."""
        return self._request(
            "POST", "/v1/span_annotations", params={"sync": "true"}, json={"data": annotations}
        )

    def span_annotations(self, project: str, span_ids: list[str]) -> list[dict[str, Any]]:
        """Every annotation of `span_ids` in `project`, through all pages."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"span_ids": span_ids, "limit": 1000}
            if cursor is not None:
                params["cursor"] = cursor
            page = self._request(
                "GET", f"/v1/projects/{quote(project, safe='')}/span_annotations", params=params
            )
            found.extend(page.get("data", []))
            cursor = page.get("next_cursor")
            if not cursor:
                return found


def _otlp_headers() -> dict[str, str]:
    """OTEL_EXPORTER_OTLP_HEADERS as a dict (`key=value` pairs, comma-separated, URL-encoded)."""
    headers = {}
    for pair in os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "").split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip())] = unquote(value.strip())
    return headers


class OtlpReceiver(_Http):
    """An OTLP/HTTP receiver's traces endpoint: `endpoint` is its base (`http://host:4318`,
    Phoenix's `http://host:6006`) or the traces URL itself (ending in `/v1/traces`)."""

    who = "the OTLP receiver"

    def __init__(self, endpoint: str, **options: Any) -> None:
        base = endpoint.rstrip("/").removesuffix("/v1/traces")
        super().__init__(
            base, {"Content-Type": "application/x-protobuf", **_otlp_headers()}, **options
        )

    def export(self, request: bytes) -> bytes:
        """POST one ExportTraceServiceRequest (protobuf); the receiver's answer."""
        answer: bytes = self._request("POST", "/v1/traces", read=_body, content=request)
        return answer
