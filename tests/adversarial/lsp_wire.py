"""A raw JSON-RPC client for the adversarial language-server cases: bytes over the real server's
stdio (`python -m server.cli serve`), never through pygls' client, so a case can send what no
well-behaved client would (broken headers, unparsable bodies, wrong envelopes).

It reads the server's stdout and stderr on threads, answers any request the server makes with a
null result (except the methods in `unanswered`: a client that never replies), and tells a case
whether its request was answered, whether a traceback reached stderr, and how much memory the
server has used at its peak (VmHWM).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ANSWER_TIMEOUT_S = 15.0
NO_ID = object()
"""Wait for an answer whose id is null (a message whose id the server cannot know)."""


def frame(body: bytes, header: bytes = b"Content-Length") -> bytes:
    return header + b": %d\r\n\r\n" % len(body) + body


def encode(message: Any) -> bytes:
    # json, not orjson: a case may carry a lone surrogate or a number orjson would refuse to write.
    return json.dumps(message, ensure_ascii=True).encode()


class RawServer:
    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "server.cli", "serve"], cwd=REPO,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
        self.cwd = cwd
        self.unanswered: set[str] = set()
        """Server requests this client never replies to (window/workDoneProgress/create, say)."""
        self.server_requests: list[dict] = []
        self.responses: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []
        self._stderr: list[str] = []
        self._stderr_lock = threading.Lock()
        self._next_id = 1000
        self._write_lock = threading.Lock()
        self._threads = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for thread in self._threads:
            thread.start()

    # -- threads ---------------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.responses.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = out.read(length or 0)
            message = json.loads(body)
            if "method" in message and "id" in message:  # a request of the server's: answer it
                self.server_requests.append(message)
                if message["method"] not in self.unanswered:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append(message)
            else:
                self.responses.put(message)

    def _read_stderr(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            with self._stderr_lock:
                self._stderr.append(line.decode("utf-8", "replace"))

    # -- sending -----------------------------------------------------------------------------------

    def write(self, data: bytes, timeout: float = ANSWER_TIMEOUT_S) -> None:
        """Write, or fail the case (and end the server) when it stops reading its stdin: a case
        must never hang the suite."""
        failed: list[BaseException] = []

        def put() -> None:
            try:
                with self._write_lock:
                    self.proc.stdin.write(data)
                    self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as exc:
                failed.append(exc)

        writer = threading.Thread(target=put, daemon=True)
        writer.start()
        writer.join(timeout + len(data) / 10e6)  # and 1 s per 10 MB
        if writer.is_alive():
            self.proc.kill()
            raise AssertionError(f"the server stopped reading its input ({len(data)} bytes not taken)")
        if failed:
            raise AssertionError(f"the server's input is closed: {failed[0]}")

    def send(self, message: Any) -> None:
        self.write(frame(encode(message)))

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def request(self, method: str, params: Any = None, timeout: float = ANSWER_TIMEOUT_S) -> dict | None:
        msg_id = self.new_id()
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.answer(msg_id, timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def answer(self, msg_id: Any, timeout: float = ANSWER_TIMEOUT_S) -> dict | None:
        """The response to msg_id (NO_ID: the next one with a null id); None if none came in time."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                message = self.responses.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if message is None:  # stdout closed: the server is gone
                self.responses.put(None)
                return None
            if (msg_id is NO_ID and message.get("id") is None) or (msg_id is not NO_ID and message.get("id") == msg_id):
                return message

    def drain(self) -> None:
        while True:
            try:
                message = self.responses.get_nowait()
            except queue.Empty:
                return
            if message is None:
                self.responses.put(None)
                return

    # -- lifecycle -------------------------------------------------------------------------------------

    def initialize(self, workspace: Path | None, options: Any = None, timeout: float = 60.0,
                   capabilities: dict | None = None) -> dict | None:
        params: dict[str, Any] = {"processId": os.getpid(), "capabilities": capabilities or {}, "rootUri": None}
        if workspace is not None:
            params["workspaceFolders"] = [{"uri": workspace.as_uri(), "name": workspace.name}]
        if options is not None:
            params["initializationOptions"] = options
        answer = self.request("initialize", params, timeout=timeout)
        self.notify("initialized", {})
        return answer

    def wait_served(self, timeout: float = 60.0) -> list[dict]:
        """The served workspaces, once there is one (sidecars start after `initialized`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = self.request("kitsoki/mineStatus", {})
            workspaces = (answer or {}).get("result", {}).get("workspaces")
            if workspaces:
                return workspaces
            time.sleep(0.1)
        return []

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int | None:
        """shutdown and exit, else kill; never waits without a bound."""
        if self.alive():
            try:
                self.request("shutdown", timeout=10)
                self.notify("exit")
            except (AssertionError, OSError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        # Close a pipe only once its reader thread has seen the end: closing a buffered stream
        # another thread is reading waits on that thread's lock.
        for thread in self._threads:
            thread.join(5)
        for stream, thread in ((self.proc.stdout, self._threads[0]), (self.proc.stderr, self._threads[1])):
            if not thread.is_alive():
                stream.close()
        return self.proc.returncode

    # -- what a case checks ------------------------------------------------------------------------

    def stderr_mark(self) -> int:
        with self._stderr_lock:
            return len(self._stderr)

    def stderr_since(self, mark: int) -> str:
        time.sleep(0.01)  # let the stderr thread catch up with what the last answer logged
        with self._stderr_lock:
            return "".join(self._stderr[mark:])

    def stderr(self) -> str:
        return self.stderr_since(0)

    def peak_rss_kib(self) -> int:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def wait_notification(self, method: str, timeout: float = 30.0) -> dict | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in list(self.notifications):
                if message.get("method") == method:
                    return message
            time.sleep(0.05)
        return None


def actionable(answer: dict) -> str | None:
    """Why an answer is not one a person can act on (None when it is): an internal error (a bug,
    not a refusal), an empty message, or a traceback in it."""
    error = answer.get("error")
    if error is None:
        return None if "result" in answer else f"neither result nor error: {answer}"
    message = str(error.get("message", ""))
    if error.get("code") == -32603:
        return f"an internal error, not a refusal: {message[:300]}"
    if not message.strip():
        return "an error without a message"
    if "Traceback" in message or "traceback" in json.dumps(error.get("data") or {}):
        return f"a traceback in the answer: {message[:300]}"
    return None


# -- a served demo workspace, shared by the cases of a module ------------------------------------------


PEAK_RSS_ALLOWANCE_KIB = 256 * 1024
"""How much more than after warm-up the server may ever hold (the largest case sends 64 MiB)."""


class Served:
    """The demo workspace with three pending proposals, served by one server; a case that kills
    the server gets a fresh one for the cases after it."""

    def __init__(self, root: Path) -> None:
        from core.demo.walkthrough import lay_out, seed_pass
        from core.proposals.proposer import run_proposer

        _, self.ws, self.transcripts = lay_out(root / "demo")
        _, recipes = seed_pass(self.ws, self.transcripts)
        run_proposer(self.ws, recipes)
        self.workdir = root / "runs"
        self.workdir.mkdir()
        self.server: RawServer | None = None
        self.values: dict[str, Any] = {}
        self.baseline_kib = 0

    def ensure(self) -> RawServer:
        if self.server is not None and self.server.alive():
            return self.server
        if self.server is not None:
            self.server.stop()
        self.server = RawServer(self.ws)
        assert self.server.initialize(self.ws, {"mining": False, "watch": False}) is not None, "initialize"
        assert self.server.wait_served(), "the workspace is served"
        deadline = time.monotonic() + 30
        while not (cards := self.server.request("kitsoki/proposals", {})["result"]["proposals"]):
            assert time.monotonic() < deadline, "the demo workspace has pending proposals"
            time.sleep(0.1)
        card = cards[0]
        self.values = {"{ID}": card["id"], "{TITLE}": card["title"], "{FILE_URI}": card["files"][0]["uri"],
                       "{LINE}": card["files"][0]["line"], "{WS_URI}": self.ws.as_uri(),
                       "{TRANSCRIPTS}": str(self.transcripts), "{WORKDIR}": str(self.workdir)}
        self.baseline_kib = self.server.peak_rss_kib()
        return self.server

    def fill(self, value: Any) -> Any:
        """A case's params with the placeholders ({ID}, {FILE_URI}, ...) of this workspace filled in."""
        if isinstance(value, str):
            return self.values.get(value, value)
        if isinstance(value, dict):
            return {self.fill(k): self.fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        return value

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()


def check_alive_and_clean(served: Served, server: RawServer, mark: int) -> None:
    """The pass rule after every case: the server still answers a request in order, no
    traceback reached stderr, and its peak memory stayed within the allowance."""
    ping = server.request("kitsoki/mineStatus", {})
    assert ping is not None and "result" in ping, f"the next request was not answered: {ping}"
    server.drain()
    stderr = server.stderr_since(mark)
    assert "Traceback" not in stderr, f"a traceback reached stderr:\n{stderr[-3000:]}"
    grown = server.peak_rss_kib() - served.baseline_kib
    assert grown < PEAK_RSS_ALLOWANCE_KIB, f"peak memory grew by {grown // 1024} MiB"
