"""A draft is validated by overlaying its files on the already-loaded live tree (core/proposals/validate.py):
only the stories that read a drafted file (the file's own story and every story importing it, transitively)
load again; every other story, its parse, checks and inventory rows are the live tree's.

These tests hold that overlay to a full reload: the draft's files written into a copy of the workspace and
the copy loaded cold, in a clean cache. Both must refuse the same stories for the same reasons (kitsoki's
load-time checks all ran on what changed, in the stories that import it too), load the same stories, and
list the same intents; and a draft is refused exactly when the full reload refuses a story the live tree
loads.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from core.kitsoki import yamledit
from core.kitsoki.inventory import build_inventory
from core.kitsoki.story import load_workspace, relative
from core.kitsoki.workspace import clear_caches
from core.proposals.validate import DraftInvalid, staged_load

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "kitsoki-workspace"
STORIES = ["bugfix", "delivery-tail", "conflict-resolve", "bench-bugfix", "slidey-bugfix", "robbery"]
"""bugfix imports delivery-tail, which imports conflict-resolve; bench-bugfix and slidey-bugfix import bugfix;
robbery stands alone."""


@pytest.fixture
def live(tmp_path):
    if not SHARED.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    root = tmp_path / "live"
    for name in STORIES:
        shutil.copytree(SHARED / "stories" / name, root / "stories" / name, symlinks=True)
    (root / ".kitsoki.yaml").write_text("story_dirs:\n  - ./stories\n")
    clear_caches()
    model = load_workspace(root)
    assert sorted(s.slug for s in model.stories) == sorted(STORIES) and not model.refused
    yield model
    clear_caches()


def _read(model, rel: str) -> str:
    return (model.path / rel).read_text(encoding="utf-8")


def _drafts(model) -> dict[str, dict[str, bytes]]:
    app, idle = "stories/bugfix/app.yaml", "stories/bugfix/rooms/idle.yaml"
    room = {"description": "mined", "on": {"prune_sbom": [{"target": "idle"}]}}
    good_app = yamledit.add_entry(_read(model, app), ["intents"], "prune_sbom",
                                  {"description": "Prune the sbom", "examples": ["prune the sbom"]})
    good_idle = yamledit.add_entry(_read(model, idle), ["states"], "prune_sbom_room", room)
    good_idle = yamledit.add_entry(good_idle, ["states", "idle", "on"], "prune_sbom", [{"target": "prune_sbom_room"}])
    renamed_root = _read(model, idle).replace("\n  idle:\n", "\n  waiting:\n", 1)
    assert renamed_root != _read(model, idle)
    return {
        "a new intent and room": {app: good_app.encode(), idle: good_idle.encode()},
        "an arm to a state that does not exist": {
            idle: yamledit.add_entry(_read(model, idle), ["states", "idle", "on"], "prune_sbom",
                                     [{"target": "nowhere"}]).encode()},
        "an agent task naming no declared agent": {
            idle: yamledit.add_entry(_read(model, idle), ["states"], "lonely", {
                "on_enter": [{"invoke": "host.agent.task", "with": {"agent": "ghost", "acceptance": {
                    "schema": "schemas/ghost.json"}}}]}).encode()},
        "the root state renamed, in two files": {
            idle: renamed_root.encode(),
            app: _read(model, app).replace("\nroot: idle\n", "\nroot: waiting\n").encode()},
        "a host bugfix may use, which its importers do not declare": {
            app: yamledit.append_items(_read(model, app), ["hosts"], ["host.ide.open_file"]).encode()},
        "a room file that is not YAML": {idle: (_read(model, idle) + "\n  broken: [unclosed\n").encode()},
        "an intent declared twice across files": {
            app: yamledit.add_entry(_read(model, app), ["intents"], "dup_intent", {"examples": ["x y"]}).encode(),
            idle: yamledit.add_entry(_read(model, idle), ["intents"], "dup_intent", {"examples": ["x y"]}).encode()
            if "intents" in yaml.safe_load(_read(model, idle)) else
            yamledit.set_value(_read(model, idle), ["intents"], {"dup_intent": {"examples": ["x y"]}}).encode()},
        "a change in a story only imported (delivery-tail)": {
            "stories/delivery-tail/app.yaml": (_read(model, "stories/delivery-tail/app.yaml").replace(
                "\nroot: bootstrap\n", "\nroot: no_such_state\n")).encode()},
    }


def _refusals(model) -> list:
    root = model.path
    return sorted((relative(root, r.app), sorted((relative(root, i.file), i.line, i.column, i.key,
                                                   i.message.replace(str(root), "<ws>")) for i in r.issues))
                  for r in model.refused)


def _intents(model) -> list:
    return [(row.story, row.name, [p.text for p in row.phrases]) for row in build_inventory(model).intents]


def _full_reload(live, files: dict[str, bytes], where: Path):
    shutil.copytree(live.path, where, symlinks=True)
    for rel, data in files.items():
        (where / rel).write_bytes(data)
    clear_caches()
    try:
        return load_workspace(where)
    finally:
        clear_caches()


def test_the_overlay_refuses_and_loads_exactly_what_a_full_reload_does(live, tmp_path):
    drafts = _drafts(live)
    newly_refused = {}
    for n, (name, files) in enumerate(drafts.items()):
        full = _full_reload(live, files, tmp_path / f"full-{n}")
        model = load_workspace(live.path)  # the live tree, warm: the proposer's
        overlay = load_workspace(live.path, overlay={os.path.abspath(live.path / rel): data
                                                     for rel, data in files.items()})
        assert _refusals(overlay) == _refusals(full), name
        assert sorted(s.slug for s in overlay.stories) == sorted(s.slug for s in full.stories), name
        assert _intents(overlay) == _intents(full), name
        # untouched stories are the live tree's own objects (their parse, checks and rows reused)
        same = {s.slug for s in overlay.stories if any(s is t for t in model.stories)}
        assert "robbery" in same and "bugfix" not in same, name
        try:
            staged_load(model, files)
            refused = False
        except DraftInvalid as exc:
            refused = True
            assert "the staged tree does not load" in str(exc)
        newly_refused[name] = refused
        assert refused == bool(full.refused), name  # the live tree refuses none
    assert newly_refused == {
        "a new intent and room": False,
        "an arm to a state that does not exist": True,
        "an agent task naming no declared agent": True,
        "the root state renamed, in two files": True,
        "a host bugfix may use, which its importers do not declare": True,
        "a room file that is not YAML": True,
        "an intent declared twice across files": True,
        "a change in a story only imported (delivery-tail)": True,
    }


def test_a_story_broken_only_through_its_import_is_refused_by_the_overlay_as_by_a_full_reload(live, tmp_path):
    files = _drafts(live)["a host bugfix may use, which its importers do not declare"]
    full = _full_reload(live, files, tmp_path / "full")
    refused = {Path(r.app).parent.name for r in full.refused}
    assert "bugfix" not in refused and {"bench-bugfix", "slidey-bugfix"} <= refused
    load_workspace(live.path)
    overlay = load_workspace(live.path, overlay={os.path.abspath(live.path / rel): d for rel, d in files.items()})
    assert {Path(r.app).parent.name for r in overlay.refused} == refused
