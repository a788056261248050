"""The proposer's memo (core/proposals/memo.py): a second `propose` with nothing changed answers the same without
loading the tree, and any change the load could see (a story's bytes, even at the same size and mtime; a new
story; the config; the environment) or a memo that is not ours makes it load the tree again."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import core.proposals.proposer as proposer
from core.kitsoki.workspace import clear_caches
from core.proposals import memo
from test_proposals import APP, outcome, recipe, workspace


def _age(root: Path, seconds: float = 60.0) -> None:
    """Files written a minute ago: older than the racy window, as a real checkout's are."""
    then = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        if ".artifacts" not in path.parts:
            os.utime(path, (then, then), follow_symlinks=False)


def _recipes():
    return [recipe("binding", "ticket via gh", iface="ticket", value="gh"),
            recipe("intent", "deploy", phrasings=[("ship to production", 3)]),
            recipe("intent", "rotate the signing keys", phrasings=[("rotate the signing keys", 3)])]


@pytest.fixture
def loads(monkeypatch):
    """How many times the proposer loaded the tree."""
    count = []
    real = proposer.load_workspace

    def counting(path, **kw):
        count.append(path)
        return real(path, **kw)

    monkeypatch.setattr(proposer, "load_workspace", counting)
    return count


def _summary(report):
    return [(o.recipe_id, o.result, o.reason, o.classification, o.score) for o in report.outcomes], \
        [p.model_dump(mode="json") for p in report.problems]


def test_nothing_changed_answers_the_same_without_loading_the_tree(tmp_path, loads):
    ws = workspace(tmp_path)
    _age(ws)
    first = proposer.run_proposer(ws, _recipes())
    assert (ws / memo.MEMO_FILE).is_file() and len(loads) == 1
    clear_caches()  # a new process
    second = proposer.run_proposer(ws, _recipes())
    assert len(loads) == 1  # the memo answered
    # the same answers a loaded tree gives (nothing lost): a copy without the memo, same history
    (ws / memo.MEMO_FILE).unlink()
    clear_caches()
    third = proposer.run_proposer(ws, _recipes())
    assert len(loads) == 2
    assert _summary(second) == _summary(third)
    assert {o.result for o in first.outcomes} >= {"raised", "already-modeled"}


def test_a_story_changed_at_the_same_size_and_mtime_is_seen(tmp_path, loads):
    ws = workspace(tmp_path)
    _age(ws)
    proposer.run_proposer(ws, _recipes()[1:2])
    app = ws / "stories" / "desk" / "app.yaml"
    info = app.stat()
    changed = APP.replace('"ship to production"', '"ship to prodxction"')
    assert len(changed) == len(APP)
    app.write_text(changed)
    os.utime(app, ns=(info.st_atime_ns, info.st_mtime_ns))
    clear_caches()
    report = proposer.run_proposer(ws, _recipes()[1:2])
    assert len(loads) == 2  # the content hash caught it
    assert outcome(report, _recipes()[1].id).result != "already-modeled" or \
        "prodxction" not in outcome(report, _recipes()[1].id).reason


def test_a_new_story_a_config_change_or_another_environment_load_the_tree(tmp_path, loads, monkeypatch):
    ws = workspace(tmp_path)
    _age(ws)
    proposer.run_proposer(ws, _recipes())
    (ws / "stories" / "other").mkdir()
    (ws / "stories" / "other" / "app.yaml").write_text(APP.replace("id: desk", "id: other"))
    _age(ws)
    proposer.run_proposer(ws, _recipes())
    assert len(loads) == 2
    proposer.run_proposer(ws, _recipes())
    assert len(loads) == 2  # remembered again
    (ws / "stories" / "other" / "rooms").mkdir()  # a new room file an `include:` glob could pick up
    (ws / "stories" / "other" / "rooms" / "extra.yaml").write_text("states: {}\n")
    _age(ws / "stories" / "other" / "rooms")  # no file the load read changed
    proposer.run_proposer(ws, _recipes())
    assert len(loads) == 3
    config = ws / ".kitsoki.yaml"
    config.write_text(config.read_text() + "# a comment\n")
    _age(ws)
    proposer.run_proposer(ws, _recipes())
    assert len(loads) == 4
    monkeypatch.setenv("KITSOKI_SOMETHING", "else")  # a variable nothing in the load reads
    monkeypatch.setenv("TERM_PROGRAM", "vscode")  # (another shell, another terminal)
    clear_caches()  # a new process
    proposer.run_proposer(ws, _recipes())
    assert len(loads) == 4  # the memo answered


