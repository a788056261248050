"""Effects as kitsoki's loader walks them, and what every agent check shares: Go's %q, the issue list,
`${VAR}` look-ups. Read from kitsoki's internal/app at 1f4abf0e (loader.go's walkers and metaEnvVarRE)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.yamlread import ConfigIssue

NETWORK_TOOLS = ("host.WebFetch", "host.WebSearch")
ENV_RE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
"""metaEnvVarRE (loader.go:2312): the variables a `cwd:` may name."""


def quote(text: Any) -> str:
    """Go's %q of a string."""
    out = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


def as_map(value: Any) -> LMap:
    return value if isinstance(value, LMap) else LMap()


def normalise_tool(name: str) -> str:
    """normaliseAgentTool: `Edit` is `host.Edit`."""
    return name if not name or name.startswith("host.") else f"host.{name}"


def tools_of(decl: Any) -> list[str]:
    tools = decl.get("tools") if isinstance(decl, LMap) else None
    return [normalise_tool(str(t)) for t in tools] if isinstance(tools, LSeq) else []


def external_side_effect(decl: Any) -> bool:
    """The declared `external_side_effect`, else kitsoki's inference from the tools (a network tool)."""
    if isinstance(decl, LMap) and isinstance(decl.get("external_side_effect"), bool):
        return decl["external_side_effect"]
    return any(tool in NETWORK_TOOLS for tool in tools_of(decl))


def unset_env(text: str, env: Mapping[str, str]) -> str | None:
    for match in ENV_RE.finditer(text):
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


def effects_in(value: Any) -> list[LMap]:
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
    for i, effect in enumerate(effects_in(state.get("on_enter"))):
        yield f"state {quote(where)} on_enter[{i}]", effect
        for j, child in enumerate(effects_in(effect.get("on_complete"))):
            yield f"state {quote(where)} on_enter[{i}] on_complete[{j}]", child
    for intent, arcs in as_map(state.get("on")).items():
        for a, arc in enumerate(arcs if isinstance(arcs, LSeq) else ()):
            if not isinstance(arc, LMap):
                continue
            for e, effect in enumerate(effects_in(arc.get("effects"))):
                yield f"state {quote(where)} intent {quote(intent)} arc[{a}] effect[{e}]", effect
                for j, child in enumerate(effects_in(effect.get("on_complete"))):
                    yield f"state {quote(where)} intent {quote(intent)} arc[{a}] effect[{e}] on_complete[{j}]", child


def walk_states(states: LMap, prefix: str = "") -> Iterator[tuple[str, LMap]]:
    for name in sorted(states):
        state = states[name]
        if not isinstance(state, LMap):
            continue
        path = f"{prefix}.{name}" if prefix else name
        yield path, state
        if isinstance(state.get("states"), LMap):
            yield from walk_states(state["states"], path)


class Issues:
    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[ConfigIssue] = []

    def add(self, at: tuple[str, int, int] | None, message: str, key: str = "") -> None:
        file, line, column = at if at is not None else (self.file, 1, 1)
        self.items.append(ConfigIssue(file=file or self.file, line=max(line, 1), column=max(column, 1), key=key,
                                      message=message))


def at_or(value: Any, fallback: tuple[str, int, int]) -> tuple[str, int, int]:
    return value.at if isinstance(value, (LMap, LSeq)) and value.line else fallback
