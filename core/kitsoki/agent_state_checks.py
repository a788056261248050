"""definition_agent_issues' passes over states (core.kitsoki.agent_checks), one state at a time.

The whole-tree passes walk every state of the folded app once per pass; a staged draft's reload would walk
them all again in every story importing the drafted one. Here each state's issues (for every pass, with its
children's) are remembered by the state's identity, its path, the app's folder and file, together with what
they asked of the app around the state (whether an agent or a provider is declared, what an agent declares
that the verb checks read, the known agents' listing, a starlark script's files) and the answers
(core.kitsoki.statememo); a state whose questions all get the same answers is not checked again. The issues
come out pass by pass in the whole-tree passes' order (sorted states for the ones that walk them sorted, as
written for the effect walks), so they are the same list (tests/test_state_memo.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.kitsoki import probed, statememo
from core.kitsoki.agent_checks import (
    AGENT_VERB,
    BUILTIN_AGENTS,
    agent_ref_issue,
    drive_rule,
    provider_ref_issue,
    ramp_rule,
    ref_roots,
    verb_issue,
    write_rule,
)
from core.kitsoki.effect_walk import (
    Issues,
    as_map,
    at_or,
    effects_in,
    external_side_effect,
    quote,
    state_effects,
    tools_of,
)
from core.kitsoki.probed import Probes
from core.kitsoki.starlark_checks import starlark_rule
from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.yamlread import ConfigIssue

REFS, RAMPS, RULES, DRIVES, RAMP_REFS, PROVIDERS, VERBS, STARLARK = range(8)
"""The passes, in the order definition_agent_issues makes them."""
_SORTED_PASSES = frozenset({REFS, RAMPS, RULES, DRIVES, RAMP_REFS})
"""The passes over states in sorted order (_walk_states); the others walk them as written (walk_all_effects)."""
_AGENT_VERDICTS: dict = statememo.register({})
"""(id of a state, its path, the app's folder and file) -> [(the state, what its checks asked -> the answer,
the issues of each pass over the state and its children)]."""


def _decl_shape(decl: Any) -> Any:
    """What verb_issue reads of an agent's declaration (compared by value)."""
    if not isinstance(decl, LMap):
        return ("none",)
    return ("agent", tuple(tools_of(decl)), decl.get("external_side_effect") is False)


