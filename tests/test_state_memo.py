"""The per-state memos of a load (core/kitsoki/statememo.py: folded imports, check verdicts) never change
what a load reports.

Every story of ../shared/kitsoki-workspace is loaded with the memos on, warmed by the loads before it the way
a propose warms them (the live tree, then one draft after another), and again with every memo off in a clean
cache (a full re-fold and re-check). The two must agree exactly: the same issues, byte for byte and in the same
order, and the same folded definitions down to every file:line:col. The drafts are the proposer's kind (a new
intent with its room) and drafts that must fail: an intent declared twice, a transition to a state that does
not exist, a name that clashes in an importer once folded, an `@exit:` the importers do not map, a world key
taken away that other states' expressions name, a room whose agent is not declared, an
agent that an unchanged room names, renamed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.kitsoki import loader, statememo, yamledit
from core.kitsoki.config import load_config
from core.kitsoki.loader import LoadSession
from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.workspace import clear_caches, story_app_files, workspace_sources

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "kitsoki-workspace"


def dump(value):
    """Everything a located tree holds: kinds, locations, key marks, items, in order."""
    if isinstance(value, LMap):
        return ("M", value.file, value.line, value.column, value.kline, value.kcol, list(value.marks.items()),
                [(key, dump(item)) for key, item in value.items()])
    if isinstance(value, LSeq):
        return ("S", value.file, value.line, value.column, value.kline, value.kcol, list(value.marks),
                [dump(item) for item in value])
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return (type(value).__name__, repr(value))
    return (type(value).__name__, value)


def load_all(root: Path, overlay: dict[str, bytes]) -> dict[str, tuple]:
    """Each story's issues and definition, loaded through the whole pipeline (no verdict memo on disk)."""
    overlay = {str(root / rel): data for rel, data in overlay.items()}
    config = load_config(root, overlay=overlay)
    session = LoadSession(sources=workspace_sources(root, config), overlay=overlay, story_root=root)
    out = {}
    for app, _ in story_app_files(root, config, session.overlay):
        loaded = session.load(app)
        out[str(app.relative_to(root))] = ([issue.model_dump_json() for issue in loaded.issues],
                                           dump(loaded.definition))
    return out


def full_recheck(root: Path, overlay: dict[str, bytes]) -> dict[str, tuple]:
    with statememo.disabled():
        with loader._CHILDREN_LOCK:
            loader._CHILDREN.clear()  # children folded with the memos on are not reused either
        return load_all(root, overlay)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    if not SHARED.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    root = tmp_path_factory.mktemp("memo") / "ws"
    shutil.copytree(SHARED, root, symlinks=True, ignore=shutil.ignore_patterns(".artifacts", ".git"))
    return root


