"""Phoenix's REST API over HTTP, with bounded retries (docs/phoenix.md).

The one module that talks to a Phoenix server. A request that meets a refused connection, a
timeout, a 429 or a 5xx is tried again after a growing wait (a 429's or 503's `Retry-After`
when it gives one), at most `len(WAITS_S) + 1` times; then `PhoenixUnavailable` says in one line what
happened. The API key, when `PHOENIX_API_KEY` holds one, goes in the request's header only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from transforms.errors import TracegradeError

__all__ = ["PAGE_SIZE", "WAITS_S", "PhoenixApi", "PhoenixUnavailable"]

WAITS_S = (0.5, 1.0, 2.0, 4.0)
"""The waits before each retry of a request, in seconds."""
_MAX_RETRY_AFTER_S = 30.0
PAGE_SIZE = 1000
"""Spans per page: the most Phoenix's API gives at once."""


class PhoenixUnavailable(TracegradeError):
    """Phoenix did not answer a request after every retry, or answered it with an error."""


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return min(float(value), _MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


class PhoenixApi:
    """The endpoints of one Phoenix server that a pull and a push use."""

    def __init__(
        self, endpoint: str, *, timeout_s: float = 30.0, waits_s: tuple[float, ...] | None = None
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._waits = WAITS_S if waits_s is None else waits_s
        headers = {"User-Agent": "tracegrade"}
        key = os.environ.get("PHOENIX_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(base_url=self.endpoint, headers=headers, timeout=timeout_s)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> PhoenixApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of one request, tried again on a transient fault."""
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
                    raise PhoenixUnavailable(
                        f"{what} answered HTTP {response.status_code}: {detail}"
                    )
                else:
                    try:
                        return response.json()
                    except ValueError:
                        raise PhoenixUnavailable(
                            f"{what} answered something that is not JSON"
                        ) from None
            if wait is None:
                break
            time.sleep(wait)
        raise PhoenixUnavailable(
            f"Phoenix did not answer {what} after {len(self._waits) + 1} tries ({problem}); "
            "nothing partial was kept, and the next run continues from the last whole page"
        )

    def spans_page(
        self,
        project: str,
        cursor: str | None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> Any:
        """One page of `project`'s spans, newest first, from `cursor` (None: the newest)."""
        params: dict[str, Any] = {"limit": limit or PAGE_SIZE}
        if cursor is not None:
            params["cursor"] = cursor
        if since is not None:
            params["start_time"] = since.isoformat()
        return self._request("GET", f"/v1/projects/{quote(project, safe='')}/spans", params=params)

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
