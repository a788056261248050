"""Impact before accept (core.proposals.impact): every card says what its change would have done to this
project's past prompts, fixture inputs and other intents' phrases, before anyone is asked.

On the demo: the "take the build live" synonym gains the four past prompts it was mined from and moves the
fixture input that routes to `preview` today to `deploy`; the card says so, is labelled and ranked below the
others, and says the drafter tried a narrower phrasing first. On a copy of kitsoki's own workspace, with
histories written here: a synonym that steals a route, one that gains 20 prompts, a world key and a binding
(who reads them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from core.demo.make_transcripts import claude_session, render
from core.demo.pending import lay_out_pending
from core.demo.walkthrough import seed_pass
from core.kitsoki.inventory import build_inventory
from core.kitsoki.story import load_workspace
from core.mining.passes import run_pass
from core.mining.recipes import Instance, Phrasing, Recipe, recipe_id
from core.proposals.impact import readers
from core.proposals.impact import replay as replaying
from core.proposals.inbox import inbox
from core.proposals.mapper import Routers
from core.proposals.proposer import run_proposer
from core.proposals.validate import staged_load

KITSOKI_WS = Path(__file__).resolve().parents[2] / "shared" / "kitsoki-workspace"
DEMO_CWD = "/home/dev/release-desk"


def write_history(folder: Path, workspace: Path, sessions: list[tuple[str, list[str]]]) -> None:
    """Claude Code sessions run in `workspace`, one per (start, prompts), each prompt answered in words."""
    folder.mkdir(parents=True, exist_ok=True)
    for start, prompts in sessions:
        records = claude_session(start, [(p, [], "Done.") for p in prompts])
        text = render(records).decode().replace(DEMO_CWD, json.dumps(str(workspace))[1:-1])
        (folder / f"{records[0]['sessionId']}.jsonl").write_text(text)


def cli_out(capsys, *argv: str) -> str:
    """The console script's output (a process of its own, as a person runs it)."""
    done = subprocess.run([sys.executable, "-m", "server.cli", *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- the demo ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return lay_out_pending(tmp_path_factory.mktemp("impact") / "demo")


def card(demo, word: str):
    return next(p for p in inbox(demo.workspace) if word in p.title)


def test_the_demo_synonym_card_shows_its_gains_and_the_route_it_steals(demo):
    synonym = card(demo, "synonym")
    assert synonym.impact is not None
    assert [(g.text, g.count, g.to) for g in synonym.impact.gained] == [("take the build live", 4, "release-desk:deploy")]
    assert synonym.impact.gained[0].source.startswith("session ")
    moved = [m.model_dump(mode="json") for m in synonym.impact.moved]
    assert moved == [{"text": "take the preview build live", "from": "release-desk:preview",
                      "to": "release-desk:deploy", "source": "fixture stories/release-desk/flows/preview.yaml:8",
                      "count": 1}]
    # 12 distinct past asks, the fixtures' three typed inputs, and the other intents' phrases
    assert synonym.impact.replayed >= 12 + 3
    assert synonym.impact.narrower == ["no narrower phrasing: every phrasing of this ask holds the words that take "
                                       "the moved inputs"]
    assert "**Impact** (moves routes)" in synonym.summary_markdown
    # ranked below every card that moves no route, whatever its priority
    order = [p.title for p in inbox(demo.workspace)]
    assert order[-1] == synonym.title and synonym.priority == max(p.priority for p in inbox(demo.workspace))


def test_rung_1_and_gate_cards_say_who_reads_what_they_set(demo):
    world, binding, gate = card(demo, "world.test_cmd"), card(demo, "Bind ticket"), card(demo, "human decide")
    assert world.impact.reads == [] and world.impact.note == \
        "nothing in this project reads world.test_cmd"
    assert binding.impact.note == "nothing in this project invokes the ticket interface"
    reads = [(r.kind, r.where) for r in gate.impact.reads]
    # the arm into rollout, and the flow that drives a deploy through it (the one its gate will turn red)
    assert ("state", "stories/release-desk/rooms/desk.yaml:3") in reads
    assert ("flow", "stories/release-desk/flows/ship.yaml:6") in reads
    assert not gate.impact.moved and not gate.impact.gained


def test_proposals_json_and_text_carry_the_impact(demo, capsys):
    data = orjson.loads(cli_out(capsys, "proposals", "--repo", str(demo.workspace), "--json"))
    assert len(data["proposals"]) == 4
    for proposal in data["proposals"]:
        assert set(proposal["impact"]) >= {"replayed", "gained", "moved"}
    synonym = next(p for p in data["proposals"] if "synonym" in p["title"])
    assert synonym["impact"]["moved"][0]["from"] == "release-desk:preview"
    text = cli_out(capsys, "proposals", "--repo", str(demo.workspace))
    assert "[pending, MOVES ROUTES] rung 2 intent" in text
    assert ('  MOVES "take the preview build live" from release-desk:preview to release-desk:deploy '
            "(fixture stories/release-desk/flows/preview.yaml:8)") in text
    assert "impact: replayed" in text and "gains 1 (4 past prompts); MOVES 1 ROUTE" in text


def test_a_narrower_phrasing_that_gains_without_moving_is_drafted_instead(tmp_path):
    demo = lay_out_pending(tmp_path / "demo", staged=False)
    write_history(demo.transcripts / "claude", demo.workspace,
                  [("2026-11-21T09:00:00", ["take the main build live"]),
                   ("2026-11-22T09:00:00", ["take the main build live"])])
    seed_pass(demo.workspace, demo.transcripts)
    recipe = Recipe(id=recipe_id("intent", "main-build"), kind="intent", title="take the main build live",
                    priority=5.0, sessions=3, determinism="deterministic",
                    phrasings=[Phrasing(text="take the build live", count=4),
                               Phrasing(text="take the main build live", count=2)],
                    instances=[Instance("s", "x.jsonl", 1, 2)])
    report = run_proposer(demo.workspace, [recipe])
    assert report.raised == [recipe.id], report.outcomes
    proposal = next(p for p in inbox(demo.workspace) if p.recipe_id == recipe.id)
    assert "take the main build live" in proposal.diff and "+      - take the build live" not in proposal.diff
    assert proposal.impact.moved == []
    assert [(g.text, g.count) for g in proposal.impact.gained] == [("take the main build live", 2)]
    assert proposal.impact.narrower[-1].startswith('"take the main build live" instead of the broader phrasing')
    # the card keeps the whole ask's evidence, not the one phrasing it drafted
    assert [t for t, _ in proposal.evidence.phrasings] == ["take the build live", "take the main build live"]


# --- a copy of kitsoki's workspace, with histories written here ------------------------------------


@pytest.fixture(scope="module")
def kitsoki_copy(tmp_path_factory):
    if not (KITSOKI_WS / "stories").is_dir():
        pytest.fail(f"{KITSOKI_WS} is missing: the tests need the shared kitsoki workspace")
    root = tmp_path_factory.mktemp("kitsoki")
    workspace = root / "kitsoki-workspace"
    shutil.copytree(KITSOKI_WS, workspace, ignore=shutil.ignore_patterns(".git", ".artifacts"))
    grab = ["grab the money and ride off"] * 3
    loot = ["hand over the loot", "ok hand over the loot", "hand over the loot now", "hand over the loot please",
            "hand over the loot"]
    sessions = [(f"2026-11-{day:02d}T10:00:00", (grab[:1] if day < 5 else []) + loot) for day in range(2, 6)]
    write_history(root / "history", workspace, sessions)
    run_pass(workspace, repo=workspace, dirs=[root / "history"], trigger="seed", workers=1)
    model = load_workspace(workspace)
    return workspace, model, build_inventory(model)


def synonym_draft(workspace: Path, story: str, intent: str, phrase: str) -> dict[str, bytes]:
    from core.kitsoki import yamledit

    rel = f"stories/{story}/app.yaml"
    text = yamledit.append_items((workspace / rel).read_text(), ["intents", intent, "synonyms"], [phrase])
    return {rel: text.encode()}


def test_on_kitsoki_a_synonym_that_steals_a_past_prompt_route(kitsoki_copy):
    workspace, model, live = kitsoki_copy
    files = synonym_draft(workspace, "robbery", "pay", "grab the money")
    result = replaying.replay(model, live, build_inventory(staged_load(model, files)), Routers.build(live).by_story)
    moved = sorted((m.text, m.from_, m.to, m.count) for m in result.moved)
    # robbery routes it differently, and so do the two stories that import robbery (their own copies of its intents)
    assert moved == [("grab the money and ride off", "frontier_event:bandits__flee", "frontier_event:bandits__pay", 3),
                     ("grab the money and ride off", "oregon-trail:frontier__bandits__flee",
                      "oregon-trail:frontier__bandits__pay", 3),
                     ("grab the money and ride off", "robbery:flee", "robbery:pay", 3)]
    assert all(m.source.startswith("session ") for m in result.moved)
    assert result.replayed > 100  # every distinct past ask plus robbery's other phrases


def test_on_kitsoki_a_synonym_that_gains_twenty_past_prompts(kitsoki_copy):
    workspace, model, live = kitsoki_copy
    files = synonym_draft(workspace, "robbery", "pay", "hand over the loot")
    result = replaying.replay(model, live, build_inventory(staged_load(model, files)), Routers.build(live).by_story)
    assert result.moved == []
    in_robbery = [g for g in result.gained if g.to == "robbery:pay"]
    # five wordings ("ok ...", "... please") that the miner normalizes to one ask, asked twenty times
    assert [(g.text, g.count) for g in in_robbery] == [("hand over the loot", 20)]
    assert {g.to for g in result.gained} == {"robbery:pay", "frontier_event:bandits__pay",
                                             "oregon-trail:frontier__bandits__pay"}


def test_on_kitsoki_a_world_key_and_a_binding_report_who_reads_them(kitsoki_copy):
    _, model, _ = kitsoki_copy
    world = readers.world_readers(model, "test_cmd")
    assert any(r.kind == "state" and r.where.startswith("stories/dev-story/") for r in world), world
    assert any(r.kind == "flow" for r in world)
    binding = readers.binding_readers(model, "ticket")
    searched = [r for r in binding if r.where == "stories/dev-story/rooms/ticket_search.yaml:28"]
    assert searched and searched[0].what == "dev-story:ticket_search"


def _rows(inventory, stories) -> list[tuple]:
    return [(r.story, r.name, list(r.examples), list(r.synonyms), sorted(r.slots)) for r in inventory.intents
            if r.story in stories]


def test_staged_rows_are_made_once_per_intent_and_see_a_changed_one(kitsoki_copy, monkeypatch):
    """staged_intents reads the intents of every story a draft reloaded; an intent whose spec is the same
    object as in the draft before is not built again, and the rows equal build_inventory's."""
    from core.kitsoki import build

    workspace, model, live = kitsoki_copy
    built = []
    real = build.build_intent
    monkeypatch.setattr(build, "build_intent", lambda name, *a: built.append(name) or real(name, *a))
    replaying._PHRASES.clear()
    first = synonym_draft(workspace, "robbery", "pay", "grab the strongbox")
    staged = staged_load(model, first)
    changed = {s.slug for s in staged.stories if s not in model.stories}
    assert {"robbery", "frontier_event", "oregon-trail"} <= changed
    rows = replaying.staged_intents(model, live, staged, first)
    cold = len(built)
    assert cold > 0
    monkeypatch.setattr(build, "build_intent", real)
    assert _rows(rows, changed) == _rows(build_inventory(staged_load(model, first)), changed)

    monkeypatch.setattr(build, "build_intent", lambda name, *a: built.append(name) or real(name, *a))
    second = synonym_draft(workspace, "robbery", "pay", "give up the strongbox")
    staged = staged_load(model, second)
    del built[:]
    rows = replaying.staged_intents(model, live, staged, second)
    # only the intents of the file the draft changed (robbery's app.yaml, parsed anew) and their copies in
    # the two importers are built again; every other story's intents are the rows made for the first draft
    assert 0 < len(built) < cold / 4, built
    robbery = {r.name for r in live.intents if r.story == "robbery"}
    assert all(name.split("__")[-1] in robbery for name in built), built
    pay = [r for r in rows.intents if r.story == "robbery" and r.name == "pay"]
    assert "give up the strongbox" in pay[0].synonyms and "grab the strongbox" not in pay[0].synonyms
    monkeypatch.setattr(build, "build_intent", real)
    assert _rows(rows, changed) == _rows(build_inventory(staged_load(model, second)), changed)


def test_the_extra_corpus_is_shared_by_drafts_that_add_new_intents(kitsoki_copy):
    workspace, model, live = kitsoki_copy
    replaying._EXTRA.clear()
    none = replaying._extra_corpus(model, live, "robbery", ())
    assert replaying._extra_corpus(model, live, "robbery", ("a_new_intent",)) is none  # a new intent: no row to leave out
    own = replaying._extra_corpus(model, live, "robbery", ("pay",))  # an existing one: its phrases are left out
    assert own is not none
    pay = {p.text for r in live.intents if r.story == "robbery" and r.name == "pay" for p in r.phrases}
    assert pay and not pay & {i.text for i in own.inputs} and pay & {i.text for i in none.inputs}


def test_the_live_baseline_of_a_replay_is_made_once_per_live_inventory(kitsoki_copy):
    workspace, model, live = kitsoki_copy
    baseline = replaying._baseline(live)
    assert replaying._baseline(live) is baseline  # every draft of a pass replays against the same one
    assert baseline.phrases["robbery"] == replaying._phrases([r for r in live.intents if r.story == "robbery"])["robbery"]
    # another live inventory (the tree changed): its own baseline, with what it holds
    fewer = live.model_copy(update={"intents": [r for r in live.intents if not (r.story == "robbery" and r.name == "pay")]})
    other = replaying._baseline(fewer)
    assert other is not baseline and "pay" not in other.phrases["robbery"] and "pay" in baseline.phrases["robbery"]
    # a replay against it still finds what the draft gains (robbery's pay is new against that tree)
    files = synonym_draft(workspace, "robbery", "pay", "hand over the loot")
    result = replaying.replay(model, fewer, build_inventory(staged_load(model, files)))
    assert any(g.to == "robbery:pay" for g in result.gained) or any(m.to == "robbery:pay" for m in result.moved)


def test_the_home_story_of_new_rooms_is_found_without_building_every_story(kitsoki_copy):
    """New rooms go to the first story of the project's own whose root is a state it declares itself; the
    drafter finds it from the states' specs, as building every story's states would."""
    from core.proposals.drafter import _home_story

    from core.kitsoki.workspace import clear_caches

    workspace, _, _ = kitsoki_copy
    clear_caches()  # stories not shared with the loads of the tests before
    lazy = load_workspace(workspace)
    found = _home_story(lazy)
    assert sum("states" in s.__dict__ for s in lazy.stories) < len(lazy.stories) / 4  # most were never built
    own = [s for s in lazy.stories if not s.open_world and s.root and s.root in s.states
           and s.states[s.root].import_alias is None]
    expected = next((s for s in own if not s.materialized), None) or own[0]
    assert found is expected