def _text(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


APP, IDLE, BENCH = "stories/bugfix/app.yaml", "stories/bugfix/rooms/idle.yaml", "stories/bench-bugfix/app.yaml"


def drafts(root: Path) -> list[tuple[str, dict[str, str], bool]]:
    """(name, overlay, whether some story that loads now must be refused with it)."""
    app, idle = _text(root, APP), _text(root, IDLE)
    room = {"description": "Mined: prune the sbom", "on_enter": [{"invoke": "host.agent.task", "with": {
        "agent": "prune_sbom_agent", "acceptance": {"schema": "schemas/prune_sbom.json"}}}]}

    def new_intent(name: str, room_name: str, arm: dict, agent: bool = True) -> dict[str, str]:
        with_intent = yamledit.add_entry(app, ["intents"], name, {"description": f"Mined: {name}",
                                                                  "examples": [name.replace("_", " ")]})
        with_agent = yamledit.add_entry(with_intent, ["agents"], "prune_sbom_agent",
                                        {"system_prompt": "You prune the sbom.", "tools": ["Read", "Edit"]}) \
            if agent else with_intent
        rooms = yamledit.add_entry(idle, ["states"], room_name, room)
        rooms = yamledit.add_entry(rooms, ["states", "idle", "on"], name, [arm])
        return {APP: with_agent, IDLE: rooms}

    good = new_intent("prune_sbom", "prune_sbom_room", {"target": "prune_sbom_room"})
    other = new_intent("audit_docs", "audit_docs_room", {"target": "audit_docs_room"})
    cycle_line = next(line for line in app.splitlines(keepends=True) if line.startswith("  cycle:"))
    return [
        ("a new intent and its room", good, False),
        ("another new intent", other, False),
        ("an intent declared twice", {APP: yamledit.add_entry(app, ["intents"], "dup_intent", {"examples": ["x y"]}),
                                      IDLE: yamledit.add_entry(idle, ["intents"], "dup_intent",
                                                               {"examples": ["x y"]})}, True),
        ("a transition to a missing state", new_intent("prune_sbom", "prune_sbom_room", {"target": "nowhere_room"}),
         True),
        ("a clash in an importer", {**good, BENCH: yamledit.add_entry(_text(root, BENCH), ["intents"], "bf__prune_sbom",
                                                                       {"examples": ["prune it"]})}, True),
        ("an exit the importers do not map", new_intent("prune_sbom", "prune_sbom_room", {"target": "@exit:nowhere"}),
         True),
        ("a room whose agent is not declared", new_intent("prune_sbom", "prune_sbom_room",
                                                           {"target": "prune_sbom_room"}, agent=False), True),
        ("an agent an unchanged room names, renamed", {APP: app.replace("\n  implementer:\n", "\n  implementer_2:\n")},
         True),
        ("a world key other states name, taken away", {APP: app.replace(cycle_line, "")}, True),
        ("the first draft again", good, False),
        ("nothing", {}, False),
    ]


def test_memoized_loads_equal_full_rechecks(workspace):
    clear_caches()
    live = load_all(workspace, {})
    assert live == full_recheck(workspace, {})
    assert any(definition[0] == "M" for _, definition in live.values())
    refused_live = {app for app, (issues, _) in live.items() if issues}
    for name, files, breaks in drafts(workspace):
        overlay = {rel: text.encode() for rel, text in files.items()}
        memoized = load_all(workspace, overlay)
        full = full_recheck(workspace, overlay)
        for app in sorted(set(memoized) | set(full)):
            assert memoized.get(app) == full.get(app), f"{name}: {app} differs with the memos on"
        refused = {app for app, (issues, _) in memoized.items() if issues}
        assert bool(refused - refused_live) == breaks, (name, sorted(refused - refused_live))
        memoized_again = load_all(workspace, overlay)  # every memo warm: still the same
        assert memoized_again == full, name


def test_memos_are_used(workspace):
    """The memos do work: a second draft's load folds from remembered states."""
    from core.kitsoki import imports

    clear_caches()
    load_all(workspace, {})
    remembered = len(imports._FOLDS)
    assert remembered > 100
    good = drafts(workspace)[0][1]
    load_all(workspace, {rel: text.encode() for rel, text in good.items()})
    assert len(imports._FOLDS) < remembered * 1.5  # only what changed was folded anew


def _importer_wrappers(root: Path, overlay: dict[str, str]) -> dict[str, LMap]:
    """dev-story's import wrappers (one state per imported child) as its folded definition holds them."""
    overlay = {str(root / rel): text.encode() for rel, text in overlay.items()}
    config = load_config(root, overlay=overlay)
    session = LoadSession(sources=workspace_sources(root, config), overlay=overlay, story_root=root)
    loaded = session.load_child(str(root / "stories" / "dev-story" / "app.yaml"), [])  # folded, as an importer reads it
    assert not loaded.issues and loaded.definition is not None
    states = loaded.definition["states"]
    return {name: state for name, state in states.items() if isinstance(state, LMap) and "__import__" in state}


def test_an_unchanged_import_folds_to_the_same_wrapper_state(workspace):
    """The wrapper state a fold makes for an import is the one the fold before made when the child's folded
    states are the very same (so the memos of the importer's importer find it); a changed child gets a new one."""
    clear_caches()
    live = _importer_wrappers(workspace, {})
    assert {"bf", "impl"} <= set(live)
    first, second = drafts(workspace)[0][1], drafts(workspace)[1][1]
    one, two = _importer_wrappers(workspace, first), _importer_wrappers(workspace, second)
    for name in live:
        if name == "bf":  # bugfix, which both drafts change: a wrapper of its own each time, holding the new room
            assert live[name] is not one[name] and one[name] is not two[name]
            assert "prune_sbom_room" in one[name]["states"] and "audit_docs_room" in two[name]["states"]
            assert "prune_sbom_room" not in live[name]["states"]
        else:
            assert live[name] is one[name] is two[name], name
    with statememo.disabled():  # with the memos off, every fold makes its own
        with loader._CHILDREN_LOCK:
            loader._CHILDREN.clear()
        off = _importer_wrappers(workspace, first)
    assert all(off[name] is not one[name] for name in off)
    assert dump(off["impl"]) == dump(one["impl"]) and dump(off["bf"]) == dump(one["bf"])
