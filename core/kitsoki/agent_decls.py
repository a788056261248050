"""resolveAgentDecls (loader.go:523-628): kitsoki's checks of one parsed file's `agents:`, before its
includes merge. An agent declaration has exactly one of `system_prompt` / `system_prompt_path` (a path is read
relative to the declaring file), a `cwd:` naming only set environment variables, a valid `effort:`, a
recognised `bash_profile:` form, and a `bash_profile` when it declares Bash and a read-only verb
(`host.agent.ask` / `host.agent.decide`) in the same file names it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.kitsoki import probed
from core.kitsoki.effect_walk import as_map, effects_in, quote, tools_of, unset_env, walk_states
from core.kitsoki.harness import EFFORTS
from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.yamlread import ConfigIssue


def _read_only_verb_agents(document: LMap) -> set[str]:
    """collectAskDecideAgents (loader.go:662): agents a host.agent.ask / decide effect names, in
    on_enter, arc effects and their on_complete chains, at every depth of the file's states."""
    out: set[str] = set()

    def effects(items: Any) -> None:
        for effect in effects_in(items):
            if effect.get("invoke") in ("host.agent.ask", "host.agent.decide"):
                agent = as_map(effect.get("with")).get("agent")
                if isinstance(agent, str) and agent:
                    out.add(agent)
            effects(effect.get("on_complete"))

    for _, state in walk_states(as_map(document.get("states"))):
        effects(state.get("on_enter"))
        for arcs in as_map(state.get("on")).values():
            for arc in arcs if isinstance(arcs, LSeq) else ():
                if isinstance(arc, LMap):
                    effects(arc.get("effects"))
    return out


def _bash_profile_ok(value: Any) -> bool:
    """BashProfileDecl.UnmarshalYAML (types.go:41-90): "read-only", {commands: ...} or {sandboxed_write: ...}."""
    if isinstance(value, str):
        return value.strip() == "read-only"
    return isinstance(value, LMap) and ("commands" in value or "sandboxed_write" in value)


def agent_decl_issues(document: LMap, file: str, env: Mapping[str, str] | None = None) -> list[ConfigIssue]:
    """resolveAgentDecls on one parsed file (its own agents, its own effects)."""
    agents = document.get("agents")
    if not isinstance(agents, LMap) or not agents:
        return []
    env = probed.ENV if env is None else env
    issues: list[ConfigIssue] = []
    base_dir = Path(file).parent

    def add(at: tuple[str, int, int], message: str, key: str) -> None:
        issues.append(ConfigIssue(file=at[0], line=max(at[1], 1), column=max(at[2], 1), key=key, message=message))

    for name in sorted(agents):
        decl = agents[name]
        at, key = agents.key_at(name), f"agents.{name}"
        if "bash_profile" in as_map(decl) and decl["bash_profile"] is not None and not _bash_profile_ok(decl["bash_profile"]):
            shown = decl["bash_profile"] if isinstance(decl["bash_profile"], str) else "(a mapping)"
            add(decl.value_at("bash_profile"), f"app.BashProfileDecl: unrecognised form {quote(shown)}; expected "
                                               '"read-only", {commands:[...]}, or {sandboxed_write:<dir>}',
                f"{key}.bash_profile")
            continue
        if not isinstance(decl, LMap):
            add(at, f"agent {quote(name)}: empty definition", key)
            continue
        inline, path = str(decl.get("system_prompt") or ""), str(decl.get("system_prompt_path") or "")
        if inline and path:
            add(at, f"agent {quote(name)}: system_prompt and system_prompt_path are mutually exclusive", key)
            continue
        if not inline and not path:
            add(at, f"agent {quote(name)}: one of system_prompt or system_prompt_path is required", key)
            continue
        if path:
            full = os.path.abspath(path if os.path.isabs(path) else base_dir / path)
            if not probed.isfile(full):
                add(decl.value_at("system_prompt_path"),
                    f"agent {quote(name)}: system_prompt_path {quote(full)}: open {full}: no such file or directory",
                    f"{key}.system_prompt_path")
                continue
        cwd = str(decl.get("cwd") or "")
        missing = unset_env(cwd, env) if cwd else None
        if missing:
            add(decl.value_at("cwd"), f"agent {quote(name)}: cwd {quote(cwd)} references unset env var {missing}",
                f"{key}.cwd")
            continue
        effort = str(decl.get("effort") or "").strip()
        if effort and effort not in EFFORTS:
            add(decl.value_at("effort"), f"agent {quote(name)}: effort {quote(decl.get('effort'))} is invalid (valid: "
                                         "low, medium, high, xhigh, max)", f"{key}.effort")
            continue
        if "host.Bash" in tools_of(decl) and decl.get("bash_profile") is None and \
                name in _read_only_verb_agents(document):
            add(at, f"agent {quote(name)} declares Bash but no bash_profile; required when the agent is referenced by "
                    "host.agent.ask or host.agent.decide (those verbs run every Bash command through a profile "
                    "allowlist)", key)
    return issues
