"""The server side of what the editors show, without an editor: `serve --stdio`, `demo --pending`,
where a change's lines go, the question lifecycle, the decided diff, the flows an accept runs, and
the wording a person reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from core.demo.pending import lay_out_pending
from core.mining.passes import PassReport
from core.mining.service import MinerStatus
from core.proposals.hunks import hunks
from core.proposals.wording import actions_text, cite_text, classification_text, plural, readable_failure
from core.questions import QuestionBook
from core.apply.gates import GatePreview
from core.proposals.wording import accept_brief, accept_says
from core.sidecar import SidecarEvents, WorkspaceSidecar, mining_note, not_a_workspace
from server.lsp import (KitsokiServer, decided_impl, diagnostics_for, lenses_impl, proposal_content_impl, proposal_impl,
                        proposals_impl, serve_roots)
from server.views import question_of, resolve_lens_impl


def served(tmp_path):
    demo = lay_out_pending(tmp_path / "demo")
    sidecar = WorkspaceSidecar(demo.workspace, watch=False, mining=False)
    sidecar.start()
    server = KitsokiServer()
    server.sidecars[sidecar.workspace] = sidecar
    return demo, sidecar, server


def test_serve_takes_the_stdio_flag_language_clients_append():
    done = subprocess.run([sys.executable, "-m", "server.cli", "serve", "--stdio"], input=b"", capture_output=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    both = subprocess.run([sys.executable, "-m", "server.cli", "serve", "--stdio", "--tcp", "127.0.0.1:1"],
                          capture_output=True, timeout=30)
    assert both.returncode == 2 and b"not both" in both.stderr


def test_demo_pending_lays_out_what_an_editor_needs(tmp_path):
    done = subprocess.run([str(Path(sys.executable).parent / "kitsoki-miner"), "demo", "--into", str(tmp_path / "d"),
                           "--pending"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ws = tmp_path / "d" / "release-desk"
    assert "3 proposals pending" in done.stdout and f"code {ws}" in done.stdout
    assert f"-u {tmp_path / 'd' / 'nvim-init.lua'} {ws / '.kitsoki.yaml'}" in done.stdout
    config = (ws / ".kitsoki.yaml").read_text()
    assert f'transcript_dirs:\n    - "{tmp_path / "d" / "transcripts"}"' in config
    assert not (ws / ".kitsoki.local.yaml").exists()  # kitsoki ignores mining: there
    settings = json.loads((ws / ".vscode" / "settings.json").read_text())
    assert Path(settings["kitsoki.serverCommand"][0]).is_file() and settings["kitsoki.serverCommand"][1] == "serve"
    assert len(list((ws / ".artifacts" / "mining").glob("*/proposal.json"))) == 3
    shipped = (Path(__file__).parents[2] / "core/demo/workspace/.kitsoki.yaml").read_text().splitlines()
    assert [line for line in config.splitlines() if line in shipped] == shipped, "only lines were added"


def test_hunks_say_where_the_lines_go():
    insertion = "--- a/x\n+++ b/x\n@@ -21,3 +21,4 @@\n a\n b\n c\n+new\n"
    assert [h.model_dump() for h in hunks(insertion)] == [{"after": 22, "removed": [], "added": ["new"]}]
    replace = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -10,0 +11,1 @@\n+tail\n"
    assert [h.model_dump() for h in hunks(replace)] == [{"after": 0, "removed": [1], "added": ["B"]},
                                                          {"after": 9, "removed": [], "added": ["tail"]}]
    assert [h.after for h in hunks("--- /dev/null\n+++ b/x\n@@ -0,0 +1,1 @@\n+first\n")] == [-1]


def test_a_question_is_asked_once_and_withdrawn():
    book = QuestionBook()
    book.known(["old"])
    assert book.ask(["a", "old", "b"]) == ["a", "b"], "one open before this session is not asked again"
    assert book.ask(["a"]) == [], "a re-draft does not ask again"
    assert book.settle("a") is True and book.settle("a") is False
    assert book.sweep(["x"]) == ["b"], "a proposal that left the inbox takes its question"
    assert book.waiting() == []


def test_lenses_sit_where_the_lines_go_and_share_a_line_apart(tmp_path):
    demo, sidecar, server = served(tmp_path)
    config = demo.workspace / ".kitsoki.yaml"
    lenses = lenses_impl(server, types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=config.as_uri())))
    rows = {}
    for lens in lenses:
        rows.setdefault(lens.range.start.line, []).append(lens)
    [(line, row)] = [(k, v) for k, v in rows.items() if k != 0]
    assert config.read_text().splitlines()[line - 1].strip() == "base_branch: main   # we release from main"
    assert [lens.command.title for lens in row] == [
        "[1/2] Set world.test_cmd to 'pytest': accept · refine · diff · reject…",
        "[2/2] Bind ticket to host.gh.ticket: accept · refine · diff · reject…"]
    assert [lens.range.start.character for lens in row] == [0, 1], "one order for every client"
    draft = demo.workspace / ".artifacts" / "mining" / row[0].command.arguments[0]["id"] / ".kitsoki.yaml"
    draft_lenses = lenses_impl(server, types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=draft.as_uri())))
    assert draft_lenses[0].command.title == "DRAFT of .kitsoki.yaml for \"Set world.test_cmd to 'pytest'\": not the live file"
    assert draft_lenses[1].command.title == "Accept this draft (no flow runs: kept after checks)"
    sidecar.stop()


def test_a_lone_proposal_s_lenses_say_what_the_gate_will_do_and_put_reject_last(tmp_path):
    demo, sidecar, server = served(tmp_path)
    story = demo.workspace / "stories" / "release-desk" / "app.yaml"
    lenses = lenses_impl(server, types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=story.as_uri())))
    row = [lens for lens in lenses if lens.range.start.line != 0]
    assert row[0].command is None and row[0].data["lens"] == "accept", "resolved when in view"
    assert [lens.command.title for lens in row[1:]] == ["Refine", "Diff", "Reject…"], \
        "the destructive segment is last, apart from Refine, and says it asks"
    resolved = resolve_lens_impl(server, row[0])
    assert resolved.command.title == "Accept: Add 1 synonym to release-desk's deploy (runs 2 flow files)"
    assert resolved.command.command == "kitsoki.accept"
    sidecar.stop()


def test_every_text_says_what_the_gate_preview_says(tmp_path):
    """No hard-coded "(runs flows)": the lens, the detail's sentence and the question card come from
    the gate's own preview, field by field (held, gated, runs, note)."""
    demo, sidecar, server = served(tmp_path)
    world = next(c for c in sidecar.cards() if c.kind == "world")
    intent = next(c for c in sidecar.cards() if c.kind == "intent")
    detail = proposal_impl(server, {"id": world.recipe_id})
    assert detail["accept_brief"] == "no flow runs: kept after checks"
    assert detail["accept_says"] == ("This changes .kitsoki.yaml; no flow exercises this change: kept after the "
                                     "structural checks (miner.ungated: allow).")
    gated = proposal_impl(server, {"id": intent.recipe_id})
    assert gated["accept_says"].startswith("This changes stories/release-desk/app.yaml, then runs the flows in 2 "
                                           "flow files (stories/release-desk/flows/preview.yaml, ")
    card = question_of(world, sidecar.gate_preview(world.recipe_id))
    assert card.questions[0].options[0].description == "apply to .kitsoki.yaml; no flow runs: kept after checks"
    card = question_of(intent, sidecar.gate_preview(intent.recipe_id))
    assert card.questions[0].options[0].description == \
        "apply to stories/release-desk/app.yaml; runs 2 flow files, kept only if they pass"
    # A preview that holds renders as held, whatever else it says.
    held = GatePreview(kind="builtin", runs=["flows/a.yaml"], held=True, gated=False, note="the flows cannot run here")
    assert accept_brief(held) == "would be held, not kept"
    assert accept_says(held, ["a.yaml"]) == "This changes a.yaml; the flows cannot run here."
    sidecar.stop()


