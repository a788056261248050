"""kitsoki's load-time checks on agents, agent verbs and the other effect-level rules the loader enforces.

Read from kitsoki's internal/app at 1f4abf0e (docs/kitsoki-load-checks.md lists every check with its
cite). Two passes, at the points kitsoki runs them:

- `agent_decl_issues`, on each parsed file before its includes merge (resolveAgentDecls,
  loader.go:523-628): an agent declaration has exactly one of `system_prompt` / `system_prompt_path`
  (a path is read relative to the declaring file), a `cwd:` naming only set environment variables,
  a valid `effort:`, a recognised `bash_profile:` form, and a `bash_profile` when it declares Bash and
  a read-only verb (`host.agent.ask` / `host.agent.decide`) in the same file names it;
- `definition_agent_issues`, on the folded app (resolveAgentPlugins, resolveProviders, then the parts
  of validateDef about agents): `agent_plugins:` and `providers:` declarations; `with.agent` only on
  `host.agent.*` and naming a declared agent; `write_mode:` / `intercept_drive:` values, `read_only`
  only where an agent is dispatched and never with a write-capable agent, no `set:` of the engine's
  `write_mode_scope`; `agent_off_ramp:` never on a terminal or conversational state; every agent
  named by a meta mode, `off_path:` or an off-ramp known; every provider named known; the agent-verb
  cross-checks (a read-only verb given a mutating tool, `host.agent.task` without
  `acceptance.schema`, a network tool on an agent declared free of external side effects); meta
  modes (kitsoki's built-in `story.*` group included); `host.starlark.run` scripts and sidecars.

Environment variables are read from the process, as kitsoki reads them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from core.kitsoki import probed, statememo
from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.yamlread import ConfigIssue

AGENT_VERB = "host.agent."
MUTATION_TOOLS = frozenset({"host.Edit", "host.Write", "host.NotebookEdit"})
"""agentMutationTools (loader.go:1938): what a read-only agent verb may not be given."""
READ_ONLY_VERBS = ("ask", "decide", "extract")
NETWORK_TOOLS = ("host.WebFetch", "host.WebSearch")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
BUILTIN_AGENTS = ("default-agent", "story-author", "kitsoki-engineer", "story-bug-reporter", "kitsoki-bug-reporter",
                  "story-explainer", "kitsoki-explainer")
"""agents.BuiltinNames() (internal/agents/agents.go:78)."""
KNOWN_PLUGINS = ("builtin.claude_cli", "builtin.inprocess", "subprocess", "mcp_http", "builtin.local_llm")
WRITE_MODES = ("", "open", "read_only")
WRITE_MODE_SCOPE = "write_mode_scope"
BUILTIN_META_MODES: dict[str, dict[str, Any]] = {
    "story.edit": {"group": "story", "trigger": "edit", "default": True, "agent": "story-author"},
    "story.ask": {"group": "story", "trigger": "ask", "agent": "story-explainer"},
    "story.bug": {"group": "story", "trigger": "bug", "agent": "story-bug-reporter"},
}
"""builtinMetaModes (builtin_meta_modes.go): injected into every app that does not declare them. kitsoki
adds a `kitsoki.*` group too when KITSOKI_REPO is set; its agents are built in and its cwd is that
variable, so it can only collide with an app's own `kitsoki.*` group (not modelled)."""
_ENV_RE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
"""metaEnvVarRE (loader.go:2312): the variables a `cwd:` may name."""
_BARE_STARLARK_INPUT = re.compile(r"^(world|slots|args|form)\s*[.?\[]")

Add = Callable[[tuple[str, int, int], str], None]


def _q(text: Any) -> str:
    """Go's %q of a string."""
    out = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


def _map(value: Any) -> LMap:
    return value if isinstance(value, LMap) else LMap()


def normalise_tool(name: str) -> str:
    """normaliseAgentTool: `Edit` is `host.Edit`."""
    return name if not name or name.startswith("host.") else f"host.{name}"


def _tools(decl: Any) -> list[str]:
    tools = decl.get("tools") if isinstance(decl, LMap) else None
    return [normalise_tool(str(t)) for t in tools] if isinstance(tools, LSeq) else []


def external_side_effect(decl: Any) -> bool:
    """The declared `external_side_effect`, else kitsoki's inference from the tools (a network tool)."""
    if isinstance(decl, LMap) and isinstance(decl.get("external_side_effect"), bool):
        return decl["external_side_effect"]
    return any(tool in NETWORK_TOOLS for tool in _tools(decl))


def _unset_env(text: str, env: Mapping[str, str]) -> str | None:
    for match in _ENV_RE.finditer(text):
        if match.group(1) not in env:
            return match.group(1)
    return None


