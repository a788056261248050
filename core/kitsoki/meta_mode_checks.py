"""Meta modes: kitsoki's built-in ones an app gets without declaring them (builtin_meta_modes.go) and
validateMetaModes (loader.go:2334-2470)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.kitsoki.effect_walk import Issues, as_map, quote, unset_env
from core.kitsoki.parse import LMap

BUILTIN_META_MODES: dict[str, dict[str, Any]] = {
    "story.edit": {"group": "story", "trigger": "edit", "default": True, "agent": "story-author"},
    "story.ask": {"group": "story", "trigger": "ask", "agent": "story-explainer"},
    "story.bug": {"group": "story", "trigger": "bug", "agent": "story-bug-reporter"},
}
"""builtinMetaModes (builtin_meta_modes.go): injected into every app that does not declare them. kitsoki
adds a `kitsoki.*` group too when KITSOKI_REPO is set; its agents are built in and its cwd is that
variable, so it can only collide with an app's own `kitsoki.*` group (not modelled)."""


def meta_modes(definition: LMap) -> dict[str, Any]:
    """The app's meta modes with kitsoki's built-in ones it does not declare (injectBuiltinMetaModes)."""
    modes: dict[str, Any] = dict(as_map(definition.get("meta_modes")))
    for name, mode in BUILTIN_META_MODES.items():
        modes.setdefault(name, mode)
    return modes


def meta_mode_issues(definition: LMap, modes: dict[str, Any], env: Mapping[str, str], out: Issues) -> None:
    """validateMetaModes (loader.go:2334-2470)."""
    declared = as_map(definition.get("meta_modes"))
    intents = as_map(definition.get("intents"))
    owners: dict[str, dict[str, str]] = {}
    groups: dict[str, list[tuple[str, bool]]] = {}
    for name in sorted(modes):
        mode = modes[name]
        at = declared.key_at(name) if name in declared else None
        if not isinstance(mode, Mapping):
            out.add(at, f"meta_mode {quote(name)}: empty definition")
            continue
        trigger, agent, group = str(mode.get("trigger") or ""), str(mode.get("agent") or ""), str(mode.get("group") or "")
        if not trigger:
            out.add(at, f"meta_mode {quote(name)}: trigger is required")
        if not agent:
            out.add(at, f"meta_mode {quote(name)}: agent is required")
        effective = group
        if "." in name:
            key_group, key_trigger = name.split(".", 1)
            if not group:
                group = effective = key_group
            elif group != key_group:
                out.add(at, f"meta_mode {quote(name)}: group {quote(group)} does not match key prefix {quote(key_group)} (key "
                            f"must be {quote(group)}.<trigger>)")
            if trigger and trigger != key_trigger:
                out.add(at, f"meta_mode {quote(name)}: trigger {quote(trigger)} does not match key suffix {quote(key_trigger)} "
                            f"(grouped key must be <group>.{quote(trigger)})")
        elif not effective:
            effective = name
        if trigger:
            by_group = owners.setdefault(effective, {})
            if trigger in by_group:
                out.add(at, f"meta_mode {quote(name)}: trigger {quote(trigger)} already claimed by meta_mode "
                            f"{quote(by_group[trigger])} in group {quote(effective)}")
            else:
                by_group[trigger] = name
                if "." not in name and not group and trigger in intents:
                    out.add(at, f"meta_mode {quote(name)}: trigger {quote(trigger)} collides with a declared intent of the "
                                "same name")
        cwd = str(mode.get("cwd") or "")
        missing = unset_env(cwd, env) if cwd else None
        if missing:
            out.add(at, f"meta_mode {quote(name)}: cwd {quote(cwd)} references unset env var {missing}")
            continue
        groups.setdefault(effective, []).append((name, mode.get("default") is True))
    for group in sorted(groups):
        rows = groups[group]
        if len(rows) < 2:
            continue
        defaults = sorted(name for name, is_default in rows if is_default)
        if not defaults:
            out.add(None, f"meta_mode group {quote(group)}: no default verb declared (one of {len(rows)} modes must set "
                          "default: true)")
        elif len(defaults) > 1:
            out.add(None, f"meta_mode group {quote(group)}: {len(defaults)} modes flagged default: true "
                          f"({', '.join(defaults)}) — exactly one allowed")