PROMPTED = APP.replace("states:\n", "agents:\n  writer:\n    system_prompt_path: ../../prompts/writer.md\n\n"
                                     "states:\n", 1)


def test_the_environment_and_the_paths_the_load_looked_at_are_checked(tmp_path, loads, monkeypatch):
    """A variable a story's load reads, or a file it only looked for (outside every folder the load read
    from), changing makes the next pass load the tree; the memo then says what the tree says."""
    monkeypatch.delenv("KITSOKI_MINER_MEMO_PROBE", raising=False)
    ws = workspace(tmp_path, app=PLUGIN)
    (ws / "stories" / "writing").mkdir(parents=True)
    (ws / "stories" / "writing" / "app.yaml").write_text(PROMPTED.replace("id: desk", "id: writing"))
    _age(ws)

    def refused():
        clear_caches()  # a new process
        report = proposer.run_proposer(ws, _recipes()[:1])  # raised once, then already staged
        return sorted(p.file.split("/stories/")[-1] for p in report.problems)

    assert refused() == ["desk/app.yaml", "writing/app.yaml"] and len(loads) == 1
    assert refused() == ["desk/app.yaml", "writing/app.yaml"] and len(loads) == 1  # remembered
    monkeypatch.setenv("KITSOKI_MINER_MEMO_PROBE", "set")  # the plugin's ${VAR} is set now
    assert refused() == ["writing/app.yaml"] and len(loads) == 2
    (ws / "prompts").mkdir()
    (ws / "prompts" / "writer.md").write_text("You write.\n")  # the agent's prompt exists now
    assert refused() == [] and len(loads) == 3
    assert refused() == [] and len(loads) == 3  # remembered again
    monkeypatch.delenv("KITSOKI_MINER_MEMO_PROBE")
    assert refused() == ["desk/app.yaml"] and len(loads) == 4


def test_a_story_kept_in_the_process_follows_the_variables_it_read(tmp_path, monkeypatch):
    """A story loaded once is reused by the next load in the same process (the server's) only while the
    variables and paths its load looked at answer the same; the memo written then says what the tree says."""
    monkeypatch.delenv("KITSOKI_MINER_MEMO_PROBE", raising=False)
    ws = workspace(tmp_path, app=PLUGIN)
    _age(ws)
    clear_caches()
    first = proposer.run_proposer(ws, _recipes()[:1])
    assert [p.key for p in first.problems] == ["agent_plugins.agent.x.env.K"]
    monkeypatch.setenv("KITSOKI_MINER_MEMO_PROBE", "set")
    second = proposer.run_proposer(ws, _recipes()[:1])  # the same process
    assert second.problems == []
    clear_caches()
    kept = memo.load(ws, proposer.load_config(ws))
    assert kept is not None and kept.refused == [] and [Path(s.path).parent.name for s in kept.stories] == ["desk"]


def test_a_memo_that_is_not_ours_is_never_used(tmp_path, loads):
    ws = workspace(tmp_path)
    _age(ws)
    proposer.run_proposer(ws, _recipes())
    path = ws / memo.MEMO_FILE
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"ALREADY-MODELED"', b'"GAP"'))  # planted: the signature no longer matches
    proposer.run_proposer(ws, _recipes())
    assert len(loads) == 2
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_bytes(data)
    proposer.run_proposer(ws, _recipes())
    assert len(loads) == 3  # never through a link


def test_a_recently_written_tree_is_not_remembered(tmp_path, loads):
    """A file changed within the racy window may change again unseen by its mtime: no memo then."""
    ws = workspace(tmp_path)
    proposer.run_proposer(ws, _recipes())
    assert not (ws / memo.MEMO_FILE).exists()


