"""A headless Chromium driven over the DevTools protocol (CDP) through a pipe, for tests that
open an HTML report in a real browser: no extra Python package, no network port.

``--remote-debugging-pipe`` makes Chromium read NUL-terminated JSON commands on fd 3 and
write replies and events on fd 4; a shell ``exec`` with ``3<&0 4>&1`` maps them onto the
child's stdin and stdout pipes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        p = shutil.which(name)
        if p:
            return p
    return None


def ensure_chromium() -> tuple[str | None, str]:
    """A Chromium executable, installing Debian's ``chromium`` package when missing and
    possible (root with apt-get). Returns ``(path or None, why not)``."""
    p = find_chromium()
    if p:
        return p, ""
    if os.environ.get("NANDLAB_NO_BROWSER_INSTALL"):
        return None, "chromium not found and NANDLAB_NO_BROWSER_INSTALL is set"
    if not shutil.which("apt-get") or os.geteuid() != 0:
        return None, "chromium not found (install Debian's chromium package to run this test)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log = []
    for cmd in (
        ["apt-get", "install", "-y", "-q", "chromium"],
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "chromium"],
    ):
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"could not install chromium: {e}"
        log.append(r.stderr.strip().splitlines()[-1:] if r.stderr.strip() else [])
        p = find_chromium()
        if p:
            return p, ""
    return None, f"could not install chromium with apt-get: {log}"


class Browser:
    """One headless Chromium page. Use as a context manager."""

    def __init__(self, exe: str, width: int = 1400, height: int = 1000) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="nandlab-chromium-")
        self.stderr = open(Path(self.tmp.name) / "stderr.log", "wb")  # noqa: SIM115
        args = [
            exe,
            "--headless=new",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--user-data-dir={self.tmp.name}/profile",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            ["sh", "-c", 'exec "$@" 3<&0 4>&1 0</dev/null 1>/dev/null', "sh", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        self._id = 0
        self._buf = b""
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        self.width, self.height = width, height

    # -- protocol ------------------------------------------------------------------------
    def _send(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> int:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\0")
        self.proc.stdin.flush()
        return self._id

    def _read(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from chromium")
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium exited: {self.stderr_tail()}")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: bool = True,
        timeout: float = 60.0,
    ) -> dict[str, Any]:
        """Send a command and return its result (events seen meanwhile go to ``events``)."""
        want = self._send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 60.0) -> dict[str, Any]:
        for e in self.events:
            if e["method"] == method:
                return e
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    def stderr_tail(self) -> str:
        try:
            return (Path(self.tmp.name) / "stderr.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    # -- page ------------------------------------------------------------------------------
    def __enter__(self) -> Browser:
        tid = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call(
            "Target.attachToTarget", {"targetId": tid, "flatten": True}, session=False
        )["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        return self

    def open(self, path: Path, timeout: float = 120.0) -> float:
        """Load a file; returns seconds from navigation to the load event."""
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        t0 = time.perf_counter()
        self.call("Page.navigate", {"url": Path(path).resolve().as_uri()})
        self.wait_event("Page.loadEventFired", timeout)
        return time.perf_counter() - t0

    def evaluate(self, expr: str, *, await_promise: bool = False) -> Any:
        r = self.call(
            "Runtime.evaluate",
            {"expression": expr, "returnByValue": True, "awaitPromise": await_promise},
        )
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, out: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            m = self.call("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m["contentSize"]
            params["clip"] = {
                "x": 0,
                "y": 0,
                "width": size["width"],
                "height": min(size["height"], 16000),
                "scale": 1,
            }
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params)["data"]
        out.write_bytes(base64.b64decode(data))
        return out

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        errs = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                errs.append(json.dumps(p.get("exceptionDetails", {}))[:500])
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errs.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                errs.append(f"{p['entry'].get('source')}: {p['entry'].get('text')}")
        return errs

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", session=False, timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()
        self.tmp.cleanup()
