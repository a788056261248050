"""The server's `*_impl` handlers without a client (ruff-lsp style): a real sidecar on a proposed
demo workspace, a KitsokiServer that is never started, lsprotocol params in, answers out."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from core.demo.walkthrough import lay_out, seed_pass
from core.proposals.proposer import run_proposer
from core.sidecar import SidecarEvents, WorkspaceSidecar
from server.lsp import (
    KitsokiServer,
    answer_of,
    code_actions_impl,
    diagnostics_for,
    hover_impl,
    lenses_impl,
    mine_control_impl,
    mine_status_impl,
    proposal_impl,
    proposals_impl,
)
from server.protocol import AnswerQuestionParams


@pytest.fixture
def served(tmp_path):
    _, ws, transcripts = lay_out(tmp_path / "demo")
    _, recipes = seed_pass(ws, transcripts)
    run_proposer(ws, recipes)
    changes = []
    sidecar = WorkspaceSidecar(ws, watch=False, mining=False,
                               events=SidecarEvents(proposals_changed=lambda w, cards, paths: changes.append(paths)))
    sidecar.start()
    server = KitsokiServer()
    server.sidecars[sidecar.workspace] = sidecar
    yield server, sidecar, ws, changes
    sidecar.stop()


def doc(path) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=path.as_uri())


def test_lenses_sit_on_the_first_changed_line_with_a_summary_on_top(served):
    server, sidecar, ws, _ = served
    lenses = lenses_impl(server, types.CodeLensParams(text_document=doc(ws / ".kitsoki.yaml")))
    assert lenses[0].range.start.line == 0 and lenses[0].command.title == "kitsoki-miner: 2 proposals for this file"
    text = (ws / ".kitsoki.yaml").read_text().splitlines()
    # Both insert after the same line: one lens each, right where their lines would go.
    per_proposal = [lens for lens in lenses[1:] if lens.command.command == "kitsoki.choose"]
    assert len(per_proposal) == 2
    for lens in per_proposal:
        assert "# we release from main" in text[lens.range.start.line - 1]
    assert lenses_impl(server, types.CodeLensParams(text_document=doc(ws / "README.md"))) == []


def test_diagnostics_hover_and_actions_cover_the_changed_lines(served):
    server, sidecar, ws, _ = served
    [diagnostic] = diagnostics_for(sidecar, "stories/release-desk/app.yaml")
    assert diagnostic.code == "intent" and diagnostic.severity == types.DiagnosticSeverity.Information
    line = diagnostic.range.start.line
    hover = hover_impl(server, types.HoverParams(text_document=doc(ws / "stories/release-desk/app.yaml"),
                                                 position=types.Position(line=line, character=0)))
    assert "take the build live" in hover.contents.value
    actions = code_actions_impl(server, types.CodeActionParams(
        text_document=doc(ws / "stories/release-desk/app.yaml"),
        range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    assert [a.command.command for a in actions] == ["kitsoki.accept", "kitsoki.reject"]


def test_requests_validate_their_params(served):
    server, sidecar, ws, _ = served
    assert mine_status_impl(server, {})["workspaces"][0]["pending"] == 3
    assert len(proposals_impl(server, {"uri": (ws / ".kitsoki.yaml").as_uri()})["proposals"]) == 2
    with pytest.raises(JsonRpcInvalidParams, match="action"):
        mine_control_impl(server, {"action": "later"})
    with pytest.raises(JsonRpcInvalidParams, match="mining is not available|not a folder"):
        mine_control_impl(server, {"action": "scope", "dirs": [str(ws / "nope")]})
    with pytest.raises(JsonRpcInvalidParams, match="params must be a JSON object"):
        proposals_impl(server, [1, 2])
    with pytest.raises(JsonRpcInvalidParams, match="in no served kitsoki workspace"):
        proposals_impl(server, {"uri": "file:///elsewhere/x.yaml"})
    with pytest.raises(JsonRpcInvalidParams, match="no open proposal"):
        proposal_impl(server, {"id": "missing"})


def test_answers_take_kitsokis_shape_and_dismiss(served):
    server, sidecar, ws, _ = served
    card = sidecar.cards()[0]
    assert answer_of(AnswerQuestionParams(question_id=card.recipe_id, answers={card.title: "dismiss"}), card) == "dismiss"
    assert answer_of(AnswerQuestionParams(question_id=card.recipe_id, answers={"anything": ["accept"]}), card) == "accept"
    with pytest.raises(JsonRpcInvalidParams, match="must be one of accept, refine, reject or dismiss"):
        answer_of(AnswerQuestionParams(question_id=card.recipe_id, answers={card.title: "maybe"}), card)


def test_a_changed_target_marks_its_proposal_stale_and_redrafts_it(served):
    server, sidecar, ws, changes = served
    config = ws / ".kitsoki.yaml"
    config.write_text(config.read_text() + "# edited by hand\n")
    sidecar.kitsoki_files_changed([str(config)])
    assert {".kitsoki.yaml"} <= set().union(*changes)
    cards = {c.kind: c for c in sidecar.cards(".kitsoki.yaml")}
    assert {c.status for c in cards.values()} == {"pending"}, "re-drafted against the new bytes"
    assert all("# edited by hand" in (ws / ".artifacts/mining" / c.recipe_id / ".kitsoki.yaml").read_text()
               for c in cards.values())


def test_evolve_and_runs_are_served_through_the_same_core_calls(served, tmp_path):
    from server.lsp import evolve_impl, runs_impl

    server, sidecar, ws, _ = served
    analysis = evolve_impl(server, {"action": "analyze", "transcriptDirs": [str(ws.parent / "transcripts")]})
    assert "candidates" in analysis
    assert evolve_impl(server, {"action": "list"}) == {"records": []}
    with pytest.raises(JsonRpcInvalidParams, match="confirm"):
        evolve_impl(server, {"action": "confirm", "select": []})
    assert evolve_impl(server, {"action": "prune"})["scanned"] == 0
    workdir = tmp_path / "runs"
    workdir.mkdir()
    assert "suggestion" in runs_impl(server, {"action": "workdir"})
    assert runs_impl(server, {"action": "list", "workdir": str(workdir)})["runs"] == []
    with pytest.raises(JsonRpcInvalidParams, match="unknown argument"):
        runs_impl(server, {"action": "status", "workdir": str(workdir), "nonsense": 1})
    with pytest.raises(JsonRpcInvalidParams):
        runs_impl(server, {"action": "status", "workdir": str(workdir), "run_id": "000000000000"})


def test_a_code_action_range_is_compared_not_expanded(served):
    """A range to line 10^9 (or 2^31-1) answers at once with the actions of the lines it covers;
    building the range as a set would take minutes and gigabytes."""
    import time

    server, sidecar, ws, _ = served
    [diagnostic] = diagnostics_for(sidecar, "stories/release-desk/app.yaml")
    line = diagnostic.range.start.line

    def actions(start: int, end: int):
        return code_actions_impl(server, types.CodeActionParams(
            text_document=doc(ws / "stories/release-desk/app.yaml"),
            range=types.Range(start=types.Position(line=start, character=0), end=types.Position(line=end, character=0)),
            context=types.CodeActionContext(diagnostics=[])))

    started = time.monotonic()
    assert [a.command.command for a in actions(0, 10 ** 9)] == ["kitsoki.accept", "kitsoki.reject"]
    assert len(actions(line, 2 ** 31 - 1)) == 2
    assert time.monotonic() - started < 1.0
    assert actions(line + 1, 10 ** 9) == [] and actions(10 ** 9, 0) == []
