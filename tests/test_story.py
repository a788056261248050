"""The workspace model: stories load with their rooms, kitsoki's rules are checked with file:line:col,
and the inventory lists what the live tree models, each row with where it is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.demo.walkthrough import WORKSPACE
from core.kitsoki.inventory import ROOT_INSTANCE, build_inventory
from core.kitsoki.library import LIBRARY_DIR, summarise
from core.kitsoki.loader import LoadSession
from core.kitsoki.imports import Sources
from core.kitsoki.story import WorkspaceError, initial_leaf, load_story, load_workspace, resolve_target
from kitsoki_rules import CASES

KITSOKI = Path(__file__).resolve().parents[2] / "shared" / "kitsoki-workspace"
if not KITSOKI.is_dir():
    KITSOKI = Path(__file__).resolve().parents[1] / ".." / "shared" / "kitsoki-workspace"
NO_ENV: dict[str, str] = {}
"""No KITSOKI_REPO: @kitsoki/ imports resolve to the library we carry."""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


APP = """\
app: { id: t, version: 0.1.0 }
intents:
  go:
    examples: ["go on"]
    synonyms: ["head {direction}"]
    slots:
      direction: { type: enum, values: [north, south] }
  stop: { examples: ["stop"] }
root: a
include: [rooms/*.yaml]
exits:
  done: {}
"""

ROOM = """\
states:
  a:
    on:
      go:
        - target: b
      stop: [{ target: "@exit:done" }]
  b:
    decider: human
    on_enter:
      - invoke: host.agent.task
        with: { acceptance: { schema: schemas/done.json }, context: { prompt: "do it" } }
    on:
      go: [{ target: . }]
      stop: [{ target: a }]
"""


def test_the_demo_workspace_loads_with_its_rooms():
    ws = load_workspace(WORKSPACE)
    story = ws.story("release-desk")
    assert story is not None and story.root == "desk"
    assert {"desk", "review", "__exit__shipped"} <= set(story.states)
    assert story.files[0].name == "app.yaml" and story.files[1].name == "desk.yaml"
    assert story.states["review"].decider == "llm"


def test_a_story_with_rooms_exits_slots_and_agent_calls(tmp_path):
    ws = write(tmp_path, {".kitsoki.yaml": "", "stories/t/app.yaml": APP, "stories/t/rooms/main.yaml": ROOM})
    model = load_workspace(ws)
    story = model.story("t")
    assert story.intents["go"].slots["direction"].values == ["north", "south"]
    assert story.states["__exit__done"].terminal
    inventory = build_inventory(model)
    [call] = inventory.agent_calls
    assert (call.state, call.handler) == ("b", "host.agent.task")
    assert call.at.file.endswith("rooms/main.yaml") and call.at.line == 10
    gates = {g.state: g for g in inventory.gates}
    assert gates["b"].decider == "human" and gates["a"].intents == ["go", "stop"]
    go = next(row for row in inventory.intents if row.story == "t" and row.name == "go")
    assert [p.text for p in go.phrases] == ["go on", "head {direction}"] and go.at.line == 3


@pytest.mark.parametrize("room, message, line", [
    (ROOM.replace("target: b", "target: nowhere"), 'transition target "nowhere" (resolved: "nowhere") does not exist', 5),
    (ROOM.replace('"@exit:done"', '"@exit:gone"'), "@exit:gone referenced but not declared in exits:", 1),
    (ROOM.replace("      stop: [{ target:", "      halt: [{ target:", 1), 'on: "halt" — intent not declared', 6),
    (ROOM.replace("decider: human", "decider: robot"), 'decider "robot" is invalid', 7),
])
def test_broken_rooms_are_reported_with_kitsokis_reason_and_file_line(tmp_path, room, message, line):
    ws = write(tmp_path, {".kitsoki.yaml": "", "stories/t/app.yaml": APP, "stories/t/rooms/main.yaml": room,
                          "stories/ok/app.yaml": "app: { id: ok }\nroot: a\nstates:\n  a: {}\n"})
    model = load_workspace(ws, env=NO_ENV)  # the broken story is refused alone, as kitsoki's discovery skips it
    assert [s.slug for s in model.stories] == ["ok"]
    [refusal] = model.refused
    [issue] = refusal.issues
    assert message in issue.message and issue.line == line
    assert any("does not load, so it is left out" in w.message and message in w.message for w in model.warnings)
    with pytest.raises(WorkspaceError) as caught:
        load_story(ws / "stories" / "t" / "app.yaml", env=NO_ENV)
    [issue] = caught.value.issues
    assert message in issue.message and issue.line == line
    assert issue.file.endswith("rooms/main.yaml") or issue.file.endswith("app.yaml")


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kitsoki_rule_accepts_or_refuses_as_kitsoki_does(tmp_path, name):
    files, reason = CASES[name]
    story = tmp_path / "stories" / "t"
    for rel, text in files.items():
        path = Path((story / rel).as_posix().replace("/t/../", "/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if reason is None:
        assert load_story(story / "app.yaml", env=NO_ENV).app_id == "t"
        return
    with pytest.raises(WorkspaceError) as caught:
        load_story(story / "app.yaml", env=NO_ENV)
    assert reason in str(caught.value)
    assert all(issue.line >= 1 for issue in caught.value.issues)


def test_an_import_is_a_compound_state_with_renamed_world_intents_and_targets(tmp_path):
    files, _ = CASES["import-folds"]
    for rel, text in files.items():
        path = Path((tmp_path / "stories" / "t" / rel).as_posix().replace("/t/../", "/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    story = load_story(tmp_path / "stories" / "t" / "app.yaml", env=NO_ENV)
    kid = story.states["kid"]
    assert (kid.type, kid.initial, kid.import_alias, kid.children) == ("compound", "k1", "kid", ["k1", "k2"])
    assert initial_leaf(story, "kid") == "kid.k1"
    assert {"kid__target", "goal"} <= set(story.world) and {"kid__next", "kid__poke", "poke"} <= set(story.intents)
    assert story.intents["poke"].lifted and story.intents["kid__next"].origin == "kid"
    [arm] = story.states["kid.k1"].on["kid__next"]
    assert (arm.target, arm.when) == ("../k2", "world.kid__target != ''")
    assert resolve_target(story, "kid.k1", arm.target) == "kid.k2"
    assert story.states["kid.k1"].intent_aliases == {"next": "kid__next"}
    # @exit:done became the importer's exits.done.to, with its set: appended
    [out] = story.states["kid.k2"].on["kid__next"]
    assert out.target == "a" and out.effects[-1].args == {"goal": "done"}
    # world_in: a synthesised set on entering the compound; the interface bound by host_bindings
    assert kid.on_enter[-1].raw == {"set": {"kid__target": "{{ world.goal }}"}}
    assert story.states["kid.k2"].on_enter[0].invoke == "host.append_to_file.post"
    assert story.folded["kid"].origin == "path" and story.imported[0].name == "app.yaml"
    assert [f.name for f in story.import_files] == ["app.yaml"]


def test_an_include_that_leaves_the_story_folder_refuses_that_story_alone(tmp_path):
    ws = write(tmp_path, {".kitsoki.yaml": "", "stories/t/app.yaml": APP.replace("rooms/*.yaml", "../x/*.yaml"),
                          "stories/t/rooms/main.yaml": ROOM, "stories/ok/app.yaml": "app: { id: ok }\nroot: a\n"
                                                                                    "states:\n  a: {}\n"})
    model = load_workspace(ws, env=NO_ENV)
    assert [s.slug for s in model.stories] == ["ok"]
    [refusal] = model.refused
    assert refusal.app.parent.name == "t" and "leaves the story folder" in refusal.reason()


def test_discovery_is_recursive_and_materialized_roots_load(tmp_path):
    nested = APP.replace("include: [rooms/*.yaml]\n", "") + "states:\n  a:\n    on:\n      go: [{ target: a }]\n"
    materialized = ("app: { id: m }\nimports:\n  core: { source: '@kitsoki/dev-story', entry: landing }\n"
                    "root: core\n")
    ws = write(tmp_path, {".kitsoki.yaml": "story_dirs: [./stories]\n", "stories/x/app/app.yaml": nested,
                          ".kitsoki/stories/m/app.yaml": materialized})
    model = load_workspace(ws, env=NO_ENV)
    by_slug = {story.slug: story for story in model.stories}
    assert set(by_slug) == {"app", "m"} and by_slug["app"].path.parent.name == "app"
    m = by_slug["m"]
    assert m.materialized and m.open_world and m.folded["core"].origin == "library"
    assert len([name for name in m.intents if name.startswith("core__")]) == 294


def test_dev_story_intents_and_overrides_are_in_the_inventory(tmp_path):
    config = ("root:\n  import: dev-story\n  overrides:\n    bindings:\n      ticket: host.gh.ticket\n"
              "    world:\n      test_cmd: make test\n    synonyms:\n      go_bugfix: [\"squash a bug\"]\n")
    inventory = build_inventory(load_workspace(write(tmp_path, {".kitsoki.yaml": config}), env=NO_ENV))
    assert inventory.binding("ticket").handler == "host.gh.ticket" and inventory.binding("ticket").at.line == 5
    assert inventory.binding("vcs").source == "default"
    assert inventory.world_value("test_cmd").value == "make test"
    override = next(r for r in inventory.intents if r.source == "override")
    assert (override.story, override.name, override.phrases[0].at.line) == (ROOT_INSTANCE, "go_bugfix", 9)
    assert any(r.name == "pick_ticket" and r.source == "dev-story" for r in inventory.intents)


# --- the real kitsoki workspace ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kitsoki():
    if not KITSOKI.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    return load_workspace(KITSOKI, env=NO_ENV)


def test_the_kitsoki_workspace_loads_every_story_kitsoki_loads(kitsoki):
    # The shared copy leaves out program code (*.star), so kitsoki itself refuses the two stories whose
    # rooms run a Starlark script (`kitsoki validate` there: "host.starlark.run script ... not found").
    refused = {r.app.parent.name: r for r in kitsoki.refused}
    assert sorted(refused) == ["dogfood-marathon", "starlark-enrich"]
    assert all("host.starlark.run script" in i.message and "not found" in i.message
               for r in refused.values() for i in r.issues)
    assert len(kitsoki.stories) == 39 and len(kitsoki.warnings) == 2
    slugs = {story.slug for story in kitsoki.stories}
    assert {"app", "dev-story", "kitsoki-dev", "bugfix", "oregon-trail"} <= slugs  # app/app.yaml stories too
    assert sum(1 for story in kitsoki.stories if story.folded) == 15
    dev = kitsoki.story("dev-story")
    assert sorted(dev.folded) == ["bf", "cyp", "demovid", "gitops", "impl", "model_eval", "pr", "prd", "rev"]
    assert kitsoki.dev_story.kind == "library"


def test_the_root_instance_has_dev_storys_intents_and_the_192_it_lifts_with_slots(kitsoki):
    rows = [row for row in build_inventory(kitsoki).intents if row.story == ROOT_INSTANCE and row.source == "dev-story"]
    assert len(rows) == 294
    lifted = [row for row in rows if "__" in row.name]
    bare_lifted = {"approve", "begin", "change_ticket", "dismiss", "merge_now", "monitor", "next_feature", "open",
                   "pick_pr", "request_changes", "resolve", "retry", "start"}
    assert len(lifted) == 179 and bare_lifted <= {row.name for row in rows}
    lifted_rows = lifted + [row for row in rows if row.name in bare_lifted]
    assert len(lifted_rows) == 192 and sum(len(row.examples) for row in lifted_rows) == 522
    prefixes = {row.name.split("__")[0] for row in lifted}
    assert prefixes == {"bf", "cyp", "demovid", "gitops", "impl", "model_eval", "pr", "prd", "rev"}
    with_slots = {row.name for row in rows if row.slots and "__" not in row.name and row.name not in bare_lifted}
    assert with_slots == {"ask_question", "capture_existing", "change_existing", "cleanup_workspaces", "discuss",
                          "draft_doc", "pick", "pick_review", "pick_ticket", "query_signal", "refine", "regenerate",
                          "report_incident", "revise_init", "search_tickets", "start_deploy", "work"}


def test_the_project_profile_is_folded_into_the_root(kitsoki):
    inventory = build_inventory(kitsoki)
    assert inventory.binding("ticket").handler == "host.gh.ticket" and inventory.binding("ticket").source == "profile"
    assert inventory.world_value("test_cmd").value == "go test ./..."
    assert inventory.world_value("test_cmd").at.file.endswith("project-profile.yaml")


def test_the_library_entry_is_what_our_loader_reads_from_kitsokis_dev_story():
    if not KITSOKI.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    loaded = LoadSession(sources=Sources(kitsoki_repo=None, library=LIBRARY_DIR)).load_child(
        str(KITSOKI / "stories" / "dev-story" / "app.yaml"), [])
    assert not loaded.issues
    import json

    carried = json.loads((LIBRARY_DIR / "dev-story.json").read_text())
    fresh = json.loads(json.dumps(summarise(loaded.definition, name="dev-story", source="stories/dev-story/app.yaml")))
    assert fresh == carried


def test_a_warm_load_reuses_every_story_and_a_changed_file_reloads_only_its_stories(tmp_path):
    ws = write(tmp_path, {".kitsoki.yaml": "", "stories/t/app.yaml": APP, "stories/t/rooms/main.yaml": ROOM,
                          "stories/u/app.yaml": APP.replace("include: [rooms/*.yaml]\n", "") +
                          "states:\n  a:\n    on:\n      go: [{ target: a }]\n"})
    first = load_workspace(ws, env=NO_ENV)
    second = load_workspace(ws, env=NO_ENV)
    assert [id(s) for s in first.stories] == [id(s) for s in second.stories]
    room = ws / "stories/t/rooms/main.yaml"
    room.write_text(ROOM.replace("go on", "go on") + "  c: {}\n")
    third = load_workspace(ws, env=NO_ENV)
    assert "c" in third.story("t").states and third.story("u") is first.story("u")
    staged = load_workspace(ws, env=NO_ENV, overlay={str(room): ROOM.encode()})
    assert "c" not in staged.story("t").states and load_workspace(ws, env=NO_ENV).story("t") is third.story("t")


def test_a_storys_intents_read_before_its_states_are_the_ones_its_states_declare():
    """A story's intents alone (what the inventory of a story a draft reloaded reads) are exactly what
    all_intents yields once every state is built: same intents, same order, same fields."""
    from core.kitsoki.workspace import clear_caches

    if not KITSOKI.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    clear_caches()
    model = load_workspace(KITSOKI, env=NO_ENV)
    stories = [*model.stories, model.root_instance]
    assert all("states" not in story.__dict__ for story in stories)  # nothing built them yet
    early = [[intent.model_dump() for intent in story.all_intents()] for story in stories]
    assert all("states" not in story.__dict__ for story in stories)
    late = [[intent.model_dump() for intent in story.all_intents()] for story in stories if story.states is not None]
    assert early == late and sum(map(len, early)) > 500
    assert any(intent["state"] for intents in early for intent in intents)  # state-local intents are there
    clear_caches()


def test_a_storys_own_intent_names_are_read_without_building_it():
    """The root instance's rows (what the impact replay of a dev-story draft rebuilds) leave out its own
    intents by name: read from the definition, the same names as the built story's, nothing built."""
    from core.kitsoki.inventory import _top_intent_names
    from core.kitsoki.workspace import clear_caches

    if not KITSOKI.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    clear_caches()
    model = load_workspace(KITSOKI, env=NO_ENV)
    stories = [*model.stories, model.root_instance]
    names = [_top_intent_names(story) for story in stories]
    assert all("intents" not in story.__dict__ for story in stories)
    assert names == [set(story.intents) for story in stories] and any(names)
    clear_caches()


def test_one_storys_intent_rows_are_the_inventorys(kitsoki):
    """What a draft's route check reads (core.kitsoki.inventory.intent_rows) is the full inventory's
    rows of that story, in order, for every story and the root instance."""
    from core.kitsoki.inventory import intent_rows

    full = build_inventory(kitsoki).intents
    for slug in [ROOT_INSTANCE, *{story.slug for story in kitsoki.stories}]:
        assert [r.model_dump() for r in intent_rows(kitsoki, slug)] == \
            [r.model_dump() for r in full if r.story == slug], slug