def unset_braced_env(text: str, env: Mapping[str, str]) -> str | None:
    """expandEnvVar (loader_agent_plugins.go:120): the first `${NAME}` not set, or None."""
    index = 0
    while True:
        start = text.find("${", index)
        if start < 0:
            return None
        end = text.find("}", start + 2)
        if end < 0:
            return None
        name = text[start + 2:end]
        if name not in env:
            return name
        index = end + 1


def effect_when_off_ramp_enabled(value: Any) -> bool:
    return value is True or isinstance(value, LMap)


# --- walking effects as kitsoki walks them -----------------------------------------------------------------


def _effects(value: Any) -> list[LMap]:
    return [e for e in value if isinstance(e, LMap)] if isinstance(value, LSeq) else []


def walk_all_effects(states: LMap, prefix: str = "") -> Iterator[tuple[str, LMap]]:
    """walkAllEffectsPrefix (loader.go:2003): each on_enter and arc effect, and one level of their
    on_complete, with kitsoki's location text."""
    for name in states:
        state = states[name]
        if not isinstance(state, LMap):
            continue
        where = f"{prefix}.{name}" if prefix else name
        yield from state_effects(where, state)
        if isinstance(state.get("states"), LMap):
            yield from walk_all_effects(state["states"], where)


def state_effects(where: str, state: LMap) -> Iterator[tuple[str, LMap]]:
    """walk_all_effects for one state, without its children."""
    for i, effect in enumerate(_effects(state.get("on_enter"))):
        yield f"state {_q(where)} on_enter[{i}]", effect
        for j, child in enumerate(_effects(effect.get("on_complete"))):
            yield f"state {_q(where)} on_enter[{i}] on_complete[{j}]", child
    for intent, arcs in _map(state.get("on")).items():
        for a, arc in enumerate(arcs if isinstance(arcs, LSeq) else ()):
            if not isinstance(arc, LMap):
                continue
            for e, effect in enumerate(_effects(arc.get("effects"))):
                yield f"state {_q(where)} intent {_q(intent)} arc[{a}] effect[{e}]", effect
                for j, child in enumerate(_effects(effect.get("on_complete"))):
                    yield f"state {_q(where)} intent {_q(intent)} arc[{a}] effect[{e}] on_complete[{j}]", child


def _walk_states(states: LMap, prefix: str = "") -> Iterator[tuple[str, LMap]]:
    for name in sorted(states):
        state = states[name]
        if not isinstance(state, LMap):
            continue
        path = f"{prefix}.{name}" if prefix else name
        yield path, state
        if isinstance(state.get("states"), LMap):
            yield from _walk_states(state["states"], path)


def _read_only_verb_agents(document: LMap) -> set[str]:
    """collectAskDecideAgents (loader.go:662): agents a host.agent.ask / decide effect names, in
    on_enter, arc effects and their on_complete chains, at every depth of the file's states."""
    out: set[str] = set()

    def effects(items: Any) -> None:
        for effect in _effects(items):
            if effect.get("invoke") in ("host.agent.ask", "host.agent.decide"):
                agent = _map(effect.get("with")).get("agent")
                if isinstance(agent, str) and agent:
                    out.add(agent)
            effects(effect.get("on_complete"))

    for _, state in _walk_states(_map(document.get("states"))):
        effects(state.get("on_enter"))
        for arcs in _map(state.get("on")).values():
            for arc in arcs if isinstance(arcs, LSeq) else ():
                if isinstance(arc, LMap):
                    effects(arc.get("effects"))
    return out


