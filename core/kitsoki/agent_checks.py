"""kitsoki's load-time checks on the folded app's agents, agent verbs and the other effect-level rules.

Read from kitsoki's internal/app at 1f4abf0e (docs/kitsoki-load-checks.md lists every check with its
cite). kitsoki runs agent checks at two points: on each parsed file before its includes merge
(resolveAgentDecls: core.kitsoki.agent_decls), and on the folded app, here (`definition_agent_issues`:
resolveAgentPlugins, resolveProviders, then the parts of validateDef about agents): `agent_plugins:` and
`providers:` declarations; `with.agent` only on `host.agent.*` and naming a declared agent; `write_mode:` /
`intercept_drive:` values, `read_only` only where an agent is dispatched and never with a write-capable
agent, no `set:` of the engine's `write_mode_scope`; `agent_off_ramp:` never on a terminal or
conversational state; every agent named by a meta mode, `off_path:` or an off-ramp known; every provider
named known; the agent-verb cross-checks (a read-only verb given a mutating tool, `host.agent.task` without
`acceptance.schema`, a network tool on an agent declared free of external side effects); meta modes
(core.kitsoki.meta_mode_checks, kitsoki's built-in `story.*` group included); `host.starlark.run` scripts
and sidecars (core.kitsoki.starlark_checks).

Environment variables are read from the process, as kitsoki reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from core.kitsoki import probed, statememo
from core.kitsoki.effect_walk import (
    NETWORK_TOOLS,
    Issues,
    as_map,
    at_or,
    effect_when_off_ramp_enabled,
    effects_in,
    external_side_effect,
    quote,
    tools_of,
    unset_braced_env,
    walk_all_effects,
    walk_states,
)
from core.kitsoki.harness import EFFORTS
from core.kitsoki.meta_mode_checks import meta_mode_issues, meta_modes
from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.probed import Probes
from core.kitsoki.starlark_checks import starlark_issues
from core.kitsoki.yamlread import ConfigIssue

AGENT_VERB = "host.agent."
MUTATION_TOOLS = frozenset({"host.Edit", "host.Write", "host.NotebookEdit"})
"""agentMutationTools (loader.go:1938): what a read-only agent verb may not be given."""
READ_ONLY_VERBS = ("ask", "decide", "extract")
BUILTIN_AGENTS = ("default-agent", "story-author", "kitsoki-engineer", "story-bug-reporter", "kitsoki-bug-reporter",
                  "story-explainer", "kitsoki-explainer")
"""agents.BuiltinNames() (internal/agents/agents.go:78)."""
KNOWN_PLUGINS = ("builtin.claude_cli", "builtin.inprocess", "subprocess", "mcp_http", "builtin.local_llm")
WRITE_MODES = ("", "open", "read_only")
WRITE_MODE_SCOPE = "write_mode_scope"


# --- the folded app: plugins, providers, validateDef's agent rules ----------------------------------------

def plugin_issues(definition: LMap, env: Mapping[str, str]) -> list[ConfigIssue]:
    """resolveAgentPlugins (loader_agent_plugins.go:33-110)."""
    out = Issues(definition.file)
    plugins = as_map(definition.get("agent_plugins"))
    for name in plugins:
        decl = plugins[name]
        at, key = plugins.key_at(name), f"agent_plugins.{name}"
        if not isinstance(decl, LMap):
            out.add(at, f"agent_plugins.{name}: empty declaration", key)
            continue
        if not name.startswith("agent."):
            out.add(at, f"agent_plugins: key {quote(name)} must start with 'agent.' prefix", key)
            continue
        plugin = str(decl.get("plugin") or "")
        if not plugin:
            out.add(at, f"agent_plugins.{name}: plugin: is required", key)
            continue
        if plugin not in KNOWN_PLUGINS:
            out.add(decl.value_at("plugin"), f"agent_plugins.{name}: unknown plugin {quote(plugin)} (supported: "
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
            values = as_map(decl.get(block))
            for var in values:
                missing = unset_braced_env(str(values[var] or ""), env)
                if missing is not None:
                    out.add(values.value_at(var), f"agent_plugins.{name}: env var {missing} referenced in "
                                                  f"{block}.{var} not set", f"{key}.{block}.{var}")
    return out.items


def provider_issues(definition: LMap, env: Mapping[str, str]) -> list[ConfigIssue]:
    """resolveProviders (loader_providers.go:45-80)."""
    out = Issues(definition.file)
    providers = as_map(definition.get("providers"))
    for name in providers:
        decl = providers[name]
        at, key = providers.key_at(name), f"providers.{name}"
        if not isinstance(decl, LMap):
            out.add(at, f"providers.{name}: empty declaration", key)
            continue
        model, effort = str(decl.get("model") or "").strip(), str(decl.get("effort") or "").strip()
        variables = as_map(decl.get("env"))
        if not model and not variables and not effort:
            out.add(at, f"providers.{name}: a provider must set model:, effort:, and/or env: (an empty provider has "
                        "no effect)", key)
            continue
        if effort and effort not in EFFORTS:
            out.add(decl.value_at("effort"), f"providers.{name}: effort {quote(decl.get('effort'))} is invalid (valid: "
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
    name = as_map(effect.get("with")).get("agent")
    if not isinstance(name, str) or not name or "{{" in name:
        return None
    invoke = effect.get("invoke")
    if invoke and not str(invoke).startswith(AGENT_VERB):
        return f"{location}: with.agent is only meaningful on host.agent.* invocations (got invoke {quote(invoke)})"
    if not declared(name):
        return f"{location}: with.agent {quote(name)} is not declared in agents"
    return None


def ref_roots(path: str, state: LMap) -> Iterator[tuple[LMap, str]]:
    """Where validateStates starts validateAgentRef's chains in one state, in its order: each arc's
    effects (intents sorted), then on_enter."""
    for intent in sorted(as_map(state.get("on"))):
        arcs = state["on"][intent]
        for arc in arcs if isinstance(arcs, LSeq) else ():
            if isinstance(arc, LMap):
                for index, effect in enumerate(effects_in(arc.get("effects"))):
                    yield effect, f"state {quote(path)} intent {quote(intent)} effects[{index}]"
    for index, effect in enumerate(effects_in(state.get("on_enter"))):
        yield effect, f"state {quote(path)} on_enter[{index}]"


def _agent_refs(states: LMap, agents: LMap, out: Issues) -> None:
    """validateAgentRef where validateStates calls it: every on_enter and arc effect, and their
    on_complete chains at every depth."""

    def chain(effect: LMap, location: str) -> None:
        problem = agent_ref_issue(effect, location, agents.__contains__)
        if problem:
            out.add(at_or(effect, out_at(effect)), problem)
        for index, child in enumerate(effects_in(effect.get("on_complete"))):
            chain(child, f"{location} on_complete[{index}]")

    def out_at(effect: LMap) -> tuple[str, int, int]:
        return (effect.file, effect.line, effect.column)

    for path, state in walk_states(states):
        for effect, location in ref_roots(path, state):
            chain(effect, location)


def _dispatches_agent(state: LMap) -> bool:
    """roomDispatchesAgent (loader.go:1838)."""
    if state.get("mode") == "conversational" or effect_when_off_ramp_enabled(state.get("agent_off_ramp")):
        return True
    return any(effect.get("invoke") in ("host.agent.task", "host.agent.converse") for effect in _room_effects(state))


def _room_effects(state: LMap) -> Iterator[LMap]:
    yield from effects_in(state.get("on_enter"))
    for arcs in as_map(state.get("on")).values():
        for arc in arcs if isinstance(arcs, LSeq) else ():
            if isinstance(arc, LMap):
                yield from effects_in(arc.get("effects"))


def _dispatched_agents(state: LMap) -> list[str]:
    seen: list[str] = []
    for effect in _room_effects(state):
        if effect.get("invoke") not in ("host.agent.task", "host.agent.converse"):
            continue
        name = as_map(effect.get("with")).get("agent")
        if isinstance(name, str) and name and "{{" not in name and name not in seen:
            seen.append(name)
    return seen


def _state_rules(states: LMap, agents: LMap, out: Issues) -> None:
    """normalizeAndValidateOffRamps, validateWriteMode and validateInterceptDrive (loader.go:1719-1836, 2487)."""
    def external(name: str) -> bool:
        return name in agents and isinstance(agents[name], LMap) and external_side_effect(agents[name])

    for path, state in walk_states(states):
        ramp_rule(path, state, out)
    for path, state in walk_states(states):
        write_rule(path, state, external, out)
    for path, state in walk_states(states):
        drive_rule(path, state, out)


def ramp_rule(path: str, state: LMap, out: Issues) -> None:
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
            out.add(at, f"state {quote(path)} declares agent_off_ramp on a terminal: true state; a terminal state "
                        "never routes free text")
        if state.get("mode") == "conversational":
            out.add(at, f"state {quote(path)} declares agent_off_ramp on a mode: conversational state; that harness "
                        "is already free-form, so the flag is meaningless there")


def write_rule(path: str, state: LMap, external: Callable[[str], bool], out: Issues) -> None:
    """No `set:` of the write-mode scope; write_mode's value, and read_only only where an agent is dispatched
    and none of them declares external side effects (`external(name)`), for one state."""
    for effect in effects_in(state.get("on_enter")):
        _reserved_scope(effect, f"state {quote(path)} on_enter", out)
    for intent in sorted(as_map(state.get("on"))):
        arcs = state["on"][intent]
        for arc in arcs if isinstance(arcs, LSeq) else ():
            if isinstance(arc, LMap):
                for effect in effects_in(arc.get("effects")):
                    _reserved_scope(effect, f"state {quote(path)} intent {quote(intent)}", out)
    mode = state.get("write_mode") or ""
    if mode not in WRITE_MODES:
        out.add(state.value_at("write_mode"), f"state {quote(path)}: write_mode {quote(mode)} is invalid (want \"\", "
                                              '"open", or "read_only")', f"states.{path}.write_mode")
    if mode == "read_only":
        if not _dispatches_agent(state):
            out.add(state.value_at("write_mode"),
                    f"state {quote(path)}: write_mode: read_only is only meaningful on a room that dispatches an agent "
                    "(mode: conversational, an agent_off_ramp, or a host.agent.task / host.agent.converse effect); "
                    "it would silently do nothing here", f"states.{path}.write_mode")
        for name in _dispatched_agents(state):
            if external(name):
                out.add(state.value_at("write_mode"),
                        f"state {quote(path)}: write_mode: read_only contradicts agent {quote(name)} which declares "
                        "external_side_effect: true (statically write-capable); the static and runtime postures "
                        "must agree — drop write_mode: read_only or set the agent read-only",
                        f"states.{path}.write_mode")


def drive_rule(path: str, state: LMap, out: Issues) -> None:
    drive = state.get("intercept_drive")
    if drive and drive != "rest":
        out.add(state.value_at("intercept_drive"), f"state {quote(path)}: intercept_drive {quote(drive)} is invalid (the "
                                                   'only valid value is "rest")', f"states.{path}.intercept_drive")


def _reserved_scope(effect: LMap, location: str, out: Issues) -> None:
    if WRITE_MODE_SCOPE in as_map(effect.get("set")):
        out.add(at_or(effect, (effect.file, effect.line, effect.column)),
                f"{location}: set: {quote(WRITE_MODE_SCOPE)} is engine-reserved — a story may not self-grant write mode by "
                "writing the scope key; it is set only by the write-mode gate on an operator grant")


def _agent_references(definition: LMap, modes: dict[str, Any], out: Issues, states: bool = True) -> None:
    """validateAgentReferences (loader.go:2553): meta modes, off_path and off-ramps name known agents."""
    known = set(as_map(definition.get("agents"))) | set(BUILTIN_AGENTS)
    listed = ", ".join(sorted(known))

    def check(name: Any, site: str, at: tuple[str, int, int] | None) -> None:
        if isinstance(name, str) and name and name not in known:
            out.add(at, f"agent reference {quote(name)} at {site} is undefined (known agents: {listed})")

    for mode_name in sorted(modes):
        mode = modes[mode_name]
        if isinstance(mode, Mapping):
            check(mode.get("agent"), f"meta_modes.{mode_name}.agent", mode.at if isinstance(mode, LMap) else None)
    off_path = definition.get("off_path")
    if isinstance(off_path, LMap):
        check(off_path.get("agent"), "off_path.agent", off_path.at)
    for path, state in walk_states(as_map(definition.get("states"))) if states else ():
        ramp = state.get("agent_off_ramp")
        if isinstance(ramp, LMap):
            check(ramp.get("agent"), f"states.{path}.agent_off_ramp.agent", ramp.at)


def _provider_references(definition: LMap, out: Issues, effects: bool = True) -> None:
    """validateProviderReferences (loader_providers.go:84-140)."""
    known = set(as_map(definition.get("providers")))
    listed = ", ".join(sorted(known)) or "(none declared)"
    agents = as_map(definition.get("agents"))
    for name in sorted(agents):
        provider = as_map(agents[name]).get("provider")
        if isinstance(provider, str) and provider and "{{" not in provider and provider not in known:
            out.add(agents.key_at(name), f"provider reference {quote(provider)} at agents.{name}.provider is undefined "
                                         f"(known providers: {listed})")
    for location, effect in walk_all_effects(as_map(definition.get("states"))) if effects else ():
        problem = provider_ref_issue(effect, location, known.__contains__, lambda: listed)
        if problem:
            out.add(effect.at, problem)


def provider_ref_issue(effect: LMap, location: str, known: Callable[[str], bool],
                       listed: Callable[[], str]) -> str | None:
    """validateProviderRef (loader_providers.go:84-140): `with.provider` only on host.agent.*, naming a known
    provider (`known`, `listed`: asked of `providers`, or recorded by the per-state pass; listed only if shown)."""
    provider = as_map(effect.get("with")).get("provider")
    if not isinstance(provider, str) or not provider or "{{" in provider:
        return None
    invoke = effect.get("invoke")
    if invoke and not str(invoke).startswith(AGENT_VERB):
        return f"{location}: with.provider is only meaningful on host.agent.* invocations (got invoke {quote(invoke)})"
    if not known(provider):
        return (f"provider reference {quote(provider)} at {location} with.provider is undefined (known providers: "
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
        for tool in tools_of(decl):
            if tool in MUTATION_TOOLS:
                problems.append(f"{location}: agent {quote(name)} declares mutation tool {quote(tool)} — not permitted for "
                                f"host.agent.{verb} (read-only verb); use host.agent.task for agentic work")
    if verb == "task":
        acceptance = arguments.get("acceptance")
        schema = acceptance.get("schema") if isinstance(acceptance, LMap) else None
        if not isinstance(schema, str) or not schema.strip():
            problems.append(f"{location}: host.agent.task requires acceptance.schema to be set in the with: block")
        if decl is not None and decl.get("external_side_effect") is False:
            for tool in tools_of(decl):
                if tool in NETWORK_TOOLS:
                    problems.append(f"{location}: agent {quote(name)} declares external_side_effect: false but has "
                                    f"{quote(tool)} in tools — these declarations contradict each other; an agent with "
                                    "network tools implies external side effects (Mode C). Remove external_side_effect: "
                                    "false or remove the network tool.")
    return problems


def _verb_cross_checks(definition: LMap, agents: LMap, out: Issues, effects: bool = True) -> None:
    for location, effect in walk_all_effects(as_map(definition.get("states"))) if effects else ():
        for problem in verb_issue(effect, location, agents):
            out.add(effect.at, problem)
    proposals = as_map(definition.get("proposals"))
    for name in proposals:
        execute = as_map(as_map(proposals[name]).get("execute"))
        if not execute:
            continue
        location = f"proposal {quote(name)} execute"
        shell = execute.like({"invoke": execute.get("invoke"), "with": execute.get("with")})
        for problem in verb_issue(shell, location, agents):
            out.add(execute.at, problem)
        for index, child in enumerate(effects_in(execute.get("on_complete"))):
            for problem in verb_issue(child, f"{location} on_complete[{index}]", agents):
                out.add(child.at, problem)


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
    out = Issues(definition.file)
    states = as_map(definition.get("states"))
    agents = as_map(definition.get("agents"))
    modes = meta_modes(definition)
    if not statememo.enabled():  # the whole-tree passes, in kitsoki's order (what the memoized path equals)
        _agent_refs(states, agents, out)
        _state_rules(states, agents, out)
        meta_mode_issues(definition, modes, env, out)
        _agent_references(definition, modes, out)
        _provider_references(definition, out)
        _verb_cross_checks(definition, agents, out)
        starlark_issues(definition, base_dir, out, probes)
        return out.items, False
    from core.kitsoki import agent_state_checks as each  # builds on this module's rules

    passes = each.StatePasses(definition, states, agents, base_dir, probes)
    out.items.extend(passes.take(each.REFS, each.RAMPS, each.RULES, each.DRIVES))
    meta_mode_issues(definition, modes, env, out)
    _agent_references(definition, modes, out, states=False)
    out.items.extend(passes.take(each.RAMP_REFS))
    _provider_references(definition, out, effects=False)
    out.items.extend(passes.take(each.PROVIDERS, each.VERBS))
    _verb_cross_checks(definition, agents, out, effects=False)
    out.items.extend(passes.take(each.STARLARK))
    return out.items, False
