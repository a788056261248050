"""The language server under a client that cancels verdicts, never answers progress, floods it
with huge documents and broken ranges, or serves a workspace whose flow fixture nests deeply;
over the real server's stdio.

Pass rule: every request is answered; a cancelled verdict either did nothing (RequestCancelled,
the tree's bytes unchanged, no verdict recorded) or was carried out and its answer says so (a
result whose `note` names the cancel, its verdict recorded once); an accept never waits on
window/workDoneProgress/create; after every case the server answers the next request, no
traceback reached stderr and its memory stayed within the allowance.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import statekit
from conftest import adversarial_cases
from lsp_wire import RawServer, Served, check_alive_and_clean, encode, frame

pytestmark = pytest.mark.adversarial("language-server")

_TMP = Path(tempfile.mkdtemp(prefix="kitsoki-miner-lsp-verdicts-"))
atexit.register(shutil.rmtree, _TMP, True)
REQUEST_CANCELLED = -32800


def _serve(tmp_path: Path, **initialize) -> tuple[Served, RawServer]:
    served = Served(tmp_path)
    server = RawServer(served.ws)
    served.server = server
    assert server.initialize(served.ws, {"mining": False, "watch": False}, **initialize) is not None
    assert server.wait_served()
    deadline = time.monotonic() + 30
    while not server.request("kitsoki/proposals", {})["result"]["proposals"]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    served.baseline_kib = server.peak_rss_kib()
    return served, server


def _world_card(server: RawServer) -> dict:
    cards = server.request("kitsoki/proposals", {})["result"]["proposals"]
    return next(c for c in cards if c["kind"] == "world")


def _send(server: RawServer, command: str, card_id: str, *, cancel_in_the_same_write: bool = False) -> int:
    msg_id = server.new_id()
    request = {"jsonrpc": "2.0", "id": msg_id, "method": "workspace/executeCommand",
               "params": {"command": command, "arguments": [{"id": card_id}]}}
    if cancel_in_the_same_write:  # the server reads both before the verdict's task has run a step
        server.write(frame(encode(request)) + frame(encode({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                                            "params": {"id": msg_id}})))
    else:
        server.send(request)
    return msg_id


DELAYS = [None, 0.0, 0.005, 0.05, 0.2, 0.6, 1.5]
"""Seconds between the verdict and its cancel (None: both in one write)."""


@pytest.mark.parametrize("verdict", ["kitsoki.accept", "kitsoki.refine"])
@pytest.mark.parametrize("delay", adversarial_cases(DELAYS, fast=3))
def test_a_cancelled_verdict_did_nothing_or_says_what_it_did(tmp_path: Path, verdict: str, delay: float) -> None:
    served, server = _serve(tmp_path)
    try:
        mark = server.stderr_mark()
        card = _world_card(server)
        before = statekit.snapshot(served.ws)
        msg_id = _send(server, verdict, card["id"], cancel_in_the_same_write=delay is None)
        if delay is not None:
            time.sleep(delay)
            server.notify("$/cancelRequest", {"id": msg_id})
        answer = server.answer(msg_id, timeout=120)
        assert answer is not None, "the cancelled verdict was never answered"
        decided = statekit.decisions(served.ws, card["id"])
        if "error" in answer:
            assert answer["error"]["code"] == REQUEST_CANCELLED, answer
            time.sleep(1.0)  # anything still running would have written by now
            assert statekit.snapshot(served.ws) == before, "answered cancelled, but the tree changed"
            assert statekit.decisions(served.ws, card["id"]) == [], "answered cancelled, but a verdict was recorded"
        else:
            result = answer["result"]
            assert len(decided) == 1 and decided[0]["verdict"] == verdict.split(".")[1], decided
            if result.get("note"):
                assert "cancel" in result["note"] and "carried out" in result["note"], result["note"]
        check_alive_and_clean(served, server, mark)
    finally:
        server.stop()


def test_an_accept_never_waits_on_a_progress_token_the_client_does_not_answer(tmp_path: Path) -> None:
    served, server = _serve(tmp_path, capabilities={"window": {"workDoneProgress": True}})
    try:
        server.unanswered.add("window/workDoneProgress/create")
        mark = server.stderr_mark()
        card = _world_card(server)
        started = time.monotonic()
        answer = server.request("workspace/executeCommand",
                                {"command": "kitsoki.accept", "arguments": [{"id": card["id"]}]}, timeout=120)
        assert answer is not None and "result" in answer, f"the accept was not answered: {answer}"
        assert any(r["method"] == "window/workDoneProgress/create" for r in server.server_requests), \
            "the server never asked for progress (the case tests nothing)"
        assert time.monotonic() - started < 60
        assert not any(n["method"] == "$/progress" for n in server.notifications), \
            "progress was sent on a token the client never accepted"
        check_alive_and_clean(served, server, mark)
    finally:
        server.stop()


# ── floods and broken ranges ──────────────────────────────────────────────────────────────────

@pytest.fixture(scope="module")
def served():
    root = _TMP / "served"
    root.mkdir(exist_ok=True)
    holder = Served(root)
    yield holder
    holder.close()


BIG = 20 << 20
RANGES = {
    "end before start": ((500, 0), (400, 0)),
    "past the line": ((0, 10 ** 9), (0, 10 ** 9)),
    "the largest position": ((2 ** 31 - 1, 2 ** 31 - 1), (2 ** 31 - 1, 2 ** 31 - 1)),
    "negative": ((-1, 0), (0, -5)),
    "inside the huge line": ((0, 10 ** 7), (0, 10 ** 7 + 5)),
}
SAVES = ["file:///etc/passwd", "file:///nonexistent/x.yaml", "{WS_URI}/../outside.yaml", "untitled:x",
         "file:///" + "a" * 5000]


@pytest.mark.parametrize("name", adversarial_cases(sorted(RANGES), fast=3))
@pytest.mark.parametrize("where", ["a proposal's file", "a new file"])
def test_a_20mb_document_a_broken_range_and_saves_outside_leave_it_answering(served: Served, name: str,
                                                                             where: str) -> None:
    server = served.ensure()
    mark = server.stderr_mark()
    uri = served.values["{FILE_URI}"] if where == "a proposal's file" else served.ws.as_uri() + "/new.yaml"
    text = "x: " + "a" * BIG + "\n" + "y: é😋\n" * 3
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1,
                                                            "text": text}})
    (sl, sc), (el, ec) = RANGES[name]
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}, "text": "z\n"}]})
    for save in SAVES:
        server.notify("textDocument/didSave", {"textDocument": {"uri": served.fill(save)}, "text": "x"})
    for method, params in (("textDocument/codeLens", {"textDocument": {"uri": uri}}),
                           ("textDocument/hover", {"textDocument": {"uri": uri},
                                                   "position": {"line": 0, "character": 10 ** 7}}),
                           ("kitsoki/proposals", {"uri": uri})):
        answer = server.request(method, params, timeout=60)
        assert answer is not None, f"{method} was not answered"
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    check_alive_and_clean(served, server, mark)


# ── a flow fixture nested deeply in the served workspace ───────────────────────────────────────

@pytest.mark.parametrize("depth", adversarial_cases([1_000, 50_000, 400_000], fast=2))
def test_a_flow_fixture_nested_deeply_never_takes_the_server_down(tmp_path: Path, depth: int) -> None:
    served, server = _serve(tmp_path)
    try:
        mark = server.stderr_mark()
        fixture = served.ws / "stories" / "release-desk" / "flows" / "deep.yaml"
        fixture.write_text("test_kind: flow\nturns: " + "[" * depth + "]" * depth + "\n")
        uri = fixture.as_uri()
        server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1,
                                                                "text": fixture.read_text()}})
        server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        for method, params in (("textDocument/codeLens", {"textDocument": {"uri": uri}}),
                               ("kitsoki/proposal", {"id": _world_card(server)["id"]})):
            assert server.request(method, params, timeout=60) is not None, f"{method} was not answered"
        card = next(c for c in server.request("kitsoki/proposals", {})["result"]["proposals"] if c["kind"] == "intent")
        answer = server.request("workspace/executeCommand",
                                {"command": "kitsoki.accept", "arguments": [{"id": card["id"]}]}, timeout=180)
        assert answer is not None and server.alive(), "the accept (its gate reads the fixture) took the server down"
        check_alive_and_clean(served, server, mark)
    finally:
        server.stop()


# ── the two sides of a cancel, exactly (the protocol's bookkeeping, in process) ─────────────────

def test_a_cancel_before_a_verdict_begins_stops_it_and_one_after_is_answered_as_carried_out() -> None:
    """Which side of `enter_critical` a cancel lands on decides the answer; over the wire the verdict
    begins within microseconds, so both sides are driven here on the real protocol object."""
    import asyncio

    from server.lsp import build_server
    from server.transport import CURRENT_REQUEST

    protocol = build_server().protocol
    loop = asyncio.new_event_loop()
    try:
        early, late = loop.create_future(), loop.create_future()
        protocol._request_futures[7] = early
        protocol._handle_cancel_notification(7)  # arrives before the handler began its work
        token = CURRENT_REQUEST.set(7)
        try:
            assert protocol.enter_critical() is False, "a verdict cancelled before it began went ahead"
        finally:
            CURRENT_REQUEST.reset(token)
        assert early.cancelled()  # answered RequestCancelled: and nothing was done

        protocol._request_futures[8] = late
        token = CURRENT_REQUEST.set(8)
        try:
            assert protocol.enter_critical() is True
            protocol._handle_cancel_notification(8)  # arrives while it runs
            assert not late.cancelled(), "a begun verdict was answered cancelled"
            assert protocol.leave_critical() is True, "the answer would not say the cancel came late"
        finally:
            CURRENT_REQUEST.reset(token)
    finally:
        loop.close()


def test_an_unsettled_accept_is_in_the_status_and_settled_by_kitsoki_resolve(tmp_path: Path) -> None:
    """An accept a person's edit left unsettled (before the server started): the status says so until
    the client sends the person's choice, which is recorded once."""
    from core.apply import GateResult
    from core.proposals.decide import accept
    from core.proposals.inbox import inbox

    served = Served(tmp_path)
    card_id = next(c for c in inbox(served.ws) if c.kind == "world").recipe_id

    def typing_gate(workspace: Path) -> GateResult:
        config = workspace / ".kitsoki.yaml"
        config.write_bytes(config.read_bytes() + b"# typed during the gate\n")
        return GateResult(green=False, gate="test", summary="red")

    assert accept(served.ws, card_id, gate=typing_gate).unresolved
    typed = (served.ws / ".kitsoki.yaml").read_bytes()
    server = RawServer(served.ws)
    served.server = server
    try:
        assert server.initialize(served.ws, {"mining": False, "watch": False}) is not None
        [status] = server.wait_served()
        assert any(card_id in line and "resolve" in line for line in status["attention"]), status["attention"]
        assert _said(server, card_id), "the editor was never told (window/showMessage)"
        mark = server.stderr_mark()
        listed = server.request("workspace/executeCommand", {"command": "kitsoki.resolve", "arguments": [{}]})
        [item] = listed["result"]["unsettled"]
        assert item["recipe_id"] == card_id and item["files"][0]["now_is"] == "other"
        settled = server.request("workspace/executeCommand", {"command": "kitsoki.resolve",
                                                              "arguments": [{"id": card_id, "choice": "keep"}]})
        assert settled["result"]["choice"] == "keep", settled
        assert (served.ws / ".kitsoki.yaml").read_bytes() == typed
        assert server.request("kitsoki/mineStatus", {})["result"]["workspaces"][0]["attention"] == []
        assert [(d["flows_green"], d["reverted"]) for d in statekit.decisions(served.ws, card_id)] == [(True, False)]
        check_alive_and_clean(served, server, mark)
    finally:
        server.stop()