# --- per file: resolveAgentDecls --------------------------------------------------------------------------


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
        if "bash_profile" in _map(decl) and decl["bash_profile"] is not None and not _bash_profile_ok(decl["bash_profile"]):
            shown = decl["bash_profile"] if isinstance(decl["bash_profile"], str) else "(a mapping)"
            add(decl.value_at("bash_profile"), f"app.BashProfileDecl: unrecognised form {_q(shown)}; expected "
                                               '"read-only", {commands:[...]}, or {sandboxed_write:<dir>}',
                f"{key}.bash_profile")
            continue
        if not isinstance(decl, LMap):
            add(at, f"agent {_q(name)}: empty definition", key)
            continue
        inline, path = str(decl.get("system_prompt") or ""), str(decl.get("system_prompt_path") or "")
        if inline and path:
            add(at, f"agent {_q(name)}: system_prompt and system_prompt_path are mutually exclusive", key)
            continue
        if not inline and not path:
            add(at, f"agent {_q(name)}: one of system_prompt or system_prompt_path is required", key)
            continue
        if path:
            full = os.path.abspath(path if os.path.isabs(path) else base_dir / path)
            if not probed.isfile(full):
                add(decl.value_at("system_prompt_path"),
                    f"agent {_q(name)}: system_prompt_path {_q(full)}: open {full}: no such file or directory",
                    f"{key}.system_prompt_path")
                continue
        cwd = str(decl.get("cwd") or "")
        missing = _unset_env(cwd, env) if cwd else None
        if missing:
            add(decl.value_at("cwd"), f"agent {_q(name)}: cwd {_q(cwd)} references unset env var {missing}",
                f"{key}.cwd")
            continue
        effort = str(decl.get("effort") or "").strip()
        if effort and effort not in EFFORTS:
            add(decl.value_at("effort"), f"agent {_q(name)}: effort {_q(decl.get('effort'))} is invalid (valid: "
                                         "low, medium, high, xhigh, max)", f"{key}.effort")
            continue
        if "host.Bash" in _tools(decl) and decl.get("bash_profile") is None and \
                name in _read_only_verb_agents(document):
            add(at, f"agent {_q(name)} declares Bash but no bash_profile; required when the agent is referenced by "
                    "host.agent.ask or host.agent.decide (those verbs run every Bash command through a profile "
                    "allowlist)", key)
    return issues


# --- the folded app: plugins, providers, validateDef's agent rules ----------------------------------------


class _Issues:
    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[ConfigIssue] = []

    def add(self, at: tuple[str, int, int] | None, message: str, key: str = "") -> None:
        file, line, column = at if at is not None else (self.file, 1, 1)
        self.items.append(ConfigIssue(file=file or self.file, line=max(line, 1), column=max(column, 1), key=key,
                                      message=message))


def _at(value: Any, fallback: tuple[str, int, int]) -> tuple[str, int, int]:
    return value.at if isinstance(value, (LMap, LSeq)) and value.line else fallback


def plugin_issues(definition: LMap, env: Mapping[str, str]) -> list[ConfigIssue]:
    """resolveAgentPlugins (loader_agent_plugins.go:33-110)."""
    out = _Issues(definition.file)
    plugins = _map(definition.get("agent_plugins"))
    for name in plugins:
        decl = plugins[name]
        at, key = plugins.key_at(name), f"agent_plugins.{name}"
        if not isinstance(decl, LMap):
            out.add(at, f"agent_plugins.{name}: empty declaration", key)
            continue
        if not name.startswith("agent."):
            out.add(at, f"agent_plugins: key {_q(name)} must start with 'agent.' prefix", key)
            continue
        plugin = str(decl.get("plugin") or "")
        if not plugin:
            out.add(at, f"agent_plugins.{name}: plugin: is required", key)
            continue
        if plugin not in KNOWN_PLUGINS:
            out.add(decl.value_at("plugin"), f"agent_plugins.{name}: unknown plugin {_q(plugin)} (supported: "
                                             f"{', '.join(KNOWN_PLUGINS)})", key)
            continue
        if plugin == "subprocess" and not str(decl.get("command") or "").strip():
            out.add(at, f"agent_plugins.{name}: subprocess plugin requires command:", key)
            continue
        if plugin == "mcp_http" and not str(decl.get("endpoint") or "").strip():
            out.add(at, f"agent_plugins.{name}: mcp_http plugin requires endpoint:", key)
            continue
        if plugin == "builtin.local_llm" and not str(decl.get("model") or "").strip() and \
                not str(decl.get("endpoint") or "").strip():
            out.add(at, f"agent_plugins.{name}: builtin.local_llm plugin requires model: or endpoint:", key)
            continue
        for block in ("env", "headers"):
            values = _map(decl.get(block))
            for var in values:
                missing = unset_braced_env(str(values[var] or ""), env)
                if missing is not None:
                    out.add(values.value_at(var), f"agent_plugins.{name}: env var {missing} referenced in "
                                                  f"{block}.{var} not set", f"{key}.{block}.{var}")
    return out.items


def provider_issues(definition: LMap, env: Mapping[str, str]) -> list[ConfigIssue]:
    """resolveProviders (loader_providers.go:45-80)."""
    out = _Issues(definition.file)
    providers = _map(definition.get("providers"))
    for name in providers:
        decl = providers[name]
        at, key = providers.key_at(name), f"providers.{name}"
        if not isinstance(decl, LMap):
            out.add(at, f"providers.{name}: empty declaration", key)
            continue
        model, effort = str(decl.get("model") or "").strip(), str(decl.get("effort") or "").strip()
        variables = _map(decl.get("env"))
        if not model and not variables and not effort:
            out.add(at, f"providers.{name}: a provider must set model:, effort:, and/or env: (an empty provider has "
                        "no effect)", key)
            continue
        if effort and effort not in EFFORTS:
            out.add(decl.value_at("effort"), f"providers.{name}: effort {_q(decl.get('effort'))} is invalid (valid: "
                                             "low, medium, high, xhigh, max)", f"{key}.effort")
            continue
        for var in variables:
            missing = unset_braced_env(str(variables[var] or ""), env)
            if missing is not None:
                out.add(variables.value_at(var), f"providers.{name}: env var {missing} referenced in env.{var} not set",
                        f"{key}.env.{var}")
    return out.items


