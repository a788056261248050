"""What is read from a story's definition without building its states (issue 26: a cold propose and a flow run
no longer build every state's arms and effects) is what the built states say, on kitsoki's real stories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.flows.app import _build, app_model
from core.kitsoki.build import state_lines, unbuilt_definition
from core.kitsoki.inventory import _intent_rows_of, _story_rows_of
from core.kitsoki.story import load_workspace

KITSOKI_WS = Path(__file__).resolve().parents[2] / "shared" / "kitsoki-workspace"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    if not KITSOKI_WS.is_dir():
        pytest.fail(f"{KITSOKI_WS} is missing (CI always has ../shared)")
    into = tmp_path_factory.mktemp("ws") / "kitsoki-workspace"
    shutil.copytree(KITSOKI_WS, into, ignore=shutil.ignore_patterns(".git", ".artifacts"))
    return into


def _dump(rows) -> list:
    return [[row.model_dump() for row in part] for part in rows]


def test_rows_places_intents_and_aliases_read_unbuilt_are_the_built_states(workspace):
    model = load_workspace(workspace, env={})
    assert len(model.stories) > 30
    gates = calls = aliases = local = 0
    for story in model.stories:
        assert unbuilt_definition(story) is not None, story.slug  # nothing built its states on the way here
        rows = _story_rows_of(story, story.slug)
        places = state_lines(story)
        intents = _dump([_intent_rows_of(story, story.slug)])
        adapter = app_model(story)
        got_aliases = {path: state.intent_aliases for path, state in adapter.states.items()}
        world = {name: var.model_dump() for name, var in story.world.items()}  # one field: states stay unbuilt
        paths = [path for path, _, _ in places]
        lookups = {path: story.local_intents(path) for path in paths}
        assert unbuilt_definition(story) is not None, story.slug

        states = story.states  # now built
        assert unbuilt_definition(story) is None
        assert _dump(rows) == _dump(_story_rows_of(story, story.slug)), story.slug
        assert places == [(path, str(s.at.file), s.at.line) for path, s in states.items()], story.slug
        assert intents == _dump([_intent_rows_of(story, story.slug)]), story.slug
        assert world == {name: var.model_dump() for name, var in story.world.items()}
        for path, found in lookups.items():
            assert {k: v.model_dump() for k, v in found.items()} == \
                {k: v.model_dump() for k, v in states[path].intents.items()}, (story.slug, path)
            local += len(found)
        rebuilt = _build(story)  # the runner's adapter as it reads a story whose states are built
        assert got_aliases == {path: state.intent_aliases for path, state in rebuilt.states.items()}, story.slug
        aliases += sum(bool(found) for found in got_aliases.values())
        gates, calls = gates + len(rows[2]), calls + len(rows[1])
    assert gates > 100 and calls > 50 and local > 0 and aliases > 0  # the comparison covered real cases
