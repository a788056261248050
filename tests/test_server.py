"""The real server over stdio (pytest-lsp), with VS Code's and Neovim's client capabilities: a
fixture workspace with transcripts is mined, proposals appear as notifications, lenses,
diagnostics and hovers at the right lines, and verdicts go through the apply gate."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities, make_test_lsp_client

from core.demo.walkthrough import lay_out

REPO = Path(__file__).resolve().parent.parent


def hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".artifacts" not in p.parts}


def factory() -> LanguageClient:
    client = make_test_lsp_client()
    client.kitsoki = {}  # method -> list of params, for every kitsoki/* notification

    for method in ("kitsoki/passRan", "kitsoki/proposalsChanged", "kitsoki/proposalDecided", "kitsoki/question"):
        def record(params, method=method):
            client.kitsoki.setdefault(method, []).append(params)
        client.feature(method)(record)

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(params):
        client.kitsoki.setdefault("codeLensRefresh", []).append(True)

    return client


async def wait_for(predicate, timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    _, ws, transcripts = lay_out(tmp_path_factory.mktemp("lsp") / "demo")
    return ws, transcripts


@pytest_lsp.fixture(
    params=["visual-studio-code", "neovim"],
    config=ClientServerConfig(server_command=[sys.executable, "-m", "server.cli", "serve"], client_factory=factory),
)
async def client(request, lsp_client: LanguageClient, tmp_path):
    _, ws, transcripts = lay_out(tmp_path / "demo")
    lsp_client.ws, lsp_client.transcripts = ws, transcripts
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(request.param),
        workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="release-desk")],
        initialization_options={"mining": True, "transcriptDirs": [str(transcripts)], "watch": True},
    ))
    yield
    await lsp_client.shutdown_session()


def plain(value):
    """pygls hands custom results to the client as namedtuples: back to JSON data."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


async def request(client: LanguageClient, method: str, params):
    return plain(await client.protocol.send_request_async(method, params))


async def command(client: LanguageClient, name: str, *arguments):
    return plain(await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))))