def agent_ref_issue(effect: LMap, location: str, declared: Callable[[str], bool]) -> str | None:
    """validateAgentRef (loader.go:1902): `with.agent` only on host.agent.*, naming a declared agent
    (`declared(name)`: the whole-tree pass looks in `agents`, the per-state one records the question)."""
    name = _map(effect.get("with")).get("agent")
    if not isinstance(name, str) or not name or "{{" in name:
        return None
    invoke = effect.get("invoke")
    if invoke and not str(invoke).startswith(AGENT_VERB):
        return f"{location}: with.agent is only meaningful on host.agent.* invocations (got invoke {_q(invoke)})"
    if not declared(name):
        return f"{location}: with.agent {_q(name)} is not declared in agents"
    return None


def ref_roots(path: str, state: LMap) -> Iterator[tuple[LMap, str]]:
    """Where validateStates starts validateAgentRef's chains in one state, in its order: each arc's
    effects (intents sorted), then on_enter."""
    for intent in sorted(_map(state.get("on"))):
        arcs = state["on"][intent]
        for arc in arcs if isinstance(arcs, LSeq) else ():
            if isinstance(arc, LMap):
                for index, effect in enumerate(_effects(arc.get("effects"))):
                    yield effect, f"state {_q(path)} intent {_q(intent)} effects[{index}]"
    for index, effect in enumerate(_effects(state.get("on_enter"))):
        yield effect, f"state {_q(path)} on_enter[{index}]"


def _agent_refs(states: LMap, agents: LMap, out: _Issues) -> None:
    """validateAgentRef where validateStates calls it: every on_enter and arc effect, and their
    on_complete chains at every depth."""

    def chain(effect: LMap, location: str) -> None:
        problem = agent_ref_issue(effect, location, agents.__contains__)
        if problem:
            out.add(_at(effect, out_at(effect)), problem)
        for index, child in enumerate(_effects(effect.get("on_complete"))):
            chain(child, f"{location} on_complete[{index}]")

    def out_at(effect: LMap) -> tuple[str, int, int]:
        return (effect.file, effect.line, effect.column)

    for path, state in _walk_states(states):
        for effect, location in ref_roots(path, state):
            chain(effect, location)


def _dispatches_agent(state: LMap) -> bool:
    """roomDispatchesAgent (loader.go:1838)."""
    if state.get("mode") == "conversational" or effect_when_off_ramp_enabled(state.get("agent_off_ramp")):
        return True
    return any(effect.get("invoke") in ("host.agent.task", "host.agent.converse") for effect in _room_effects(state))


def _room_effects(state: LMap) -> Iterator[LMap]:
    yield from _effects(state.get("on_enter"))
    for arcs in _map(state.get("on")).values():
        for arc in arcs if isinstance(arcs, LSeq) else ():
            if isinstance(arc, LMap):
                yield from _effects(arc.get("effects"))


def _dispatched_agents(state: LMap) -> list[str]:
    seen: list[str] = []
    for effect in _room_effects(state):
        if effect.get("invoke") not in ("host.agent.task", "host.agent.converse"):
            continue
        name = _map(effect.get("with")).get("agent")
        if isinstance(name, str) and name and "{{" not in name and name not in seen:
            seen.append(name)
    return seen


def _state_rules(states: LMap, agents: LMap, out: _Issues) -> None:
    """normalizeAndValidateOffRamps, validateWriteMode and validateInterceptDrive (loader.go:1719-1836, 2487)."""
    def external(name: str) -> bool:
        return name in agents and isinstance(agents[name], LMap) and external_side_effect(agents[name])

    for path, state in _walk_states(states):
        ramp_rule(path, state, out)
    for path, state in _walk_states(states):
        write_rule(path, state, external, out)
    for path, state in _walk_states(states):
        drive_rule(path, state, out)


