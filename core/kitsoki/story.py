"""Reading a kitsoki workspace: the public face of the loader.

`load_workspace` reads `.kitsoki.yaml` and every story as kitsoki does (core.kitsoki.workspace:
discovery, the root instance; core.kitsoki.loader: includes, imports, phases, interfaces, exits,
checks). `load_story` reads one app on its own. The story model lives in core.kitsoki.model; the
names of it that callers use stay importable from here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.kitsoki.checks import resolve_target as _kitsoki_target
from core.kitsoki.imports import Sources
from core.kitsoki.loader import LoadSession
from core.kitsoki.model import (  # noqa: F401  (the model's names callers use stay importable from here)
    EXIT_PREFIX,
    MATERIALIZED_DIR,
    STORY_LIMITS,
    SYNTH_EXIT_PREFIX,
    Intent,
    Story,
    Where,
    WorkspaceError,
    WorldVar,
    Workspace,
)
from core.kitsoki.workspace import load_story_at, load_workspace  # noqa: F401  (the public face)


def load_story(app_yaml: Path, workspace: Path | None = None, *, overlay: dict[str, bytes] | None = None,
               env: dict[str, str] | None = None) -> Story:
    """One story on its own (its includes and imports resolved against its folder)."""
    app = Path(os.path.abspath(app_yaml))
    session = LoadSession(sources=Sources.from_env(env), overlay=overlay, story_root=workspace or app.parent)
    entry = load_story_at(session, app, MATERIALIZED_DIR in app.as_posix(), {})
    if entry.issues or entry.story is None:
        raise WorkspaceError(entry.issues)
    return entry.story


def resolve_target(story: Story, state: str, target: str) -> str | None:
    """The state a transition's target names, or None when it does not exist.

    As kitsoki resolves it: `.` (or no target) is the state itself; a target starting with `..`
    walks up from the state (`../x` is a sibling); anything else is an absolute dotted path (`/`
    reads as `.`); `@exit:<name>` is `__exit__<name>`. A state that is a compound is returned as
    named: `initial_leaf` descends to the state kitsoki lands in."""
    if not target or target == ".":
        return state if state in story.states else None
    if target.startswith(EXIT_PREFIX):
        name = f"{SYNTH_EXIT_PREFIX}{target[len(EXIT_PREFIX):]}"
        return name if name in story.states else None
    resolved = _kitsoki_target(state, target)
    return resolved if resolved in story.states else None


def initial_leaf(story: Story, path: str, render: Any = None) -> str:
    """Where entering `path` lands: a compound with `initial:` descends (recursively) to that
    child. `render(template) -> str` evaluates a templated `initial:`; without one a template
    stops the descent."""
    while True:
        state = story.states.get(path)
        if state is None or state.type != "compound" or not state.initial:
            return path
        initial = state.initial
        if "{{" in initial or "{%" in initial:
            if render is None:
                return path
            initial = str(render(initial)).strip()
        path = f"{path}.{initial}"


def relative(workspace: Path, path: Path | str) -> str:
    """A workspace-relative POSIX path for display and staging."""
    try:
        return Path(os.path.normpath(Path(path).absolute())).relative_to(
            Path(os.path.normpath(workspace.absolute()))).as_posix()
    except ValueError:
        return str(path)
