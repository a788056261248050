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
    """`states` where fn(path, state) -> state replaced each state (children first). Copy on write:
    a state fn keeps (and whose children it keeps) stays the same object, and `states` itself is
    returned when nothing changed, so memos keyed by a state's identity (core.kitsoki.statememo)
    still find it. The result may be the input: a caller that adds to it copies it first."""
    out = None
    for index, (name, state) in enumerate(states.items()):
        new = state
        if isinstance(state, LMap):
            path = f"{prefix}.{name}" if prefix else name
            if isinstance(state.get("states"), LMap):
                children = map_states(state["states"], fn, path)
                if children is not state["states"]:
                    new = state.like(state)
                    new["states"] = children
            new = fn(path, new)
        if new is not state and out is None:
            out = states.like()
            for done, (seen, kept) in enumerate(states.items()):
                if done == index:
                    break
                out[seen] = kept
        if out is not None:
            out[name] = new
    return states if out is None else out


def map_effects(effects: Any, fn: Any) -> Any:
    """`effects` with fn(effect) -> effect applied to each effect and its on_complete chain; the same
    list when nothing changed (copy on write, as map_states)."""
    if not isinstance(effects, LSeq):
        return effects
    out = None
    for index, effect in enumerate(effects):
        new = effect
        if isinstance(effect, LMap):
            new = fn(effect)
            if isinstance(new.get("on_complete"), LSeq):
                chain = map_effects(new["on_complete"], fn)
                if chain is not new["on_complete"]:
                    new = new.like(new)
                    new["on_complete"] = chain
        if new is not effect and out is None:
            out = effects.like(effects[:index])
        if out is not None:
            out.append(new)
    return effects if out is None else out