def ramp_rule(path: str, state: LMap, out: _Issues) -> None:
    """An off-ramp's form, and never on a terminal or conversational state (one state)."""
    at = state.at
    ramp = state.get("agent_off_ramp")
    if ramp is not None and not isinstance(ramp, bool) and \
            (not isinstance(ramp, LMap) or set(ramp) - {"agent", "persona", "banner"}):
        out.add(state.value_at("agent_off_ramp"), "agent_off_ramp: must be `true` or an {agent, persona, banner} "
                                                  "mapping", f"states.{path}.agent_off_ramp")  # OffRampDef.UnmarshalYAML
        return
    if effect_when_off_ramp_enabled(ramp):
        if state.get("terminal") is True:
            out.add(at, f"state {_q(path)} declares agent_off_ramp on a terminal: true state; a terminal state "
                        "never routes free text")
        if state.get("mode") == "conversational":
            out.add(at, f"state {_q(path)} declares agent_off_ramp on a mode: conversational state; that harness "
                        "is already free-form, so the flag is meaningless there")


def write_rule(path: str, state: LMap, external: Callable[[str], bool], out: _Issues) -> None:
    """No `set:` of the write-mode scope; write_mode's value, and read_only only where an agent is dispatched
    and none of them declares external side effects (`external(name)`), for one state."""
    for effect in _effects(state.get("on_enter")):
        _reserved_scope(effect, f"state {_q(path)} on_enter", out)
    for intent in sorted(_map(state.get("on"))):
        arcs = state["on"][intent]
        for arc in arcs if isinstance(arcs, LSeq) else ():
            if isinstance(arc, LMap):
                for effect in _effects(arc.get("effects")):
                    _reserved_scope(effect, f"state {_q(path)} intent {_q(intent)}", out)
    mode = state.get("write_mode") or ""
    if mode not in WRITE_MODES:
        out.add(state.value_at("write_mode"), f"state {_q(path)}: write_mode {_q(mode)} is invalid (want \"\", "
                                              '"open", or "read_only")', f"states.{path}.write_mode")
    if mode == "read_only":
        if not _dispatches_agent(state):
            out.add(state.value_at("write_mode"),
                    f"state {_q(path)}: write_mode: read_only is only meaningful on a room that dispatches an agent "
                    "(mode: conversational, an agent_off_ramp, or a host.agent.task / host.agent.converse effect); "
                    "it would silently do nothing here", f"states.{path}.write_mode")
        for name in _dispatched_agents(state):
            if external(name):
                out.add(state.value_at("write_mode"),
                        f"state {_q(path)}: write_mode: read_only contradicts agent {_q(name)} which declares "
                        "external_side_effect: true (statically write-capable); the static and runtime postures "
                        "must agree — drop write_mode: read_only or set the agent read-only",
                        f"states.{path}.write_mode")


def drive_rule(path: str, state: LMap, out: _Issues) -> None:
    drive = state.get("intercept_drive")
    if drive and drive != "rest":
        out.add(state.value_at("intercept_drive"), f"state {_q(path)}: intercept_drive {_q(drive)} is invalid (the "
                                                   'only valid value is "rest")', f"states.{path}.intercept_drive")


def _reserved_scope(effect: LMap, location: str, out: _Issues) -> None:
    if WRITE_MODE_SCOPE in _map(effect.get("set")):
        out.add(_at(effect, (effect.file, effect.line, effect.column)),
                f"{location}: set: {_q(WRITE_MODE_SCOPE)} is engine-reserved — a story may not self-grant write mode by "
                "writing the scope key; it is set only by the write-mode gate on an operator grant")


def _agent_references(definition: LMap, modes: dict[str, Any], out: _Issues, states: bool = True) -> None:
    """validateAgentReferences (loader.go:2553): meta modes, off_path and off-ramps name known agents."""
    known = set(_map(definition.get("agents"))) | set(BUILTIN_AGENTS)
    listed = ", ".join(sorted(known))

    def check(name: Any, site: str, at: tuple[str, int, int] | None) -> None:
        if isinstance(name, str) and name and name not in known:
            out.add(at, f"agent reference {_q(name)} at {site} is undefined (known agents: {listed})")

    for mode_name in sorted(modes):
        mode = modes[mode_name]
        if isinstance(mode, Mapping):
            check(mode.get("agent"), f"meta_modes.{mode_name}.agent", mode.at if isinstance(mode, LMap) else None)
    off_path = definition.get("off_path")
    if isinstance(off_path, LMap):
        check(off_path.get("agent"), "off_path.agent", off_path.at)
    for path, state in _walk_states(_map(definition.get("states"))) if states else ():
        ramp = state.get("agent_off_ramp")
        if isinstance(ramp, LMap):
            check(ramp.get("agent"), f"states.{path}.agent_off_ramp.agent", ramp.at)