def test_a_story_that_does_not_load_says_where_and_why_its_proposal_waits(tmp_path):
    demo, sidecar, server = served(tmp_path)
    story = demo.workspace / "stories" / "release-desk" / "app.yaml"
    text = story.read_text()
    story.write_text(text.replace("intents:", "intents: [", 1))
    sidecar.kitsoki_files_changed([str(story)])
    [problem] = sidecar.problems
    diagnostics = diagnostics_for(sidecar, "stories/release-desk/app.yaml")
    [error] = [d for d in diagnostics if d.severity == types.DiagnosticSeverity.Error]
    assert (error.range.start.line, error.range.start.character) == (problem.line - 1, problem.column - 1)
    assert "YAML syntax error" in error.message and "proposals wait" in error.message
    lenses = lenses_impl(server, types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=story.as_uri())))
    [waiting] = [lens.command.title for lens in lenses if lens.command and lens.command.title.startswith("Waiting")]
    assert waiting.startswith(f"Waiting: Add 1 synonym to release-desk's deploy: stories/release-desk/app.yaml:"
                              f"{problem.line}:{problem.column} does not load (YAML syntax error")
    assert waiting.endswith("re-drafted once it loads")
    story.write_text(text)  # fixed: the problem and its diagnostic go, the proposal is open again
    sidecar.kitsoki_files_changed([str(story)])
    assert sidecar.problems == [] and not [d for d in diagnostics_for(sidecar, "stories/release-desk/app.yaml")
                                           if d.severity == types.DiagnosticSeverity.Error]
    assert {c.kind: c.status for c in sidecar.cards()}["intent"] == "pending"
    sidecar.stop()


