"""The structural checks a change no flow exercises is kept after, under `miner.ungated: allow`.

They prove the change loads and names real things, not that it behaves: the tree after the edit
loads (every story, as kitsoki's loader would); for `.kitsoki.yaml`, the synthesized root loads,
every binding names a handler kitsoki has (the synthesized root's host allow-list, or a provider
kitsoki ships for that interface: reference/dev-story-facts.md), and every world value has the type
dev-story declares for its key; for a story file, the stories that read it load.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.kitsoki.config import CONFIG_FILE, DEV_STORY_WORLD_KEYS
from core.kitsoki.model import Workspace
from core.kitsoki.workspace import ROOT_HOSTS

OTHER_PROVIDERS = {"transport": ("host.transport.post",)}
"""Providers kitsoki ships beyond the root's allow-list (dev-story-facts: "other providers seen")."""


def _has_type(value: Any, declared: str) -> bool:
    if declared == "string":
        return isinstance(value, str)
    if declared == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if declared == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if declared == "bool":
        return isinstance(value, bool)
    if declared == "object":
        return isinstance(value, dict)
    if declared == "list":
        return isinstance(value, list)
    return True  # a type we do not know: kitsoki's own validators judge it


def _type_name(value: Any) -> str:
    return {str: "string", bool: "bool", int: "int", float: "float", dict: "object", list: "list"}.get(
        type(value), type(value).__name__)


def structural_checks(model: Workspace, changed: list[str]) -> tuple[list[str], list[str]]:
    """(checks passed, problems) for the tree after the edit, `model`."""
    passed = [f"the tree after the edit loads ({len(model.stories)} stories)"]
    problems: list[str] = []
    workspace = Path(model.path)
    if CONFIG_FILE in changed:
        if model.root_instance is None:
            why = getattr(model.dev_story, "message", "") or "dev-story cannot be resolved"
            problems.append(f"the synthesized root does not load: {why}")
        else:
            passed.append("the synthesized root loads")
        overrides = model.config.root.overrides if model.config.root is not None else None
        for iface, handler in sorted((overrides.bindings if overrides else {}).items()):
            known = set(ROOT_HOSTS) | set(OTHER_PROVIDERS.get(iface, ()))
            if handler in known:
                passed.append(f"binding {iface} names {handler}, a handler kitsoki has")
            else:
                problems.append(f"root.overrides.bindings.{iface}: {handler!r} names no handler kitsoki has "
                                f"for the synthesized root (one of {', '.join(sorted(known))})")
        for key, value in sorted((overrides.world if overrides else {}).items()):
            declared = DEV_STORY_WORLD_KEYS.get(key)
            if declared is None:
                problems.append(f"root.overrides.world.{key}: dev-story declares no such key")
            elif _has_type(value, declared):
                passed.append(f"world.{key} is a {declared}, as dev-story declares")
            else:
                problems.append(f"root.overrides.world.{key}: {value!r} is a {_type_name(value)}; dev-story "
                                f"declares {key} as {declared}")
    real = {os.path.realpath(workspace / rel) for rel in changed if rel != CONFIG_FILE}
    for story in model.stories:
        if real & {os.path.realpath(f) for f in (*story.files, *story.import_files)}:
            passed.append(f"{os.path.relpath(story.path, workspace)} loads")
    return passed, problems