# -- the loader's memo of its load-time checks (core/kitsoki/checked.py) -----------------------------------


BROKEN = APP.replace("      approve: [{ target: desk }]", "      approve: [{ target: nowhere }]")


@pytest.fixture
def checks(monkeypatch):
    """The apps whose definition kitsoki's load-time checks really ran on."""
    import core.kitsoki.loader as loader

    ran = []
    real = loader.validate_definition

    def counting(definition, wrappers):
        ran.append(1)
        return real(definition, wrappers)

    monkeypatch.setattr(loader, "validate_definition", counting)
    return ran


def _loaded(ws):
    from core.kitsoki.workspace import load_workspace

    clear_caches()  # a new process
    model = load_workspace(ws)
    return [s.slug for s in model.stories], [r.model_dump(mode="json") for r in model.refused]


def test_unchanged_stories_are_not_checked_again_and_load_the_same(tmp_path, checks):
    from core.kitsoki.checked import CHECKED_FILE
    from core.kitsoki.loadcache import LOADED_FILE

    ws = workspace(tmp_path)
    (ws / "stories" / "broken").mkdir()
    (ws / "stories" / "broken" / "app.yaml").write_text(BROKEN.replace("id: desk", "id: broken"))
    (ws / ".artifacts").mkdir()
    _age(ws)
    first = _loaded(ws)
    assert (ws / CHECKED_FILE).is_file() and len(checks) == 3  # two stories and the root instance
    assert first[1] and "nowhere" in str(first[1])
    assert _loaded(ws) == first and len(checks) == 3  # the verdicts, problems included, from the memo
    app = ws / "stories" / "desk" / "app.yaml"
    app.write_text(APP.replace("Deploy to production.", "Deploy to prod."))
    _age(ws)
    assert _loaded(ws)[0] == first[0] and len(checks) == 4  # only the changed story is checked again
    path = ws / CHECKED_FILE
    path.write_bytes(path.read_bytes().replace(b"nowhere", b"nowhen"))  # not ours any more: never used
    (ws / LOADED_FILE).unlink()  # the load memo (tests/test_load_memo.py) would answer without any check
    assert _loaded(ws) == first and len(checks) == 7


def test_a_checkout_without_state_is_never_written_to(tmp_path, checks):
    ws = workspace(tmp_path)
    _age(ws)
    _loaded(ws)
    assert not (ws / ".artifacts").exists()


FALLBACK_APP = """\
app: { id: helpdesk, version: 0.1.0 }
root: landing
world:
  schema:
    request: { type: string, default: "" }
intents:
  work:
    slots: { request: { type: string, required: true } }
  search: {}
states:
  landing:
    on:
      work: [{ target: landing, effects: [{ set: { request: "{{ slots.request }}" } }] }]
      search: [{ target: searching }]
  searching:
    on: {}
"""

FALLBACK_FLOW = """\
test_kind: flow
initial_state: searching
turns:
  - intent: { name: work, slots: { request: migrate the tickets } }
    expect_state: landing
    expect_world: { request: migrate the tickets }
"""


def test_a_memo_hit_keeps_the_free_form_fallback_the_checks_inject(tmp_path, checks):
    """kitsoki injects the landing room's `work` arm into every other room at load
    (applyFreeFormFallback, done by our load-time checks); a verdict from the memo must not lose it:
    the flow that sends `work` from another room passes in every process, not only the first."""
    from core.flows import run_flows

    ws = tmp_path / "ws"
    story = ws / "stories" / "helpdesk"
    (story / "flows").mkdir(parents=True)
    (ws / ".kitsoki.yaml").write_text("story_dirs: [stories]\n")
    (story / "app.yaml").write_text(FALLBACK_APP)
    (story / "flows" / "work_from_search.yaml").write_text(FALLBACK_FLOW)
    (ws / ".artifacts").mkdir()
    _age(ws)
    reports, checked = [], []
    for _ in range(2):
        clear_caches()  # a new process
        reports.append(run_flows(ws).model_dump(mode="json"))
        checked.append(len(checks))
    assert checked[0] and checked[1] == checked[0]  # the second run's verdicts came from the memo
    assert reports[0] == reports[1] and reports[0]["Passed"] == 1, reports


