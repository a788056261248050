"""The server side of what the editors show, without an editor: `serve --stdio`, `demo --pending`,
where a change's lines go, the question lifecycle, the decided diff, the flows an accept runs, and
the wording a person reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lsprotocol import types

from core.demo.pending import lay_out_pending
from core.mining.passes import PassReport
from core.mining.service import MinerStatus
from core.proposals.hunks import hunks
from core.proposals.wording import actions_text, cite_text, classification_text, plural, readable_failure
from core.questions import QuestionBook
from core.sidecar import WorkspaceSidecar, mining_note
from server.lsp import KitsokiServer, lenses_impl, proposal_content_impl, proposal_impl


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
        "[1/2] Set world.test_cmd to 'pytest': accept · refine · reject · diff…",
        "[2/2] Bind ticket to host.gh.ticket: accept · refine · reject · diff…"]
    assert [lens.range.start.character for lens in row] == [0, 1], "one order for every client"
    draft = demo.workspace / ".artifacts" / "mining" / row[0].command.arguments[0]["id"] / ".kitsoki.yaml"
    draft_lenses = lenses_impl(server, types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=draft.as_uri())))
    assert draft_lenses[0].command.title == "DRAFT of .kitsoki.yaml for \"Set world.test_cmd to 'pytest'\": not the live file"
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