async def test_the_whole_loop_over_lsp(client: LanguageClient):
    ws: Path = client.ws
    config_uri = (ws / ".kitsoki.yaml").as_uri()
    app_uri = (ws / "stories/release-desk/app.yaml").as_uri()

    # initialize -> a seed pass -> the proposer -> notifications
    await wait_for(lambda: client.kitsoki.get("kitsoki/passRan"), what="kitsoki/passRan")
    ran = client.kitsoki["kitsoki/passRan"][0]
    assert ran.report.trigger == "seed" and ran.report.sessions == 4 and len(ran.raised) == 4
    await wait_for(lambda: client.kitsoki.get("kitsoki/proposalsChanged"), what="proposalsChanged")
    changed = client.kitsoki["kitsoki/proposalsChanged"][-1]
    desk_uri = (ws / "stories/release-desk/rooms/desk.yaml").as_uri()
    proof_uris = {u for u in changed.uris if "/flows/mined-" in u}
    assert set(changed.uris) - proof_uris == {config_uri, app_uri, desk_uri} and len(proof_uris) == 1
    assert changed.pending == 4
    questions = client.kitsoki.get("kitsoki/question", [])
    assert len(questions) == 4 and questions[0].questions[0].header == "Capture as structure?"
    assert [o.label for o in questions[0].questions[0].options] == ["accept", "refine", "dismiss"]
    assert any(reports for reports in client.progress_reports.values()), "the pass reported progress"

    cards = (await request(client, "kitsoki/proposals", {}))["proposals"]
    by_kind = {c["kind"]: c for c in cards}
    assert set(by_kind) == {"intent", "world", "binding", "gate"}
    # every card carries its impact; the synonym's moves a route (labelled, ranked last)
    assert all({"replayed", "gained", "moved"} <= set(c["impact"]) for c in cards)
    assert by_kind["intent"]["moves_routes"] and cards[-1]["kind"] == "intent"
    assert by_kind["intent"]["impact"]["moved"][0]["to"] == "release-desk:deploy"
    assert [c["id"] for c in (await request(client, "kitsoki/proposals", {"uri": app_uri}))["proposals"]] == \
        [by_kind["intent"]["id"]]

    # lenses at the first changed line, a file-level summary at the top
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=config_uri)))
    assert lenses[0].range.start.line == 0 and "2 proposals" in lenses[0].command.title
    world = by_kind["world"]
    line = world["files"][0]["line"]
    # two proposals insert after that line: one lens each, above where their lines would go
    titles = [lens.command.title for lens in lenses if lens.range.start.line == line + 1]
    assert titles == ["[1/2] Set world.test_cmd to 'pytest': accept · refine · diff · reject…",
                      "[2/2] Bind ticket to host.gh.ticket: accept · refine · diff · reject…"]
    assert (ws / ".kitsoki.yaml").read_text().splitlines()[line].strip() == "base_branch: main   # we release from main"

    # Information diagnostics on the lines a proposal would change
    await wait_for(lambda: client.diagnostics.get(config_uri), what="diagnostics")
    diagnostics = client.diagnostics[config_uri]
    assert {d.code for d in diagnostics} == {"world", "binding"}
    assert all(d.severity == types.DiagnosticSeverity.Information and d.source == "kitsoki-miner" for d in diagnostics)
    assert all(d.range.start.line == line for d in diagnostics)

    # hover with the evidence
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=app_uri),
        position=types.Position(line=by_kind["intent"]["files"][0]["line"], character=4)))
    assert "take the build live" in hover.contents.value and ".jsonl:" in hover.contents.value
    assert '**Impact (moves routes)**: Moves 1 route: "take the preview build live"' in hover.contents.value

    # a code action that accepts
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=config_uri), range=types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    assert "Accept proposal (no flow runs: kept after checks): Set world.test_cmd to 'pytest'" in \
        [a.title for a in actions], "the action says what the gate will do (no flow reads the root overrides)"

    detail = await request(client, "kitsoki/proposal", {"id": world["id"]})
    assert "+      test_cmd: pytest" in detail["diff"] and detail["evidence"]["sessions"] == 3
    content = await request(client, "kitsoki/proposalContent", {"id": world["id"], "uri": config_uri})
    assert "test_cmd: pytest" in content["text"]

    # accept that keeps
    before = (ws / ".kitsoki.yaml").read_text()
    result = await command(client, "kitsoki.accept", {"id": world["id"]})
    assert result["flows_green"] is True and result["reverted"] is False
    assert (ws / ".kitsoki.yaml").read_text() == before.replace(
        "# we release from main\n", "# we release from main\n      test_cmd: pytest\n")
    await wait_for(lambda: client.kitsoki.get("kitsoki/proposalDecided"), what="proposalDecided")
    decided = client.kitsoki["kitsoki/proposalDecided"][0]
    assert decided.recipe_id == world["id"] and decided.flows_green
    assert result["gated"] is False and decided.gated is False, "no flow reads the demo's root overrides"
    assert [(f["app"], f["status"]) for f in result["flows"]] == [("<root>", "not run")]

    # accept that reverts (a person decides at rollout; ship.yaml expects the automatic path): every byte as before
    before_all = hashes(ws)
    result = await request(client, "kitsoki/answerQuestion",
                           {"question_id": by_kind["gate"]["id"], "answers": {by_kind["gate"]["title"]: "accept"}})
    assert result["reverted"] is True and result["flows_green"] is False and "1 of 5 flows failed" in result["failure"]
    assert [(f["app"], f["failed"]) for f in result["flows"]] == [
        ("stories/release-desk/app.yaml", ["stories/release-desk/flows/ship.yaml"])]
    assert hashes(ws) == before_all
    tokens = [reports for reports in client.progress_reports.values()
              if reports and getattr(reports[0], "title", "").startswith("Accepting")]
    assert tokens and tokens[-1][-1].message.startswith("reverted")

    # reject: never raised again
    await command(client, "kitsoki.reject", by_kind["binding"]["id"])
    await command(client, "kitsoki.propose")
    remaining = (await request(client, "kitsoki/proposals", {}))["proposals"]
    assert [(c["id"], c["status"]) for c in remaining] == [(by_kind["gate"]["id"], "held"),
                                                            (by_kind["intent"]["id"], "pending")]

    # bad params and unknown ids: clear errors, and the server keeps serving
    with pytest.raises(JsonRpcException, match="action"):
        await request(client, "kitsoki/mineControl", {"action": "explode"})
    with pytest.raises(JsonRpcException, match="no open proposal 'nope'"):
        await request(client, "kitsoki/proposal", {"id": "nope"})
    with pytest.raises(JsonRpcException, match="unexpected|Extra inputs"):
        await request(client, "kitsoki/proposals", {"uri": config_uri, "bogus": 1})
    with pytest.raises(JsonRpcException, match="must be a proposal id"):
        await command(client, "kitsoki.accept", 42)
    status = (await request(client, "kitsoki/mineStatus", {}))["workspaces"][0]
    assert status["enabled"] and status["pending"] == 2 and status["last_pass"]["sessions"] == 4