def _said(server: RawServer, text: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(n["method"] == "window/showMessage" and text in n["params"]["message"] for n in server.notifications):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", adversarial_cases(["/dev/zero", "a dangling link", "the wrong size"], fast=2))
def test_a_key_that_cannot_be_used_is_said_to_the_editor_not_an_empty_inbox(tmp_path: Path, how: str) -> None:
    """The editors show what the server says: an empty list of proposals comes with the reason, in the
    status's `attention` and once as a pop-up (window/showMessage), with how to fix it."""
    from core.authn import KEY_DIR_ENV

    served = Served(tmp_path / "ws")
    folder = tmp_path / "bad-key"
    folder.mkdir()
    key = folder / "authn.key"
    if how == "/dev/zero":
        key.symlink_to("/dev/zero")
    elif how == "a dangling link":
        key.symlink_to(folder / "gone")
    else:
        key.write_bytes(b"k" * 7)
    server = RawServer(served.ws, env={KEY_DIR_ENV: str(folder)})
    served.server = server
    try:
        mark = server.stderr_mark()
        assert server.initialize(served.ws, {"mining": False, "watch": False}) is not None
        [status] = server.wait_served()
        assert any("signing key" in line and str(key) in line for line in status["attention"]), status["attention"]
        assert _said(server, "signing key"), "the editor was never told why its inbox is empty"
        assert server.request("kitsoki/proposals", {})["result"]["proposals"] == []
        check_alive_and_clean(served, server, mark)
    finally:
        server.stop()
