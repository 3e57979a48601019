"""Open a local HTML file in headless Chromium, with every network request blocked, and say
what happened: seconds until the load event and until every Plotly chart was drawn, console
errors and uncaught exceptions, requests other than the file itself, the marks drawn in each
chart's plot area, and a screenshot of the first screen.

Talks to Chromium over the DevTools protocol (a websocket; the `websockets` package Prefect
already needs), so no browser driver is installed. Used by the report's browser test and
bench/bench_report.py:

    python scripts/chromium_page.py report.html --screenshot first-screen.png
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

__all__ = ["PageCheck", "chromium_binary", "open_page", "screenshot_url"]

_CHARTS_JS = """
Array.from(document.querySelectorAll('.js-plotly-plot')).map(div => {
  const plot = div.querySelector('.cartesianlayer .overplot');
  const box = plot ? plot.getBBox() : {width: 0, height: 0};
  const marks = div.querySelectorAll(
    '.overplot .trace path.js-line, .overplot .trace .point').length;
  return {id: div.id, traces: (div.data || []).length, marks: marks,
          width: box.width, height: box.height};
})
"""
_DRAWN_JS = (
    "document.readyState === 'complete' && Array.from(document.querySelectorAll("
    "'.js-plotly-plot')).every(d => d._fullLayout && d.querySelector('.cartesianlayer .overplot .trace'))"
)


@dataclass
class PageCheck:
    """What one load of the page showed."""

    load_s: float = 0.0
    drawn_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    charts: list[dict[str, Any]] = field(default_factory=list)


def chromium_binary() -> str | None:
    """The Chromium on PATH (Debian's `chromium`), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class _Session:
    """One websocket to the browser, speaking to one page through a flat session."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"id": next(self.ids), "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        self.socket.send(json.dumps(message))
        while True:
            reply = json.loads(self.socket.recv(timeout=60))
            if reply.get("id") == message["id"]:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(event.get("method") == method for event in self.events):
            self.events.append(json.loads(self.socket.recv(timeout=deadline - time.monotonic())))

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")


def _launch(binary: str, profile: str) -> tuple[subprocess.Popen[bytes], str]:
    command = [
        binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-extensions", "--disable-background-networking", "--disable-sync",
        "--disable-component-update", "--disable-default-apps", "--mute-audio",
        f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank",
    ]  # fmt: skip
    log = Path(profile) / "stderr.log"  # a file, not a pipe: a full pipe would stall Chromium
    with log.open("wb") as sink:
        browser = subprocess.Popen(
            command, stderr=sink, stdout=subprocess.DEVNULL, start_new_session=True
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and browser.poll() is None:
        found = re.search(r"DevTools listening on (ws://\S+)", log.read_text(errors="replace"))
        if found:
            return browser, found.group(1)
        time.sleep(0.05)
    _stop(browser)
    raise RuntimeError(f"{binary} did not listen for DevTools: {log.read_text(errors='replace')}")


def _stop(browser: subprocess.Popen[bytes]) -> None:
    """End the browser and the helper processes it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(browser.pid, signal.SIGKILL)
    browser.wait()


def _page(session: _Session, *, offline: bool = True, size: tuple[int, int] = (1280, 900)) -> None:
    target = session.call("Target.createTarget", url="about:blank")["targetId"]
    attached = session.call("Target.attachToTarget", targetId=target, flatten=True)
    session.session = attached["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        session.call(f"{domain}.enable")
    if offline:
        session.call("Network.setBlockedURLs", urls=["http://*", "https://*", "ws://*", "wss://*"])
    session.call(
        "Emulation.setDeviceMetricsOverride", width=size[0], height=size[1], deviceScaleFactor=1,
        mobile=False,
    )  # fmt: skip


def _findings(session: _Session, page_url: str, check: PageCheck) -> None:
    for event in session.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            check.errors.append(" ".join(str(a.get("value", a)) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            check.errors.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            check.errors.append(params["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if url != page_url:
                check.requests.append(url)


@contextlib.contextmanager
def _browser_page(offline: bool, size: tuple[int, int] = (1280, 900)) -> Iterator[_Session]:
    """A fresh headless Chromium with one page open, ended with the block."""
    binary = chromium_binary()
    if binary is None:
        raise RuntimeError("no chromium on PATH (make browser installs Debian's package)")
    with tempfile.TemporaryDirectory(
        prefix="tracegrade-chromium-", ignore_cleanup_errors=True
    ) as profile:
        browser, endpoint = _launch(binary, profile)
        try:
            with connect(endpoint, max_size=None, open_timeout=30) as socket:
                session = _Session(socket)
                _page(session, offline=offline, size=size)
                yield session
        finally:
            _stop(browser)


def open_page(path: Path, screenshot: Path | None = None, timeout: float = 60.0) -> PageCheck:
    """Load `path` in a fresh headless Chromium and report what happened (see the module)."""
    check = PageCheck()
    page_url = path.resolve().as_uri()
    with _browser_page(offline=True) as session:
        started = time.perf_counter()
        session.call("Page.navigate", url=page_url)
        session.wait_for("Page.loadEventFired", timeout)
        check.load_s = time.perf_counter() - started
        while not session.evaluate(_DRAWN_JS):
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"the charts of {path} were not drawn in {timeout} s")
            time.sleep(0.02)
        check.drawn_s = time.perf_counter() - started
        check.charts = list(session.evaluate(_CHARTS_JS) or [])
        if screenshot is not None:
            shot = session.call("Page.captureScreenshot", format="png")
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        time.sleep(0.2)  # late console messages and requests
        session.evaluate("1")
        _findings(session, page_url, check)
    return check


def screenshot_url(
    url: str,
    screenshot: Path,
    ready_js: str,
    timeout: float = 90.0,
    size: tuple[int, int] = (1600, 1000),
) -> tuple[float, list[str]]:
    """Load a served page (a local server's UI, its own requests allowed), wait until
    `ready_js` is true, and save the first screen to `screenshot`. Returns the seconds until
    ready and the page's console errors."""
    check = PageCheck()
    with _browser_page(offline=False, size=size) as session:
        started = time.perf_counter()
        session.call("Page.navigate", url=url)
        while not session.evaluate(ready_js):
            if time.perf_counter() - started > timeout:
                text = session.evaluate("document.body && document.body.innerText")
                raise TimeoutError(f"{url} was not ready in {timeout} s: {text!r:.500}")
            time.sleep(0.25)
        elapsed = time.perf_counter() - started
        time.sleep(1.5)  # let the last panel finish drawing
        shot = session.call("Page.captureScreenshot", format="png")
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        _findings(session, url, check)
    return elapsed, check.errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path)
    parser.add_argument("--screenshot", type=Path)
    args = parser.parse_args()
    check = open_page(args.html, args.screenshot)
    print(json.dumps(check.__dict__, indent=1))
    return 1 if check.errors or check.requests else 0


if __name__ == "__main__":
    sys.exit(main())
