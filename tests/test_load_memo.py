"""The load memo (core/kitsoki/loadcache.py): a new process knows each unchanged story from
`.artifacts/cache/loaded.json` without parsing it, and gets the same workspace; anything the load could
see (a file's bytes, even at the same size, mtime and inode; a new file an `include:` matches) or a memo
that is not ours (edited, or copied from another workspace) makes it load the story again, with the
right result. On kitsoki's own stories (a copy of ../shared/kitsoki-workspace)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from core.kitsoki import loadcache
from core.kitsoki.build import plain
from core.kitsoki.loadcache import LOADED_FILE
from core.kitsoki.parse import PARSE_CACHE, LMap, LSeq
from core.kitsoki.workspace import clear_caches, load_workspace

KITSOKI_WS = Path(__file__).resolve().parent.parent.parent / "shared" / "kitsoki-workspace"
ROOMS = Path("stories") / "bugfix" / "rooms"
KEEP = {"bugfix", "delivery-tail", "conflict-resolve", "robbery", "oregon-trail"}


def _age(root: Path, seconds: float = 60.0) -> None:
    """Files written a minute ago: older than the racy window, as a real checkout's are."""
    then = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        if ".artifacts" not in path.parts:
            os.utime(path, (then, then), follow_symlinks=False)


@pytest.fixture
def ws(tmp_path, monkeypatch):
    if not KITSOKI_WS.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    out = tmp_path / "kitsoki"

    def ignore(folder, names):  # bugfix, what it imports, and two stories beside them: a few seconds a load
        if Path(folder) == KITSOKI_WS / "stories":
            return [name for name in names if name not in KEEP]
        return [name for name in names if name in (".artifacts", ".git")]

    shutil.copytree(KITSOKI_WS, out, ignore=ignore)
    (out / ".artifacts").mkdir()
    monkeypatch.delenv("KITSOKI_REPO", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # @kitsoki/ imports from the library we carry
    _age(out)
    return out


def _located(value):
    if isinstance(value, LMap):
        return ["M", value.file, value.line, value.column, value.kline, value.kcol, sorted(value.marks.items()),
                [(k, _located(v)) for k, v in value.items()]]
    if isinstance(value, LSeq):
        return ["S", value.file, value.line, value.column, value.kline, value.kcol, value.marks,
                [_located(v) for v in value]]
    return repr(value)


def _fresh(ws: Path) -> tuple[str, loadcache.LoadMemo]:
    """A new process's load, everything it gives (every story whole: definitions with every location,
    world, intents, states; the refusals and warnings), as a digest; and the memo it used."""
    clear_caches()
    model = load_workspace(ws)
    memo = loadcache.memo_for(ws)
    out = []
    for story in model.stories:
        definition = story.definition
        intents = [intent.model_dump(mode="json") for intent in story.all_intents()]
        out.append([story.model_dump(mode="json"), _located(definition), intents, plain(definition)])
    out.append([refusal.model_dump(mode="json") for refusal in model.refused])
    out.append([issue.model_dump(mode="json") for issue in model.warnings])
    return hashlib.sha256(json.dumps(out, sort_keys=True, default=str).encode()).hexdigest(), memo


def _truth(ws: Path) -> str:
    """The same load without any memo."""
    memo_file = ws / LOADED_FILE
    kept = memo_file.read_bytes() if memo_file.exists() else None
    memo_file.unlink(missing_ok=True)
    digest, memo = _fresh(ws)
    assert memo.hits == 0
    if kept is not None:
        memo_file.write_bytes(kept)
    else:
        memo_file.unlink(missing_ok=True)
    return digest


def test_a_new_process_knows_unchanged_stories_from_the_memo_and_loads_the_same(ws):
    first, memo = _fresh(ws)
    assert (ws / LOADED_FILE).is_file() and memo.hits == 0
    stories = memo.misses
    kept = (ws / LOADED_FILE).read_bytes()
    (ws / LOADED_FILE).unlink()
    clear_caches()
    looked = load_workspace(ws)._probes.frozen()  # what the load looked at, every story loaded in full
    (ws / LOADED_FILE).write_bytes(kept)
    clear_caches()
    parses = PARSE_CACHE.parses
    model = load_workspace(ws)
    # the same record from the memo: the proposer's memo, keyed on it, misses nothing
    assert model._probes.frozen() == looked and looked["paths"]
    memo = loadcache.memo_for(ws)
    assert memo.hits == stories and memo.misses == 0
    assert PARSE_CACHE.parses - parses <= 2  # .kitsoki.yaml; no story was parsed
    assert all(story.__pydantic_private__.get("_realize") is not None for story in model.stories)
    again, _ = _fresh(ws)  # every story made whole (read in full) from the memo gives the same
    assert again == first


def test_an_edit_at_the_same_size_mtime_and_inode_is_seen_by_content(ws):
    _fresh(ws)
    room = ws / ROOMS / "done.yaml"
    info = room.stat()
    data = room.read_bytes()
    changed = data.replace(b'text:     "DONE"', b'text:     "DUNE"')
    assert changed != data and len(changed) == len(data)
    with open(room, "r+b") as handle:  # in place: the same inode
        handle.write(changed)
    os.utime(room, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert (room.stat().st_size, room.stat().st_mtime_ns, room.stat().st_ino) == \
        (info.st_size, info.st_mtime_ns, info.st_ino)
    digest, memo = _fresh(ws)
    assert memo.misses >= 1  # bugfix (and what imports it) loaded again
    assert digest == _truth(ws)
    model = load_workspace(ws)
    assert "DUNE" in json.dumps(plain(model.story("bugfix").definition))


def test_a_new_file_an_include_matches_is_seen(ws):
    before, _ = _fresh(ws)
    model = load_workspace(ws)
    assert model.story("bugfix") is not None
    # a second declaration of the `done` state, in a new room file `include: rooms/*.yaml` matches
    shutil.copy(ws / ROOMS / "done.yaml", ws / ROOMS / "zz-done-again.yaml")
    _age(ws)
    digest, memo = _fresh(ws)
    model = load_workspace(ws)
    assert model.story("bugfix") is None
    assert any('state "done" is already declared' in issue.message
               for refusal in model.refused for issue in refusal.issues)
    assert digest == _truth(ws) and digest != before
    (ws / ROOMS / "zz-done-again.yaml").unlink()
    assert _fresh(ws)[0] == before


def test_a_refused_story_is_refused_from_the_memo_with_the_same_reasons(ws):
    app = ws / "stories" / "bugfix" / "app.yaml"
    app.write_bytes(app.read_bytes().replace(b"include:\n  - rooms/*.yaml", b"include:\n  - rooms/nothing-*.yaml"))
    _age(ws)
    first, memo = _fresh(ws)
    assert load_workspace(ws).refusal(app) is not None
    again, memo = _fresh(ws)
    assert memo.misses == 0 and again == first == _truth(ws)


@pytest.mark.parametrize("how", ["edited", "unsigned", "other-workspace"])
def test_a_memo_that_is_not_ours_is_never_used(ws, tmp_path, how):
    truth, _ = _fresh(ws)
    path = ws / LOADED_FILE
    data = path.read_bytes()
    if how == "edited":  # a planted outline: bugfix's title changed, the signature kept
        planted = data.replace(b'"slug": "bugfix"', b'"slug": "bugfux"')
        assert planted != data
        path.write_bytes(planted)
    elif how == "unsigned":
        body = json.loads(data)
        body.pop("mac")
        path.write_bytes(json.dumps(body).encode())
    else:  # a genuine memo of another workspace (a copy of this one)
        other = tmp_path / "other"
        shutil.copytree(ws, other, ignore=shutil.ignore_patterns(".artifacts"))
        (other / ".artifacts").mkdir()
        _age(other)
        _fresh(other)
        path.write_bytes((other / LOADED_FILE).read_bytes())
    digest, memo = _fresh(ws)
    assert memo.hits == 0 and digest == truth
    model = load_workspace(ws)
    assert model.story("bugfix") is not None and model.story("bugfux") is None


def _root_whole(model) -> str:
    """Everything of the root instance (read in full), as a digest."""
    root = model.root_instance
    assert root is not None
    definition = root.definition  # read first: one known by its outline is made whole here
    out = [root.model_dump(mode="json"), _located(definition), plain(definition),
           [intent.model_dump(mode="json") for intent in root.all_intents()],
           {name: var.model_dump(mode="json") for name, var in root.world.items()}, sorted(root.states)]
    return hashlib.sha256(json.dumps(out, sort_keys=True, default=str).encode()).hexdigest()


def test_the_root_instance_is_known_from_the_memo_under_what_root_says(ws):
    """The synthesized root (dev-story with `root.overrides`) is in the memo under what `root:` says:
    a new process knows it without folding dev-story again and reads it whole the same; another
    `root:` (a world value changed) is loaded anew; a staged `.kitsoki.yaml` (an overlay, as the
    proposer validates a draft) leaves the entry that the same bytes, once written, are known by."""
    config = ws / ".kitsoki.yaml"
    base = config.read_bytes()
    config.write_bytes(base + b"\nroot:\n  overrides:\n    world:\n      base_branch: main\n")
    _age(ws)
    clear_caches()
    truth = _root_whole(load_workspace(ws))
    clear_caches()
    model = load_workspace(ws)
    assert model.root_instance.__pydantic_private__.get("_realize") is not None  # from the memo, an outline
    assert _root_whole(model) == truth

    staged = base + b"\nroot:\n  overrides:\n    world:\n      base_branch: trunk\n"
    clear_caches()
    load_workspace(ws, overlay={str(config): staged})  # the proposer's staged load
    config.write_bytes(staged)  # the accept writes it
    clear_caches()
    model = load_workspace(ws)
    assert model.root_instance.__pydantic_private__.get("_realize") is not None
    whole = _root_whole(model)
    assert model.root_instance.world["base_branch"].default == "trunk"
    (ws / LOADED_FILE).unlink()
    clear_caches()
    assert _root_whole(load_workspace(ws)) == whole != truth  # the same as a load without any memo

    config.write_bytes(base + b"\nroot:\n  overrides:\n    world:\n      base_branch: release\n")
    clear_caches()
    model = load_workspace(ws)
    assert model.root_instance.__pydantic_private__.get("_realize") is None  # not known: loaded
    assert model.root_instance.world["base_branch"].default == "release"