def _provider_references(definition: LMap, out: _Issues, effects: bool = True) -> None:
    """validateProviderReferences (loader_providers.go:84-140)."""
    known = set(_map(definition.get("providers")))
    listed = ", ".join(sorted(known)) or "(none declared)"
    agents = _map(definition.get("agents"))
    for name in sorted(agents):
        provider = _map(agents[name]).get("provider")
        if isinstance(provider, str) and provider and "{{" not in provider and provider not in known:
            out.add(agents.key_at(name), f"provider reference {_q(provider)} at agents.{name}.provider is undefined "
                                         f"(known providers: {listed})")
    for location, effect in walk_all_effects(_map(definition.get("states"))) if effects else ():
        problem = provider_ref_issue(effect, location, known.__contains__, lambda: listed)
        if problem:
            out.add(effect.at, problem)


def provider_ref_issue(effect: LMap, location: str, known: Callable[[str], bool],
                       listed: Callable[[], str]) -> str | None:
    """validateProviderRef (loader_providers.go:84-140): `with.provider` only on host.agent.*, naming a known
    provider (`known`, `listed`: asked of `providers`, or recorded by the per-state pass; listed only if shown)."""
    provider = _map(effect.get("with")).get("provider")
    if not isinstance(provider, str) or not provider or "{{" in provider:
        return None
    invoke = effect.get("invoke")
    if invoke and not str(invoke).startswith(AGENT_VERB):
        return f"{location}: with.provider is only meaningful on host.agent.* invocations (got invoke {_q(invoke)})"
    if not known(provider):
        return (f"provider reference {_q(provider)} at {location} with.provider is undefined (known providers: "
                f"{listed()})")
    return None


def verb_issue(effect: LMap, location: str, agents: LMap) -> list[str]:
    """checkAgentEffect (loader.go:2033-2128): the agent-verb × agent-tools cross-checks of one effect."""
    arguments = effect.get("with")
    invoke = str(effect.get("invoke") or "")
    if not isinstance(arguments, LMap) or not invoke.startswith(AGENT_VERB):
        return []
    verb = invoke[len(AGENT_VERB):]
    name = arguments.get("agent") if isinstance(arguments.get("agent"), str) else ""
    if "{{" in name:
        name = ""
    decl = agents.get(name) if name else None
    decl = decl if isinstance(decl, LMap) else None
    problems = []
    if verb in READ_ONLY_VERBS and decl is not None:
        for tool in _tools(decl):
            if tool in MUTATION_TOOLS:
                problems.append(f"{location}: agent {_q(name)} declares mutation tool {_q(tool)} — not permitted for "
                                f"host.agent.{verb} (read-only verb); use host.agent.task for agentic work")
    if verb == "task":
        acceptance = arguments.get("acceptance")
        schema = acceptance.get("schema") if isinstance(acceptance, LMap) else None
        if not isinstance(schema, str) or not schema.strip():
            problems.append(f"{location}: host.agent.task requires acceptance.schema to be set in the with: block")
        if decl is not None and decl.get("external_side_effect") is False:
            for tool in _tools(decl):
                if tool in NETWORK_TOOLS:
                    problems.append(f"{location}: agent {_q(name)} declares external_side_effect: false but has "
                                    f"{_q(tool)} in tools — these declarations contradict each other; an agent with "
                                    "network tools implies external side effects (Mode C). Remove external_side_effect: "
                                    "false or remove the network tool.")
    return problems


def _verb_cross_checks(definition: LMap, agents: LMap, out: _Issues, effects: bool = True) -> None:
    for location, effect in walk_all_effects(_map(definition.get("states"))) if effects else ():
        for problem in verb_issue(effect, location, agents):
            out.add(effect.at, problem)
    proposals = _map(definition.get("proposals"))
    for name in proposals:
        execute = _map(_map(proposals[name]).get("execute"))
        if not execute:
            continue
        location = f"proposal {_q(name)} execute"
        shell = execute.like({"invoke": execute.get("invoke"), "with": execute.get("with")})
        for problem in verb_issue(shell, location, agents):
            out.add(execute.at, problem)
        for index, child in enumerate(_effects(execute.get("on_complete"))):
            for problem in verb_issue(child, f"{location} on_complete[{index}]", agents):
                out.add(child.at, problem)


def meta_modes(definition: LMap) -> dict[str, Any]:
    """The app's meta modes with kitsoki's built-in ones it does not declare (injectBuiltinMetaModes)."""
    modes: dict[str, Any] = dict(_map(definition.get("meta_modes")))
    for name, mode in BUILTIN_META_MODES.items():
        modes.setdefault(name, mode)
    return modes