def test_a_staged_draft_is_never_a_workspace(tmp_path):
    demo, sidecar, server = served(tmp_path)
    world = next(c for c in sidecar.cards() if c.kind == "world")
    draft_root = demo.workspace / ".artifacts" / "mining" / world.recipe_id
    assert (draft_root / ".kitsoki.yaml").is_file(), "the draft has a .kitsoki.yaml: the root marker"
    assert "not a workspace" in not_a_workspace(draft_root)
    with pytest.raises(ValueError, match="kitsoki-miner's own state"):
        WorkspaceSidecar(draft_root, watch=False, mining=False)
    problems = []
    serve_roots(server, [draft_root], problems)
    assert list(server.sidecars) == [sidecar.workspace] and "not served" in problems[0]
    sidecar.stop()


def test_a_decided_proposal_s_diff_says_so_and_the_gate_names_its_flows(tmp_path):
    demo, sidecar, server = served(tmp_path)
    world = next(c for c in sidecar.cards() if c.kind == "world")
    uri = (demo.workspace / ".kitsoki.yaml").as_uri()
    detail = proposal_impl(server, {"id": world.recipe_id})
    # No flow reads the demo's root overrides: the confirmation says so (the demo keeps such a change ungated).
    assert (detail["gate"]["kind"], detail["gate"]["runs"], detail["gate"]["gated"]) == ("builtin", [], False)
    # One line for the confirmation; what would exercise the change is a list of its own.
    assert detail["gate"]["note"] == "no flow exercises this change: kept after the structural checks (miner.ungated: allow)"
    assert any(w.startswith("a root flow") for w in detail["gate"]["would_exercise"]), detail["gate"]
    intent = next(c for c in sidecar.cards() if c.kind == "intent")
    assert proposal_impl(server, {"id": intent.recipe_id})["gate"]["runs"] == [
        "stories/release-desk/flows/preview.yaml", "stories/release-desk/flows/release.yaml"]
    assert detail["files"][0]["hunks"] == [{"after": 25, "removed": [], "added": ["      test_cmd: pytest"]}]
    sidecar.decide(world.recipe_id, "accept")
    content = proposal_content_impl(server, {"id": world.recipe_id, "uri": uri})
    assert content["state"] == "accepted"
    assert content["text"].startswith("# kitsoki-miner: \"Set world.test_cmd to 'pytest'\" was accepted and kept")
    assert content["text"].endswith((demo.workspace / ".kitsoki.yaml").read_text())
    sidecar.stop()