# -- the agent checks kept in the same memo, with what they looked at -------------------------------------

STARLARK = APP.replace("""  desk:
    description: "Pick what to do."
""", """  desk:
    description: "Pick what to do."
    on_enter:
      - invoke: host.starlark.run
        with: { script: scripts/pick.star }
""")
PLUGIN = APP.replace("states:\n", "agent_plugins:\n  agent.x: { plugin: subprocess, command: c, env: "
                                   "{ K: '${KITSOKI_MINER_MEMO_PROBE}' } }\n\nstates:\n", 1)


def _problems(ws) -> str:
    return str(_loaded(ws)[1])


def test_a_kept_agent_verdict_follows_the_files_it_looked_for(tmp_path):
    ws = workspace(tmp_path, app=STARLARK)
    (ws / ".artifacts").mkdir()
    _age(ws)
    assert 'script "scripts/pick.star" not found' in _problems(ws)
    assert 'script "scripts/pick.star" not found' in _problems(ws)  # kept, and still true
    scripts = ws / "stories" / "desk" / "scripts"
    scripts.mkdir()
    (scripts / "pick.star").write_text("def main(inputs):\n    return {}\n")  # the story's own files did not change
    assert "has no sidecar" in _problems(ws)
    (scripts / "pick.star.yaml").write_text("inputs: {}\n")
    assert _loaded(ws)[1] == [] and _loaded(ws)[1] == []
    (scripts / "pick.star").unlink()
    assert 'script "scripts/pick.star" not found' in _problems(ws)


def test_a_kept_agent_verdict_follows_the_environment_it_read(tmp_path, monkeypatch):
    monkeypatch.delenv("KITSOKI_MINER_MEMO_PROBE", raising=False)
    ws = workspace(tmp_path, app=PLUGIN)
    (ws / ".artifacts").mkdir()
    _age(ws)
    unset = "env var KITSOKI_MINER_MEMO_PROBE referenced in env.K not set"
    assert unset in _problems(ws) and unset in _problems(ws)
    monkeypatch.setenv("KITSOKI_MINER_MEMO_PROBE", "set")
    assert _loaded(ws)[1] == [] and _loaded(ws)[1] == []
    monkeypatch.delenv("KITSOKI_MINER_MEMO_PROBE")
    assert unset in _problems(ws)


def test_agent_verdicts_from_the_memo_are_the_checks_own(tmp_path, monkeypatch):
    """The same stories load with the memo and without it (each app's agent checks run once, then kept)."""
    import core.kitsoki.loader as loader

    ran = []
    real = loader.definition_agent_issues

    def counting(*args, **kwargs):
        ran.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(loader, "definition_agent_issues", counting)
    ws = workspace(tmp_path, app=STARLARK)
    (ws / ".artifacts").mkdir()
    _age(ws)
    first = _loaded(ws)
    checked = len(ran)
    assert checked >= 2 and _loaded(ws) == first and len(ran) == checked


def test_a_story_kept_in_the_process_follows_the_files_it_looked_for(tmp_path):
    """The server's loads reuse a loaded story while its files are unchanged; a script it only looked for
    appearing (or going) is a change too, in the same process."""
    from core.kitsoki.workspace import load_workspace

    ws = workspace(tmp_path, app=STARLARK)
    _age(ws)
    clear_caches()

    def problems():
        return str([r.model_dump(mode="json") for r in load_workspace(ws).refused])

    assert 'script "scripts/pick.star" not found' in problems()
    scripts = ws / "stories" / "desk" / "scripts"
    scripts.mkdir()
    (scripts / "pick.star").write_text("def main(inputs):\n    return {}\n")
    (scripts / "pick.star.yaml").write_text("inputs: {}\n")
    assert problems() == "[]"
    (scripts / "pick.star").unlink()
    assert 'script "scripts/pick.star" not found' in problems()