class _PerState:
    """definition_agent_issues' passes over states, one state (and its children) at a time, each state's
    issues remembered by its identity with what they asked of the app (agents, providers, files)."""

    def __init__(self, definition: LMap, agents: LMap, base_dir: Path | None, probes: Probes | None) -> None:
        self.definition, self.agents, self.base_dir, self.probes = definition, agents, base_dir, probes
        self.file = definition.file
        self.known_agents = set(agents) | set(BUILTIN_AGENTS)
        self.providers = set(as_map(definition.get("providers")))
        self.stack: list[dict] = []
        self.answers = {
            "a?": lambda name: name in agents,
            "ext": self._external,
            "known?": lambda name: name in self.known_agents,
            "listed": lambda _: ", ".join(sorted(self.known_agents)),
            "prov?": lambda name: name in self.providers,
            "plisted": lambda _: ", ".join(sorted(self.providers)) or "(none declared)",
            "decl": lambda name: _decl_shape(agents.get(name) if name else None),
            "e": lambda path: probes.exists(path) if probes is not None else probed.exists(path),
            "f": lambda path: probes.isfile(path) if probes is not None else probed.isfile(path),
        }

    def ask(self, kind: str, name: Any) -> Any:
        found = self.answers[kind](name)
        for record in self.stack:
            record[(kind, name)] = found
        return found

    def _external(self, name: str) -> bool:
        agents = self.agents
        return name in agents and isinstance(agents[name], LMap) and external_side_effect(agents[name])

    def subtree(self, path: str, state: LMap) -> tuple:
        key = (id(state), path, str(self.base_dir), self.file)
        known = statememo.recall(_AGENT_VERDICTS, key, state, self.answers, self.stack)
        if known is not None:
            return known
        record: dict = {}
        self.stack.append(record)
        try:
            own = self.own(path, state)
            children = state.get("states")
            if isinstance(children, LMap):
                subs = {name: self.subtree(f"{path}.{name}", child) for name, child in children.items()
                        if isinstance(child, LMap)}
                for index in range(len(own)):
                    for name in (sorted(subs) if index in _SORTED_PASSES else subs):
                        own[index].extend(subs[name][index])
        finally:
            self.stack.pop()
        result = tuple(tuple(items) for items in own)
        statememo.keep(_AGENT_VERDICTS, key, state, record, result)
        return result

    def own(self, path: str, state: LMap) -> list[list[ConfigIssue]]:
        outs = [Issues(self.file) for _ in range(8)]
        # _agent_refs
        out = outs[REFS]

        def chain(effect: LMap, location: str) -> None:
            problem = agent_ref_issue(effect, location, lambda name: self.ask("a?", name))
            if problem:
                out.add(at_or(effect, (effect.file, effect.line, effect.column)), problem)
            for index, child in enumerate(effects_in(effect.get("on_complete"))):
                chain(child, f"{location} on_complete[{index}]")

        for effect, location in ref_roots(path, state):
            chain(effect, location)
        # _state_rules, its three passes
        ramp_rule(path, state, outs[RAMPS])
        write_rule(path, state, lambda name: self.ask("ext", name), outs[RULES])
        drive_rule(path, state, outs[DRIVES])
        # _agent_references: off-ramps
        ramp = state.get("agent_off_ramp")
        if isinstance(ramp, LMap):
            name = ramp.get("agent")
            if isinstance(name, str) and name and not self.ask("known?", name):
                outs[RAMP_REFS].add(ramp.at, f"agent reference {quote(name)} at states.{path}.agent_off_ramp.agent is "
                                              f"undefined (known agents: {self.ask('listed', None)})")
        # the walk_all_effects passes: providers, verbs, starlark
        for location, effect in state_effects(path, state):
            self._provider(location, effect, outs[PROVIDERS])
            for problem in self._verbs(effect, location):
                outs[VERBS].add(effect.at, problem)
            starlark_rule(location, effect, self.base_dir, lambda path: self.ask("e", path),
                          lambda path: self.ask("f", path), outs[STARLARK])
        return [out.items for out in outs]

    def _provider(self, location: str, effect: LMap, out: Issues) -> None:
        problem = provider_ref_issue(effect, location, lambda name: self.ask("prov?", name),
                                     lambda: self.ask("plisted", None))
        if problem:
            out.add(effect.at, problem)

    def _verbs(self, effect: LMap, location: str) -> list[str]:
        arguments = effect.get("with")
        invoke = str(effect.get("invoke") or "")
        if not isinstance(arguments, LMap) or not invoke.startswith(AGENT_VERB):
            return []
        name = arguments.get("agent") if isinstance(arguments.get("agent"), str) else ""
        if "{{" in name:
            name = ""
        shape = self.ask("decl", name) if name else ("none",)
        return verb_issue(effect, location, _ShapedAgents(name, shape))

class _ShapedAgents:
    """The one agent verb_issue looks up, as its recorded shape: `get(name)` gives a declaration with
    just what verb_issue reads (its tools and whether it declares external_side_effect: false)."""

    def __init__(self, name: str, shape: Any) -> None:
        self.name, self.shape = name, shape

    def get(self, name: str, default: Any = None) -> Any:
        if name != self.name or self.shape[0] != "agent":
            return default
        decl = LMap({"tools": LSeq(self.shape[1])})
        if self.shape[2]:
            decl["external_side_effect"] = False
        return decl


class StatePasses:
    """Every state's issues, by pass; `take(*passes)` lists them as the whole-tree passes would."""

    def __init__(self, definition: LMap, states: LMap, agents: LMap, base_dir: Path | None,
                 probes: Probes | None) -> None:
        per_state = _PerState(definition, agents, base_dir, probes)
        self.parts = {name: per_state.subtree(name, state) for name, state in states.items()
                      if isinstance(state, LMap)}

    def take(self, *which: int) -> list[ConfigIssue]:
        out: list[ConfigIssue] = []
        for index in which:
            for name in (sorted(self.parts) if index in _SORTED_PASSES else self.parts):
                out.extend(self.parts[name][index])
        return out