def test_an_empty_pass_says_where_it_looked():
    report = PassReport(trigger="seed", slug="s", sessions=0, recipes=0, job_id="j", files_seen=0)
    status = MinerStatus(enabled=True, paused=False, running=False, slug="s", last_pass=report,
                         transcript_dirs=["/home/u/.claude/projects/-ws", "/ws/transcripts"])
    assert mining_note(status).startswith("the last pass read 0 sessions; it looked in "
                                          "/home/u/.claude/projects/-ws, /ws/transcripts.")
    live = report.model_copy(update={"trigger": "live", "files_seen": 4})
    assert mining_note(status.model_copy(update={"last_pass": live})) is None, "nothing new is not a problem"
    assert "mining is off" in mining_note(status.model_copy(update={"enabled": False}))


def test_the_wording_a_person_reads():
    assert plural(1, "proposal") == "1 proposal" and plural(2, "proposal") == "2 proposals"
    assert cite_text("/x/a.jsonl", 12, 12) == "a.jsonl:12" and cite_text("a.jsonl", 5, 10) == "a.jsonl:5-10"
    assert actions_text(["Bash: pytest", "bash: pytest", "Edit: app.yaml"]) == "`pytest`, `Edit: app.yaml`"
    assert classification_text("GAP") == "New: not modeled yet (GAP)"
    assert readable_failure('expect_world["x"]: got  (string), want a (string)') == \
        'expect_world["x"]: got "" (string), want a (string)'


def test_proposals_raised_with_no_editor_are_asked_once_across_sessions(tmp_path):
    demo = lay_out_pending(tmp_path / "demo")  # raised by `demo --pending`: no editor has asked yet
    asked: list[str] = []
    events = SidecarEvents(raised=lambda ws, cards: asked.extend(c.recipe_id for c in cards))
    first = WorkspaceSidecar(demo.workspace, watch=False, mining=False, events=events)
    first.start()
    assert sorted(asked) == sorted(p.recipe_id for p in demo.proposals)
    first.stop()
    asked.clear()
    again = WorkspaceSidecar(demo.workspace, watch=False, mining=False, events=events)
    again.start()
    assert asked == [], "asked in an earlier session: not again"
    again.stop()


def test_a_saved_file_without_the_kept_change_is_undone_and_offered_again(tmp_path):
    demo, sidecar, server = served(tmp_path)
    back: list = []
    sidecar.events.taken_back = lambda ws, reversal: back.append(reversal)
    config = demo.workspace / ".kitsoki.yaml"
    before = config.read_bytes()
    world = next(c for c in sidecar.cards() if c.kind == "world")
    assert sidecar.decide(world.recipe_id, "accept").flows_green
    assert world.recipe_id not in {c.recipe_id for c in sidecar.cards()}
    config.write_bytes(before)  # the editor's undo, then save
    sidecar.kitsoki_files_changed([str(config)])
    assert [(r.recipe_id, r.how) for r in back] == [(world.recipe_id, "saved")]
    assert {c.recipe_id: c.status for c in sidecar.cards()}[world.recipe_id] == "pending"
    assert decided_impl(server, {"state": "accepted"})["decided"] == [], "nothing accepted any more"
    sidecar.decide(world.recipe_id, "accept")
    [item] = decided_impl(server, {"state": "accepted"})["decided"]
    assert (item["id"], item["can"]) == (world.recipe_id, "undo")
    reversal = sidecar.undo(world.recipe_id)
    assert reversal.restored == [".kitsoki.yaml"] and config.read_bytes() == before
    sidecar.stop()


def test_two_workspaces_never_share_an_answer(tmp_path):
    """The same demo laid out twice (same recipe ids, same generations): each workspace's cards."""
    first, second = lay_out_pending(tmp_path / "a"), lay_out_pending(tmp_path / "b")
    server = KitsokiServer()
    sidecars = []
    for demo in (first, second):
        sidecar = WorkspaceSidecar(demo.workspace, watch=False, mining=False)
        sidecar.start()
        server.sidecars[sidecar.workspace] = sidecar
        sidecars.append(sidecar)
    assert sidecars[0].generation == sidecars[1].generation
    cards = proposals_impl(server, {})["proposals"]
    assert sorted(c["workspace"].split("/")[-2] for c in cards) == ["a"] * 3 + ["b"] * 3
    assert {c["id"] for c in cards if "/a/" in c["workspace"]} == {c["id"] for c in cards if "/b/" in c["workspace"]}
    for sidecar in sidecars:
        sidecar.stop()
