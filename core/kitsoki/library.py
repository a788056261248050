"""The story library we carry: kitsoki's own base stories, summarised, for `@kitsoki/<name>`.

kitsoki resolves `@kitsoki/dev-story` through KITSOKI_REPO, then a kitsoki checkout above the
importer, then the story library embedded in its binary. Without a checkout we use this library:
for each story, what an importer and the inventory need of it once it is loaded and its own
imports folded (kitsoki at the commit recorded in the file): its intents with their examples,
synonyms and slots (dev-story's 102 plus the 192 it lifts), its world schema, exits, exported
intents, host interfaces, hosts, root, and the skeleton of its states (names, compound/parallel
types, initial children, terminal flags; not their bodies). A story folded from the library is
marked `from_library`: its states' transitions are not known here, so flows that walk into it
need a kitsoki checkout (KITSOKI_REPO).

Regenerate from a checkout with `python -m core.kitsoki.snapshot <kitsoki-checkout> [name ...]`;
tests/test_story.py keeps dev-story's summary equal to what our loader reads from the kitsoki
stories in ../shared/kitsoki-workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from core.kitsoki.parse import LMap, LSeq, signature
from core.kitsoki.tree import Loaded

LIBRARY_DIR = Path(__file__).with_name("library_data")
KITSOKI_COMMIT = "1f4abf0e4e4aafea75ea4d09256135de2c406aad"
_KEPT = ("app", "root", "intents", "world", "exits", "exports", "host_interfaces", "hosts", "checkpoint_intents")
_STATE_KEPT = ("type", "initial", "terminal", "description")


def library_path(name: str) -> Path:
    return LIBRARY_DIR / f"{name}.json"


def _located(value: Any, file: str) -> Any:
    if isinstance(value, dict):
        return LMap({key: _located(item, file) for key, item in value.items()}, file=file, line=1, column=1)
    if isinstance(value, list):
        out = LSeq((_located(item, file) for item in value), file=file, line=1, column=1)
        out.marks = [(1, 1)] * len(out)
        return out
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items() if not str(key).startswith("__")}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _skeleton(states: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, state in (states or {}).items():
        if not isinstance(state, dict):
            continue
        kept = {key: _plain(state[key]) for key in _STATE_KEPT if key in state and state[key] not in (None, "")}
        if isinstance(state.get("states"), dict) and state["states"]:
            kept["states"] = _skeleton(state["states"])
        out[name] = kept
    return out


def summarise(definition: LMap, *, name: str, source: str) -> dict[str, Any]:
    """The library entry of a loaded story definition (after its imports and phases)."""
    entry: dict[str, Any] = {"library": {"name": name, "kitsoki_commit": KITSOKI_COMMIT, "source": source}}
    for key in _KEPT:
        if key in definition and definition[key] is not None:
            entry[key] = _plain(definition[key])
    entry["states"] = _skeleton(definition.get("states"))
    return entry


def library_child(path: Path) -> Any:
    """A `Loaded` child from a library summary file (what the importer folds)."""
    file = str(path)
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        from core.kitsoki.yamlread import ConfigIssue

        return Loaded(path, None, [ConfigIssue(file=file, line=1, column=1,
                                               message=f"the story library entry cannot be read: {exc}")], [file])
    definition = _located({key: value for key, value in data.items() if key != "library"}, file)
    definition["__library__"] = data.get("library", {})
    return Loaded(path, definition, [], [file], {}, [], {file: signature(file)})


def describe(name: str = "dev-story") -> dict[str, Any]:
    """What the carried entry says about itself: name, kitsoki commit, where it was read from."""
    try:
        return dict(orjson.loads(library_path(name).read_bytes()).get("library", {}))
    except (OSError, orjson.JSONDecodeError):
        return {}