def _meta_mode_issues(definition: LMap, modes: dict[str, Any], env: Mapping[str, str], out: _Issues) -> None:
    """validateMetaModes (loader.go:2334-2470)."""
    declared = _map(definition.get("meta_modes"))
    intents = _map(definition.get("intents"))
    owners: dict[str, dict[str, str]] = {}
    groups: dict[str, list[tuple[str, bool]]] = {}
    for name in sorted(modes):
        mode = modes[name]
        at = declared.key_at(name) if name in declared else None
        if not isinstance(mode, Mapping):
            out.add(at, f"meta_mode {_q(name)}: empty definition")
            continue
        trigger, agent, group = str(mode.get("trigger") or ""), str(mode.get("agent") or ""), str(mode.get("group") or "")
        if not trigger:
            out.add(at, f"meta_mode {_q(name)}: trigger is required")
        if not agent:
            out.add(at, f"meta_mode {_q(name)}: agent is required")
        effective = group
        if "." in name:
            key_group, key_trigger = name.split(".", 1)
            if not group:
                group = effective = key_group
            elif group != key_group:
                out.add(at, f"meta_mode {_q(name)}: group {_q(group)} does not match key prefix {_q(key_group)} (key "
                            f"must be {_q(group)}.<trigger>)")
            if trigger and trigger != key_trigger:
                out.add(at, f"meta_mode {_q(name)}: trigger {_q(trigger)} does not match key suffix {_q(key_trigger)} "
                            f"(grouped key must be <group>.{_q(trigger)})")
        elif not effective:
            effective = name
        if trigger:
            by_group = owners.setdefault(effective, {})
            if trigger in by_group:
                out.add(at, f"meta_mode {_q(name)}: trigger {_q(trigger)} already claimed by meta_mode "
                            f"{_q(by_group[trigger])} in group {_q(effective)}")
            else:
                by_group[trigger] = name
                if "." not in name and not group and trigger in intents:
                    out.add(at, f"meta_mode {_q(name)}: trigger {_q(trigger)} collides with a declared intent of the "
                                "same name")
        cwd = str(mode.get("cwd") or "")
        missing = _unset_env(cwd, env) if cwd else None
        if missing:
            out.add(at, f"meta_mode {_q(name)}: cwd {_q(cwd)} references unset env var {missing}")
            continue
        groups.setdefault(effective, []).append((name, mode.get("default") is True))
    for group in sorted(groups):
        rows = groups[group]
        if len(rows) < 2:
            continue
        defaults = sorted(name for name, is_default in rows if is_default)
        if not defaults:
            out.add(None, f"meta_mode group {_q(group)}: no default verb declared (one of {len(rows)} modes must set "
                          "default: true)")
        elif len(defaults) > 1:
            out.add(None, f"meta_mode group {_q(group)}: {len(defaults)} modes flagged default: true "
                          f"({', '.join(defaults)}) — exactly one allowed")


class Probes:
    """What the definition checks looked at besides the definition: the environment variables they
    asked about and the files whose existence they tested. core.kitsoki.checked keeps a verdict with
    its probes and trusts it only while every probe still answers the same (`still`)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = _RecordedEnv(probed.ENV if env is None else env)
        self.paths: dict[str, bool] = {}
        """"e<path>" (exists) / "f<path>" (is a regular file) -> the answer."""

    def exists(self, path: str) -> bool:
        found = self.paths["e" + path] = probed.exists(path)
        return found

    def isfile(self, path: str) -> bool:
        found = self.paths["f" + path] = probed.isfile(path)
        return found

    def as_json(self) -> dict[str, Any]:
        return {"env": dict(self.env.seen), "paths": dict(self.paths)}

    @staticmethod
    def still(recorded: Mapping[str, Any], env: Mapping[str, str] | None = None) -> bool:
        """Whether every probe in `recorded` (as_json) answers the same now."""
        env = probed.ENV if env is None else env
        try:
            if any(env.get(name) != value for name, value in recorded["env"].items()):
                return False
            return all((probed.exists if probe[0] == "e" else probed.isfile)(probe[1:]) is answer
                       for probe, answer in recorded["paths"].items())
        except (KeyError, TypeError, AttributeError, IndexError):
            return False


class _RecordedEnv(Mapping[str, str]):
    """The environment as the checks read it, remembering every name asked about (None: unset)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self.seen: dict[str, str | None] = {}

    def __getitem__(self, name: str) -> str:
        value = self.seen[name] = self._env.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        value = self.seen[name] = self._env.get(name)
        return value is not None

    def __iter__(self) -> Iterator[str]:  # a check that lists the environment depends on all of it
        for name, value in self._env.items():
            self.seen[name] = value
        return iter(list(self._env))

    def __len__(self) -> int:
        return len(self._env)


