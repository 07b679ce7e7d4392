"""Debian's headless Chromium, driven over the DevTools protocol on a pipe (stdlib only).

    with Chromium.start() as browser:
        page = browser.page(javascript=True)
        page.goto(path.as_uri())                       # returns once the load event fired
        page.evaluate("document.title")
        page.screenshot(out_png, selector="#map")

Why the DevTools protocol over `--remote-debugging-pipe` rather than
`--dump-dom` or playwright: the tests must *use* the page (change a filter,
read what is shown), load it with JavaScript off, take screenshots of one
element and read Chromium's own load timing, and `--dump-dom` does none of
that; playwright-core would add node packages to the test setup and drives
the same protocol anyway. The pipe needs no port (nothing to race for, nothing
reachable from the network) and no websocket library: Chromium reads
NUL-terminated JSON commands on file descriptor 3 and writes replies and
events on descriptor 4 (chromium `content/browser/devtools/devtools_pipe_handler.cc`).

Nothing here waits for time to pass: every wait is for a reply or an event,
and the only clock is a hang guard that fails a step that never answers.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# A step that gets no answer in this long has hung (a loaded machine answers in well under a second).
HANG_GUARD_S = 120.0
# The flags of the issue: headless, no sandbox (containers, root), nothing fetched or synced in the background.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
         "--remote-debugging-pipe")
# fd 3 and 4 in the child; the launcher moves the pipe ends there (dash cannot redirect fds above 9).
_LAUNCHER = ("import os, sys; r, w = int(sys.argv[1]), int(sys.argv[2]); os.dup2(r, 3); os.dup2(w, 4); "
             "os.close(r); os.close(w); os.execv(sys.argv[3], sys.argv[3:])")


def executable() -> str | None:
    """Chromium on this machine (Debian's package installs /usr/bin/chromium), or None."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    """Chromium answered a command with an error, died, or hung (past the hang guard)."""


@dataclass
class Chromium:
    process: subprocess.Popen[bytes]
    profile: str
    commands: int  # our end of Chromium's fd 3
    replies: int  # our end of Chromium's fd 4
    buffer: bytes = b""
    next_id: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    @contextlib.contextmanager
    def start(cls, path: str | None = None) -> Iterator[Chromium]:
        binary = path or executable()
        if binary is None:
            raise BrowserError("chromium is not installed")
        profile = tempfile.mkdtemp(prefix="audit-chromium-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(high_r), str(high_w), binary, *FLAGS,
             f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(high_r, high_w))
        os.close(high_r)
        os.close(high_w)
        browser = cls(process, profile, to_browser_w, from_browser_r)
        try:
            browser.call("Browser.getVersion")
            yield browser
        finally:
            browser.close()

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()  # the process this object started, by its own handle
            self.process.wait(timeout=30)
        for fd in (self.commands, self.replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    # --- the protocol ------------------------------------------------------------------------

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        return self.next_id

    def _receive(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.replies], [], [], max(left, 0))
            if not ready:
                raise BrowserError(f"chromium gave no answer to {waiting_for} within {HANG_GUARD_S:.0f} s (hung)")
            chunk = os.read(self.replies, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium exited while waiting for {waiting_for}")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        decoded: dict[str, Any] = json.loads(message)
        return decoded

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send a command and return its result (events that arrive meanwhile are kept in `events`)."""
        number = self.send(method, params, session)
        deadline = time.monotonic() + HANG_GUARD_S
        while True:
            message = self._receive(deadline, method)
            if message.get("id") == number:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_event(self, method: str, session: str | None) -> dict[str, Any]:
        """The first event `method` of `session` not yet consumed (waiting for it if needed)."""
        deadline = time.monotonic() + HANG_GUARD_S
        while True:
            for position, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self.events[position]
                    return event
            self.events.append(self._receive(deadline, f"event {method}"))

    def page(self, javascript: bool = True, width: int = 1400, height: int = 900) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.call("Page.enable")
        page.call("Network.enable")
        page.call("Runtime.enable")
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        if not javascript:
            page.call("Emulation.setScriptExecutionDisabled", {"value": True})
        return page


@dataclass
class Page:
    browser: Chromium
    session: str
    requests: list[str] = field(default_factory=list)  # every URL the page asked for while it loaded

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, self.session)

    def goto(self, url: str) -> None:
        """Navigate and return once the load event fired; records the URLs requested on the way."""
        self.browser.events = [e for e in self.browser.events if e.get("sessionId") != self.session]
        answer = self.call("Page.navigate", {"url": url})
        if answer.get("errorText"):
            raise BrowserError(f"cannot open {url}: {answer['errorText']}")
        self.browser.wait_event("Page.loadEventFired", self.session)
        self.requests = self.requested()

    def requested(self) -> list[str]:
        """Every URL the page asked the network for since it was last navigated (events seen so far)."""
        self.call("Runtime.evaluate", {"expression": "0"})  # a round trip: the events sent before it are in
        return [e["params"]["request"]["url"] for e in self.browser.events
                if e.get("sessionId") == self.session and e.get("method") == "Network.requestWillBeSent"]

    def blocked(self) -> dict[str, str]:
        """URL -> why Chromium stopped the request before it left (`csp`...), from the events seen so far."""
        self.call("Runtime.evaluate", {"expression": "0"})
        mine = [e for e in self.browser.events if e.get("sessionId") == self.session]
        urls = {e["params"]["requestId"]: e["params"]["request"]["url"] for e in mine
                if e.get("method") == "Network.requestWillBeSent"}
        return {urls.get(e["params"]["requestId"], "?"): e["params"].get("blockedReason", "")
                for e in mine if e.get("method") == "Network.loadingFailed"}

    def evaluate(self, expression: str, await_promise: bool = False) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise})
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise BrowserError(f"{expression[:80]!r} threw: {details.get('exception', {}).get('description', details)}")
        return answer["result"].get("value")

    def html(self) -> str:
        """The document as it is now (the DOM, serialised), without running any page script."""
        root = self.call("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        outer: str = self.call("DOM.getOuterHTML", {"nodeId": root})["outerHTML"]
        return outer

    def console_errors(self) -> list[str]:
        """Errors the page logged (a CSP violation, a script error), from the events seen so far."""
        out = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            if event.get("method") == "Runtime.exceptionThrown":
                out.append(str(event["params"]["exceptionDetails"].get("text")))
            elif event.get("method") == "Runtime.consoleAPICalled" and event["params"].get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in event["params"]["args"]))
        return out

    def box(self, selector: str) -> dict[str, float]:
        """The page coordinates of the first element matching `selector` (the DOM domain: works without JS)."""
        root = self.call("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = self.call("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        if not node:
            raise BrowserError(f"no element matches {selector!r}")
        quad = self.call("DOM.getBoxModel", {"nodeId": node})["model"]["border"]
        xs, ys = quad[0::2], quad[1::2]
        return {"x": min(xs), "y": min(ys), "width": max(xs) - min(xs), "height": max(ys) - min(ys)}

    def screenshot(self, path: Path, selector: str | None = None, margin: int = 8) -> Path:
        """A PNG of the page (the whole of it) or of one element, written to `path`."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if selector is not None:
            box = self.box(selector)
            params["clip"] = {"x": max(box["x"] - margin, 0), "y": max(box["y"] - margin, 0),
                              "width": box["width"] + 2 * margin, "height": box["height"] + 2 * margin, "scale": 1}
        else:
            metrics = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": metrics["width"], "height": metrics["height"], "scale": 1}
        data = self.call("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def load_timing(self) -> dict[str, float]:
        """Chromium's own Navigation Timing of the last load, in milliseconds from the navigation's start."""
        entry = self.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
        timing: dict[str, float] = json.loads(entry)
        return timing


# --- the real mermaid library, for the Markdown report's flowcharts ---------------------------------

MERMAID_DIR = Path(__file__).resolve().parent / "mermaid"  # package.json pins the version; node_modules is ignored
MERMAID_JS = MERMAID_DIR / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"  # the UMD build: one classic script


class Unavailable(Exception):
    """What the machine lacks for a browser test (the reason a test skips)."""


def pinned_mermaid() -> str:
    pinned: str = json.loads((MERMAID_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]["mermaid"]
    return pinned


def installed_mermaid() -> str | None:
    manifest = MERMAID_DIR / "node_modules" / "mermaid" / "package.json"
    if not manifest.is_file() or not MERMAID_JS.is_file():
        return None
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version


def mermaid_library() -> Path:
    """dist/mermaid.min.js of the pinned version, installed with npm when it is not there yet.

    `.ci/run` installs it first; a test run on a machine where it is missing installs it the
    same way (one worker at a time: a lock file), and raises `Unavailable` without node/npm or
    when npm cannot install it.
    """
    if installed_mermaid() == pinned_mermaid():
        return MERMAID_JS
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise Unavailable("node/npm are not installed: the Markdown report's Mermaid is not rendered with mermaid")
    with open(MERMAID_DIR / ".install.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_mermaid() != pinned_mermaid():
            done = subprocess.run([npm, "install", "--prefix", str(MERMAID_DIR), "--no-audit", "--no-fund",
                                   "--ignore-scripts", "--no-package-lock"], capture_output=True, text=True,
                                  timeout=600, check=False)
            if done.returncode != 0 or installed_mermaid() != pinned_mermaid():
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise Unavailable(f"npm could not install mermaid@{pinned_mermaid()} into {MERMAID_DIR}: {last}")
    return MERMAID_JS
