"""The located AppDef tree a load produces, and the copy-on-write walks over it.

`Loaded` is one app through the loader's pipeline (core.kitsoki.loader); `map_states` /
`map_effects` rebuild a states tree where a function changes some states or effects, leaving the
parsed trees (shared through the parse cache) untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.kitsoki.parse import LMap, LSeq, Signature
from core.kitsoki.yamlread import ConfigIssue

FALLBACK_KEY = "__fallback__"
"""Marks an arm kitsoki's free-form fallback injected (the inventory does not count it as a gate)."""


@dataclass
class Wrapper:
    alias: str
    entry: str
    source: Path
    origin: str
    """How the source resolved: path, kitsoki-repo, checkout or library."""


@dataclass
class Loaded:
    """One app through the pipeline: its AppDef as plain located data (never mutated afterwards)."""

    path: Path
    definition: LMap | None
    issues: list[ConfigIssue] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """Every file read, in order: the app.yaml, its includes, then each import's files."""
    wrappers: dict[str, Wrapper] = field(default_factory=dict)
    """Import alias -> what it folded (direct imports only)."""
    imports: list[str] = field(default_factory=list)
    """Canonical app.yaml paths imported, directly or transitively."""
    signatures: dict[str, Signature | None] = field(default_factory=dict)
    own_files: list[str] = field(default_factory=list)
    """The app's own files: its app.yaml and included room files."""
    probes: dict[str, Any] | None = None
    """What its load looked at besides those files (core.kitsoki.probed): checked before it is reused."""
    asked: list[tuple] = field(default_factory=list)
    """What the load asked the filesystem and environment besides reading `files` (an include's glob
    and what it matched, an import's source and where it resolved, the agent checks' probes), so a
    memo of the load (core.kitsoki.loadcache) can ask again and trust it only if each answers the same."""


def map_states(states: LMap, fn: Any, prefix: str = "") -> LMap:
    """A copy of `states` where fn(path, state) -> state replaced each state (children first)."""
    out = states.like()
    for name, state in states.items():
        path = f"{prefix}.{name}" if prefix else name
        if isinstance(state, LMap) and isinstance(state.get("states"), LMap):
            children = map_states(state["states"], fn, path)
            state = state.like(state)
            state["states"] = children
        out[name] = fn(path, state) if isinstance(state, LMap) else state
    return out


def map_effects(effects: Any, fn: Any) -> Any:
    if not isinstance(effects, LSeq):
        return effects
    out = effects.like()
    for effect in effects:
        if isinstance(effect, LMap):
            effect = fn(effect)
            if isinstance(effect.get("on_complete"), LSeq):
                effect = effect.like(effect)
                effect["on_complete"] = map_effects(effect["on_complete"], fn)
        out.append(effect)
    return out