def _starlark_issues(definition: LMap, base_dir: Path | None, out: _Issues, probes: Probes | None = None) -> None:
    """validateStarlarkEffects (loader.go:2196-2298): the script (inside the app root) and its
    `.yaml` sidecar exist; an input is never a bare expression. The sidecar's types are not modelled."""
    exists = probes.exists if probes is not None else probed.exists
    isfile = probes.isfile if probes is not None else probed.isfile
    for location, effect in walk_all_effects(_map(definition.get("states"))):
        starlark_rule(location, effect, base_dir, exists, isfile, out)


def starlark_rule(location: str, effect: LMap, base_dir: Path | None, exists: Callable[[str], bool],
                  isfile: Callable[[str], bool], out: _Issues) -> None:
    """validateStarlarkEffects for one effect; `exists` / `isfile` answer for the script and its sidecar."""
    if effect.get("invoke") != "host.starlark.run":
        return
    arguments = _map(effect.get("with"))
    script = arguments.get("script")
    script = script.strip() if isinstance(script, str) else ""
    if not script:
        out.add(effect.at, f"{location}: host.starlark.run requires a non-empty with.script")
        return
    if "{{" in script:
        return
    resolved = script
    if base_dir is not None and not os.path.isabs(script):
        resolved = os.path.join(base_dir, script)
    if base_dir is not None:
        relative = os.path.relpath(os.path.normpath(resolved), base_dir)
        if relative.startswith(".."):
            out.add(arguments.value_at("script"), f"{location}: host.starlark.run script {_q(script)} resolves "
                                                  "outside the app root")
            return
    if not exists(resolved):
        out.add(arguments.value_at("script"), f"{location}: host.starlark.run script {_q(script)} not found "
                                              f"(resolved to {_q(resolved)})")
        return
    sidecar = resolved + ".yaml"
    if not isfile(sidecar):
        out.add(arguments.value_at("script"), f"{location}: host.starlark.run script {_q(script)} has no sidecar "
                                              f"(expected {_q(sidecar)}): open {sidecar}: no such file or directory")
        return
    inputs = _map(arguments.get("inputs"))
    for name in inputs:
        value = inputs[name]
        if isinstance(value, str) and "{{" not in value and "{%" not in value and \
                _BARE_STARLARK_INPUT.match(value.strip()):
            out.add(inputs.value_at(name),
                    f"{location}: host.starlark.run input {_q(name)} is a bare expression {_q(value)} — it reaches "
                    "the script as that literal string, not its value. Template it: "
                    f"{_q('{{ ' + value.strip() + ' }}')} (a sole {{{{ }}}} preserves the typed value).")


def definition_agent_issues(definition: LMap, base_dir: Path | None = None,
                            env: Mapping[str, str] | None = None,
                            probes: Probes | None = None) -> tuple[list[ConfigIssue], bool]:
    """The checks of the folded app, in kitsoki's order; (issues, fatal): plugin and provider problems
    stop the load before validateDef runs (`fatal`), the rest join validateDef's own. With `probes`,
    every environment variable and file they look at is recorded there (and `env` is its own)."""
    env = probes.env if probes is not None else probed.ENV if env is None else env
    early = plugin_issues(definition, env)
    if early:
        return early, True
    early = provider_issues(definition, env)
    if early:
        return early, True
    out = _Issues(definition.file)
    states = _map(definition.get("states"))
    agents = _map(definition.get("agents"))
    modes = meta_modes(definition)
    if not statememo.enabled():  # the whole-tree passes, in kitsoki's order (what the memoized path equals)
        _agent_refs(states, agents, out)
        _state_rules(states, agents, out)
        _meta_mode_issues(definition, modes, env, out)
        _agent_references(definition, modes, out)
        _provider_references(definition, out)
        _verb_cross_checks(definition, agents, out)
        _starlark_issues(definition, base_dir, out, probes)
        return out.items, False
    from core.kitsoki import agent_state_checks as each  # builds on this module's rules

    passes = each.StatePasses(definition, states, agents, base_dir, probes)
    out.items.extend(passes.take(each.REFS, each.RAMPS, each.RULES, each.DRIVES))
    _meta_mode_issues(definition, modes, env, out)
    _agent_references(definition, modes, out, states=False)
    out.items.extend(passes.take(each.RAMP_REFS))
    _provider_references(definition, out, effects=False)
    out.items.extend(passes.take(each.PROVIDERS, each.VERBS))
    _verb_cross_checks(definition, agents, out, effects=False)
    out.items.extend(passes.take(each.STARLARK))
    return out.items, False
