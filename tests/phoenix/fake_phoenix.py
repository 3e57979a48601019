"""A stand-in for the two Phoenix endpoints a pull and a push use, on 127.0.0.1, for the fault
tests (the real server is tests/phoenix/test_phoenix_server.py's): spans newest first with
Phoenix's cursor (the global id of the first span of the next page), span annotations kept one
per (name, span, identifier), and faults scripted per request.

The spans it serves are the real ones of tests/data/phoenix/phoenix-rest-spans.json (an agent
traced into Phoenix 20.26), renumbered as Phoenix numbers them when they arrive.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

REAL_SPANS = Path(__file__).parents[1] / "data" / "phoenix" / "phoenix-rest-spans.json"


def global_id(row: int) -> str:
    return base64.b64encode(f"Span:{row}".encode()).decode()


def real_traces() -> list[list[dict[str, Any]]]:
    """The real file's three traces, each a list of its spans in the order Phoenix stored them
    (the file is newest first)."""
    spans = list(reversed(json.loads(REAL_SPANS.read_text())["data"]))
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        traces.setdefault(span["context"]["trace_id"], []).append(span)
    return list(traces.values())


def renamed(trace: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """A copy of `trace` with new trace and span ids (another run of the same agent): each id
    begins with the hex digits `tag` instead."""
    mapping: dict[str, str] = {}

    def new(old: str) -> str:
        return mapping.setdefault(old, tag + old[len(tag) :])

    copies = copy.deepcopy(trace)
    for span in copies:
        span["context"]["trace_id"] = new(span["context"]["trace_id"])
        span["context"]["span_id"] = new(span["context"]["span_id"])
        if span["parent_id"]:
            span["parent_id"] = new(span["parent_id"])
    return copies


@dataclass
class FakePhoenix:
    """The server's state: its spans in arrival order, the annotations, the requests it saw,
    and `faults`: per request, None (answer) or what to answer instead (an HTTP status, or
    "garbage" for a 200 that is not JSON, "not a page" for JSON that is not a page, "slow" for an answer 1.5 s late)."""

    url: str = ""
    spans: list[dict[str, Any]] = field(default_factory=list)
    annotations: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)
    faults: list[int | str | None] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    page_cap: int | None = None
    """At most this many spans a page, whatever the request asks (a server may give fewer)."""
    page_delay_s: float = 0.0
    """Each page after the first is answered this late (a pull can be stopped while waiting)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, *traces: list[dict[str, Any]]) -> None:
        """Spans arrive: each is numbered after the ones Phoenix has."""
        with self.lock:
            for trace in traces:
                for span in trace:
                    stored = copy.deepcopy(span)
                    stored["id"] = global_id(len(self.spans) + 1)
                    self.spans.append(stored)

    def page(self, query: dict[str, list[str]]) -> dict[str, Any]:
        limit = int(query.get("limit", ["100"])[0])
        limit = min(limit, self.page_cap or limit)
        newest_first = list(reversed(self.spans))
        if "cursor" in query:
            row = int(base64.b64decode(query["cursor"][0]).decode().split(":")[1])
            newest_first = [s for s in newest_first if _row(s) <= row]
        if "start_time" in query:  # inclusive, as Phoenix's
            since = datetime.fromisoformat(query["start_time"][0])
            newest_first = [
                s for s in newest_first if datetime.fromisoformat(s["start_time"]) >= since
            ]
        rows = newest_first[: limit + 1]
        cursor = rows[limit]["id"] if len(rows) > limit else None
        return {"data": rows[:limit], "next_cursor": cursor}

    def annotate(self, body: dict[str, Any]) -> dict[str, Any]:
        known = {span["context"]["span_id"] for span in self.spans}
        for item in body["data"]:
            if item["span_id"] not in known:
                raise KeyError(item["span_id"])
            self.annotations[(item["name"], item["span_id"], item["identifier"])] = item
        return {"data": [{"id": str(i)} for i, _ in enumerate(body["data"])]}


def _iso(nanoseconds: int) -> str:
    return datetime.fromtimestamp(nanoseconds / 1e9, UTC).isoformat()


def otlp_spans(raw: bytes) -> list[dict[str, Any]]:
    """The spans of an OTLP/HTTP protobuf request as Phoenix's REST API shows them (its
    attributes and events' values as plain JSON)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    def values(pairs: Any) -> dict[str, Any]:
        return {kv.key: next(iter(MessageToDict(kv.value).values()), None) for kv in pairs}

    request = ExportTraceServiceRequest.FromString(raw)
    found = []
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                found.append(
                    {
                        "name": span.name,
                        "context": {"trace_id": span.trace_id.hex(), "span_id": span.span_id.hex()},
                        "span_kind": "UNKNOWN",
                        "parent_id": span.parent_span_id.hex() or None,
                        "start_time": _iso(span.start_time_unix_nano),
                        "end_time": _iso(span.end_time_unix_nano),
                        "status_code": "UNSET",
                        "status_message": "",
                        "attributes": values(span.attributes),
                        "events": [
                            {
                                "name": e.name,
                                "timestamp": _iso(e.time_unix_nano),
                                "attributes": values(e.attributes),
                            }
                            for e in span.events
                        ],
                    }
                )
    return found


def _row(span: dict[str, Any]) -> int:
    return int(base64.b64decode(span["id"]).decode().split(":")[1])


def _handler(state: FakePhoenix) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(body)

        def _serve(self, method: str) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            with state.lock:
                state.requests.append((method, parts.path, query))
                state.headers.append(dict(self.headers))
                fault = state.faults.pop(0) if state.faults else None
            if fault == "slow":  # no answer before the client stops waiting
                time.sleep(1.5)
                return None
            if fault == "garbage":
                return self._answer(200, b"<html>proxy error</html>", "text/html")
            if fault == "not a page":
                return self._answer(200, b'{"spans": []}')
            if isinstance(fault, int):
                return self._answer(fault, b'{"detail": "scripted fault"}')
            if method == "GET" and parts.path.endswith("/spans"):
                if "cursor" in query:
                    time.sleep(state.page_delay_s)
                with state.lock:
                    answer = state.page(query)
            elif method == "POST" and parts.path == "/v1/traces":
                state.add(otlp_spans(raw))
                return self._answer(200, b"", "application/x-protobuf")
            elif method == "POST" and parts.path == "/v1/span_annotations":
                try:
                    with state.lock:
                        answer = state.annotate(json.loads(raw))
                except KeyError as missing:
                    return self._answer(404, f'{{"detail": "span {missing} not found"}}'.encode())
            else:
                return self._answer(404, b'{"detail": "not found"}')
            self._answer(200, json.dumps(answer).encode())

        def do_GET(self) -> None:  # noqa: N802 (the handler's name)
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def fake_phoenix() -> Iterator[FakePhoenix]:
    """A FakePhoenix serving on a thread until the block ends."""
    state = FakePhoenix()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