async def test_refine_opens_the_staged_draft(client: LanguageClient):
    await wait_for(lambda: client.kitsoki.get("kitsoki/passRan"), what="kitsoki/passRan")
    cards = (await request(client, "kitsoki/proposals", {}))["proposals"]
    binding = next(c for c in cards if c["kind"] == "binding")
    result = await command(client, "kitsoki.refine", {"id": binding["id"]})
    assert result["verdict"] == "refine" and result["draft_uri"].endswith(f"{binding['id']}/.kitsoki.yaml")
    if client.shown_documents:  # clients that support window/showDocument get the draft opened
        assert [d.uri for d in client.shown_documents] == [result["draft_uri"]]


async def test_a_refined_draft_is_accepted_as_the_editor_shows_it_and_only_then(client: LanguageClient):
    """The person edits the staged draft in the editor and saves it: that draft is in front of them,
    so an accept sent right after the save applies exactly it. Bytes changed behind the editor's
    back (disk no longer what the editor shows) are not shown, so the accept is refused."""
    ws: Path = client.ws
    await wait_for(lambda: client.kitsoki.get("kitsoki/passRan"), what="kitsoki/passRan")
    cards = (await request(client, "kitsoki/proposals", {}))["proposals"]
    binding = next(c for c in cards if c["kind"] == "binding")
    result = await command(client, "kitsoki.refine", {"id": binding["id"]})
    draft = Path(result["draft_uri"].removeprefix("file://"))
    typed = draft.read_text() + "# refined by the person in the editor\n"

    planted = typed + "# planted behind the editor\n"  # on disk, not what the editor shows
    draft.write_text(planted)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=result["draft_uri"], language_id="yaml", version=1, text=typed)))
    with pytest.raises(JsonRpcException, match="has not been shown yet"):
        await command(client, "kitsoki.accept", {"id": binding["id"]})
    assert "refined by the person" not in (ws / ".kitsoki.yaml").read_text()

    draft.write_text(typed)  # the editor saves what it shows
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=result["draft_uri"])))
    decided = await command(client, "kitsoki.accept", {"id": binding["id"]})
    assert decided["verdict"] == "accept", decided
    applied = (ws / ".kitsoki.yaml").read_text()
    assert decided["flows_green"] and not decided["reverted"], decided
    assert "# refined by the person in the editor" in applied and "planted" not in applied


async def test_status_is_answered_while_a_slow_pass_runs(client: LanguageClient, tmp_path):
    await wait_for(lambda: client.kitsoki.get("kitsoki/passRan"), what="the seed pass")
    big = tmp_path / "big"
    big.mkdir()
    # Few, long lines: ~100 MB to read but few episodes to mine, so the pass takes a couple of seconds.
    # The sessions are this workspace's own (its cwd): another project's are left out after their first
    # line, and a pass that reads nothing ends before the first status request.
    for n in range(8):
        with open(big / f"s{n}.jsonl", "w") as fh:
            for i in range(200):
                fh.write(json.dumps({"type": "user", "uuid": f"u{n}-{i}", "sessionId": f"s{n}", "cwd": str(client.ws),
                                     "timestamp": "2026-11-01T00:00:00Z",
                                     "message": {"role": "user", "content": f"padding {i} " * 6000}}) + "\n")
    await request(client, "kitsoki/mineControl", {"action": "scope", "dirs": [str(big)]})
    await request(client, "kitsoki/mineControl", {"action": "now"})
    seen_running, slowest = False, 0.0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        started = time.monotonic()
        status = (await request(client, "kitsoki/mineStatus", {}))["workspaces"][0]
        slowest = max(slowest, time.monotonic() - started)
        seen_running |= status["running"]
        if len(client.kitsoki.get("kitsoki/passRan", [])) >= 2:
            break
        await asyncio.sleep(0.02)
    assert seen_running, "the status was answered while the pass ran"
    assert slowest < 2.0, f"a status request took {slowest:.2f} s during a pass"


async def test_an_accept_over_unsaved_editor_changes_is_refused(client: LanguageClient):
    ws: Path = client.ws
    await wait_for(lambda: client.kitsoki.get("kitsoki/passRan"), what="kitsoki/passRan")
    config = ws / ".kitsoki.yaml"
    before = config.read_bytes()
    world = next(c for c in (await request(client, "kitsoki/proposals", {}))["proposals"] if c["kind"] == "world")
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=config.as_uri(), language_id="yaml", version=1, text=before.decode() + "# typed, not saved\n")))
    with pytest.raises(JsonRpcException, match="unsaved edits"):
        await command(client, "kitsoki.accept", {"id": world["id"]})
    assert config.read_bytes() == before
    # Saved (the editor's text is now what is on disk): the accept goes through.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=config.as_uri(), version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=before.decode())]))
    result = await command(client, "kitsoki.accept", {"id": world["id"]})
    assert result["flows_green"] is True
