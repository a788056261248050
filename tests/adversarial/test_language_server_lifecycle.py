"""The session's edges, each on a fresh server over stdio: before initialize, after shutdown, exit,
the end of stdin, bad initializationOptions and workspace folders that cannot be served.

Pass rule: every request is answered (ServerNotInitialized before initialize, InvalidRequest after
shutdown); exit ends the process with LSP's code (0 after shutdown, 1 without); the end of stdin
ends it too; a bad initializationOptions value or folder is reported (window/showMessage and
window/logMessage naming it) while the valid parts are used and the workspace is served; no
traceback reaches stderr.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from conftest import adversarial_cases
from lsp_wire import RawServer

pytestmark = pytest.mark.adversarial("language-server")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    from core.demo.walkthrough import lay_out

    _, ws, transcripts = lay_out(tmp_path_factory.mktemp("lsp-life") / "demo")
    return ws, transcripts


@pytest.fixture
def fresh(workspace):
    servers = []

    def start() -> RawServer:
        server = RawServer(workspace[0])
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def no_traceback(server: RawServer) -> None:
    stderr = server.stderr()
    assert "Traceback" not in stderr, stderr[-3000:]


def test_requests_before_initialize_are_refused_and_initialize_still_works(fresh, workspace):
    """Before initialize: requests get ServerNotInitialized (-32002), notifications are dropped,
    an initialize with broken params is InvalidParams; a good initialize then succeeds."""
    server = fresh()
    for method, params in (("kitsoki/mineStatus", {}), ("textDocument/hover", {}), ("shutdown", None)):
        answer = server.request(method, params)
        assert answer is not None and answer["error"]["code"] == -32002, answer
        assert "send initialize first" in answer["error"]["message"]
    server.notify("initialized", {})
    server.notify("textDocument/didSave", {"textDocument": {"uri": "file:///x"}})
    broken = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": 5})
    assert broken["error"]["code"] == -32602 and "params.capabilities" in broken["error"]["message"], broken
    assert "result" in server.initialize(workspace[0], {"mining": False, "watch": False})
    assert server.wait_served(), "the workspace is served after a late initialize"
    no_traceback(server)


AFTER_SHUTDOWN = [("kitsoki/mineStatus", {}), ("kitsoki/proposals", None), ("textDocument/codeLens", {}),
                  ("workspace/executeCommand", {"command": "kitsoki.propose"}), ("shutdown", None),
                  ("initialize", {"processId": None, "rootUri": None, "capabilities": {}})]


def test_requests_after_shutdown_are_invalid_request_and_exit_ends_with_0(fresh, workspace):
    """After shutdown: every request is answered InvalidRequest (-32600) saying so; exit ends the
    process with code 0."""
    server = fresh()
    server.initialize(workspace[0], {"mining": False, "watch": False})
    server.wait_served()
    assert "result" in server.request("shutdown")
    for method, params in AFTER_SHUTDOWN:
        answer = server.request(method, params)
        assert answer is not None and answer["error"]["code"] == -32600, (method, answer)
        assert "shutting down" in answer["error"]["message"]
    server.notify("textDocument/didSave", {"textDocument": {"uri": "file:///x"}})
    server.notify("exit")
    assert server.proc.wait(15) == 0
    no_traceback(server)


def test_exit_without_shutdown_ends_with_1(fresh, workspace):
    server = fresh()
    server.initialize(workspace[0], {"mining": False, "watch": False})
    server.wait_served()
    server.notify("exit")
    assert server.proc.wait(15) == 1
    no_traceback(server)


@pytest.mark.parametrize("tail", adversarial_cases([
    pytest.param(b"", id="clean"), pytest.param(b'Content-Length: 50\r\n\r\n{"jsonrpc"', id="mid-body"),
    pytest.param(b"Content-Len", id="mid-header")], fast=2))
def test_the_end_of_stdin_ends_the_server(fresh, workspace, tail):
    """stdin closed (cleanly, in the middle of a body or of a header): the process ends by itself."""
    server = fresh()
    server.initialize(workspace[0], {"mining": False, "watch": False})
    server.wait_served()
    server.write(tail)
    server.proc.stdin.close()
    try:
        server.proc.wait(20)
    except subprocess.TimeoutExpired:
        pytest.fail("the server kept running after its stdin closed")
    no_traceback(server)


BAD_OPTIONS = {
    "transcriptDirs-5": ({"transcriptDirs": 5, "mining": False, "watch": False}, "initializationOptions.transcriptDirs"),
    "options-5": (5, "initializationOptions must be an object"),
    "options-string": ("mine please", "initializationOptions must be an object"),
    "options-list": ([{"mining": True}], "initializationOptions must be an object"),
    "mining-yes": ({"mining": "yes", "watch": False}, "initializationOptions.mining"),
    "watch-no": ({"mining": False, "watch": "no"}, "initializationOptions.watch"),
    "dirs-mixed": ({"transcriptDirs": ["relative/dir", 5, "{TRANSCRIPTS}"], "mining": False, "watch": False},
                   "initializationOptions.transcriptDirs[0]"),
    "dirs-too-long": ({"transcriptDirs": ["/" + "a" * 5000, "{TRANSCRIPTS}"], "mining": False, "watch": False},
                      "initializationOptions.transcriptDirs[0]"),
    "dirs-nul": ({"transcriptDirs": ["/a\u0000b", "{TRANSCRIPTS}"], "mining": False, "watch": False},
                 "initializationOptions.transcriptDirs[0]"),
    "typo": ({"transcriptDir": ["{TRANSCRIPTS}"], "mining": False, "watch": False}, "did you mean 'transcriptDirs'"),
    "deep-unknown": ({"mining": False, "watch": False, "extra": {"a": {"b": {"c": [1]}}}},
                     "initializationOptions.extra"),
}


@pytest.mark.parametrize(("options", "named"), adversarial_cases(
    [pytest.param(*v, id=k) for k, v in BAD_OPTIONS.items()], fast=4))
def test_bad_initialization_options_are_reported_and_the_rest_is_used(fresh, workspace, options, named):
    """The workspace is served; window/showMessage (a warning) and window/logMessage name the bad
    option; a valid transcript folder beside bad ones is still mined from."""
    ws, transcripts = workspace
    if isinstance(options, dict) and "transcriptDirs" in options and isinstance(options["transcriptDirs"], list):
        options = {**options, "transcriptDirs": [str(transcripts) if d == "{TRANSCRIPTS}" else d
                                                 for d in options["transcriptDirs"]]}
    server = fresh()
    assert "result" in server.initialize(ws, options)
    served = server.wait_served()
    assert [w["workspace"] for w in served] == [str(ws)], "the workspace is served"
    shown = server.wait_notification("window/showMessage", timeout=20)
    assert shown is not None and named in shown["params"]["message"], shown
    assert shown["params"]["type"] == 2, "a warning"
    logged = [n["params"]["message"] for n in server.notifications if n["method"] == "window/logMessage"]
    assert any(named in m for m in logged), logged
    dirs = options.get("transcriptDirs") if isinstance(options, dict) else None
    if isinstance(dirs, list) and str(transcripts) in dirs:
        deadline = time.monotonic() + 20  # the miner starts just after the workspace is listed
        while str(transcripts) not in served[0]["transcript_dirs"] and time.monotonic() < deadline:
            time.sleep(0.1)
            served = server.wait_served()
        assert str(transcripts) in served[0]["transcript_dirs"], "the valid folder is used"
    no_traceback(server)


FOLDERS = {
    "name-too-long": lambda ws: "file:///" + "a" * 4096,
    "nul": lambda ws: "file:///tmp/a%00b",
    "not-a-file-uri": lambda ws: "untitled:Untitled-1",
    "http": lambda ws: "https://example.invalid/repo",
}


@pytest.mark.parametrize("folder", adversarial_cases(
    [pytest.param(v, id=k) for k, v in FOLDERS.items()], fast=2))
def test_a_folder_that_cannot_be_served_is_reported_and_the_others_are_served(fresh, workspace, folder):
    ws, _ = workspace
    server = fresh()
    params = {"processId": None, "rootUri": None, "capabilities": {},
              "initializationOptions": {"mining": False, "watch": False},
              "workspaceFolders": [{"uri": folder(ws), "name": "bad"}, {"uri": ws.as_uri(), "name": "good"}]}
    assert "result" in server.request("initialize", params)
    server.notify("initialized", {})
    assert [w["workspace"] for w in server.wait_served()] == [str(ws)]
    shown = server.wait_notification("window/showMessage", timeout=20)
    assert shown is not None and "not served" in shown["params"]["message"], shown
    no_traceback(server)


def test_a_workspace_without_kitsoki_config_is_not_served_quietly(fresh, tmp_path):
    """A folder with no .kitsoki.yaml is simply not a kitsoki workspace: no pop-up, no workspace."""
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(__file__, plain / "x.py")
    server = fresh()
    assert "result" in server.initialize(plain, {"mining": False})
    assert server.request("kitsoki/mineStatus", {})["result"] == {"workspaces": []}
    assert server.wait_notification("window/showMessage", timeout=2) is None
    no_traceback(server)
