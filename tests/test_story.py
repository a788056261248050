"""The workspace model: stories load with their rooms, kitsoki's rules are checked with file:line:col,
and the inventory lists what the live tree models, each row with where it is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.demo.walkthrough import WORKSPACE
from core.kitsoki.inventory import ROOT_INSTANCE, build_inventory
from core.kitsoki.story import WorkspaceError, load_workspace


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
      stop: { target: "@exit:done" }
  b:
    decider: human
    on_enter:
      - invoke: host.agent.task
        with: { prompt: "do it" }
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
    (ROOM.replace("target: b", "target: nowhere"), 'target "nowhere" is not a state of this story', 5),
    (ROOM.replace('"@exit:done"', '"@exit:gone"'), 'names an exit the exits: block does not declare', 6),
    (ROOM.replace("      stop: { target:", "      halt: { target:"), 'transition on "halt", which no intents: block', 6),
    (ROOM.replace("decider: human", "decider: robot"), '"robot" is not a decider', 8),
])
def test_broken_transitions_are_reported_with_file_line_column(tmp_path, room, message, line):
    ws = write(tmp_path, {".kitsoki.yaml": "", "stories/t/app.yaml": APP, "stories/t/rooms/main.yaml": room})
    with pytest.raises(WorkspaceError) as caught:
        load_workspace(ws)
    [issue] = caught.value.issues
    assert message in issue.message and issue.file.endswith("rooms/main.yaml") and issue.line == line
    assert f"rooms/main.yaml:{line}:" in str(caught.value)


@pytest.mark.parametrize("synonym, reason", [
    ("head {heading}", "unknown slot"),
    ("head {direction}{direction}", "adjacent captures"),
    ("head {direction", "unmatched"),
])
def test_bad_synonym_templates_fail_the_load(tmp_path, synonym, reason):
    ws = write(tmp_path, {".kitsoki.yaml": "", "stories/t/app.yaml": APP.replace("head {direction}", synonym),
                          "stories/t/rooms/main.yaml": ROOM})
    with pytest.raises(WorkspaceError) as caught:
        load_workspace(ws)
    [issue] = caught.value.issues
    assert reason in issue.message and issue.line == 5 and issue.key == "intents.go.synonyms[0]"


def test_override_synonym_templates_are_checked_where_they_are_written(tmp_path):
    config = "root:\n  overrides:\n    synonyms:\n      pick_ticket: [\"grab {n}{m}\"]\n"
    ws = write(tmp_path, {".kitsoki.yaml": config})
    with pytest.raises(WorkspaceError) as caught:
        load_workspace(ws)
    [issue] = caught.value.issues
    assert "adjacent captures" in issue.message and (issue.line, issue.column) == (4, 21)


def test_an_include_that_leaves_the_story_folder_is_refused(tmp_path):
    ws = write(tmp_path, {".kitsoki.yaml": "", "stories/t/app.yaml": APP.replace("rooms/*.yaml", "../x/*.yaml"),
                          "stories/t/rooms/main.yaml": ROOM})
    with pytest.raises(WorkspaceError, match="leaves the story folder"):
        load_workspace(ws)


def test_materialized_roots_load_and_open_world_stories_are_not_second_guessed(tmp_path):
    materialized = "app: { id: m }\nimports:\n  core: { source: ../../../stories/dev-story, entry: landing }\nroot: core\n"
    ws = write(tmp_path, {".kitsoki.yaml": "story_dirs: [./stories]\n",
                          ".kitsoki/stories/m/app.yaml": materialized})
    model = load_workspace(ws)
    [story] = model.stories
    assert story.materialized and story.open_world and story.root == "core"


def test_dev_story_intents_and_overrides_are_in_the_inventory(tmp_path):
    config = ("root:\n  import: dev-story\n  overrides:\n    bindings:\n      ticket: host.gh.ticket\n"
              "    world:\n      test_cmd: make test\n    synonyms:\n      go_bugfix: [\"squash a bug\"]\n")
    inventory = build_inventory(write(tmp_path, {".kitsoki.yaml": config}))
    assert inventory.binding("ticket").handler == "host.gh.ticket" and inventory.binding("ticket").at.line == 5
    assert inventory.binding("vcs").source == "default"
    assert inventory.world_value("test_cmd").value == "make test"
    override = next(r for r in inventory.intents if r.source == "override")
    assert (override.story, override.name, override.phrases[0].at.line) == (ROOT_INSTANCE, "go_bugfix", 9)
    assert any(r.name == "pick_ticket" and r.source == "dev-story" for r in inventory.intents)
