"""kitsoki's load-time expression check (validateExprs in internal/app/validate_exprs.go).

kitsoki compiles, without running, every `when:` guard and every templated effect value of a loaded app,
and refuses the app when one does not compile, so a broken expression (a pongo filter such as
`{{ x|default:y }}` in a `set:`, a guard that is not a bool) fails the load instead of the first turn that
reaches it. What it walks, per state and its nested states: each transition's guard and effects, each
`on_enter` effect; per effect its own guard, the values of `set:`, `with:` and `slots:` (through lists and
maps) and `emit_intent`, then its `on_complete:` and `effects:` chains. A value with no `{{` is a literal;
one `{{ expr }}` and nothing else is a typed expression; anything else is a template. Messages are
kitsoki's, each at the file:line:col of the value it is about.
"""

from __future__ import annotations

import json
from typing import Any

from core.expr.check import compile_error
from core.expr.templates import value_error
from core.kitsoki import statememo
from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.yamlread import ConfigIssue


_VALUE_LABELS = {"set": "set", "with": "with", "slots": "emit_intent slot"}
_CHAINS = ("on_complete", "effects")
_EFFECT_FIELDS = ("when", "set", "with", "slots", "emit_intent", *_CHAINS)


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # Go's %q for the texts stories hold


def _guard_text(value: Any) -> str:
    """A `when:` as kitsoki's string field decodes it (a YAML bool or number is its text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


_EXPRESSIONS: dict = statememo.register({})
"""(id of a state, its path) -> [(the state, {}, the issues of its expressions and its children's)]."""


class _Walk:
    def __init__(self) -> None:
        self.issues: list[ConfigIssue] = []

    def add(self, at: tuple[str, int, int], message: str) -> None:
        self.issues.append(ConfigIssue(file=at[0], line=at[1], column=at[2], key="", message=message))

    def states(self, states: LMap, prefix: str) -> None:
        for name in sorted(states):
            state = states[name]
            if not isinstance(state, LMap):
                continue
            path = f"{prefix}.{name}" if prefix else name
            key = (id(state), path)  # what this reads is the state (and its children) and its path, nothing else
            known = statememo.recall(_EXPRESSIONS, key, state, {}, [])
            if known is not None:
                self.issues.extend(known)
                continue
            start = len(self.issues)
            self.state(state, path)
            statememo.keep(_EXPRESSIONS, key, state, {}, tuple(self.issues[start:]))

    def state(self, state: LMap, path: str) -> None:
        on_enter = state.get("on_enter")
        if isinstance(on_enter, LSeq):
            for index, effect in enumerate(on_enter):
                self.effect(effect, path, ("on_enter[{}]", index))
        on = state.get("on")
        if isinstance(on, LMap):
            for intent in sorted(on):
                arms = on[intent]
                for index, arm in enumerate(arms if isinstance(arms, LSeq) else ()):
                    if not isinstance(arm, LMap):
                        continue
                    guard = _guard_text(arm.get("when"))
                    if guard:
                        problem = compile_error(guard, True)
                        if problem:
                            self.add(arm.value_at("when"), f"state {_q(path)} intent {_q(intent)} "
                                                           f"transition[{index}]: guard when {_q(guard)}: {problem}")
                    effects = arm.get("effects")
                    for position, effect in enumerate(effects if isinstance(effects, LSeq) else ()):
                        self.effect(effect, path, ("intent {} transition[{}] effects[{}]", intent, index, position))
        children = state.get("states")
        if isinstance(children, LMap) and children:
            self.states(children, path)

    def effect(self, effect: Any, path: str, where: tuple) -> None:
        """`where` is how kitsoki names the effect, as (format, args...) spelled out only for a message."""
        if not isinstance(effect, LMap):
            return
        for field in _EFFECT_FIELDS:  # kitsoki's order
            if field not in effect:
                continue
            if field == "when":
                guard = _guard_text(effect["when"])
                problem = compile_error(guard, True) if guard else None
                if problem:
                    self.add(effect.value_at("when"), f"state {_q(path)} {_where(where)}: effect when {_q(guard)}: "
                                                      f"{problem}")
            elif field == "emit_intent":
                emit = effect["emit_intent"]
                if isinstance(emit, str) and "{{" in emit:
                    self.value(emit, effect.value_at("emit_intent"), path, where, ("emit_intent", None))
            elif field in _CHAINS:
                children = effect[field]
                for index, child in enumerate(children if isinstance(children, LSeq) else ()):
                    self.effect(child, path, (*where, field, index))
            else:
                values = effect[field]
                if isinstance(values, LMap):
                    label = _VALUE_LABELS[field]
                    for key in sorted(values) if len(values) > 1 else values:
                        value = values[key]
                        if isinstance(value, (LSeq, LMap)) or (isinstance(value, str) and "{{" in value):
                            self.value(value, values.value_at(key), path, where, (label, key))

    def value(self, value: Any, at: tuple[str, int, int], path: str, where: tuple, key: tuple) -> None:
        """`key` is (label, name, then [index] / .name steps into lists and maps)."""
        if isinstance(value, str):
            if "{{" not in value:
                return  # a literal (most values): nothing to compile
            problem = value_error(value)
            if problem:
                self.add(at, f"state {_q(path)} {_where(where)}: effect {_key(key)}: {problem}")
        elif isinstance(value, LSeq):
            for index, item in enumerate(value):
                self.value(item, value.item_at(index), path, where, (*key, index))
        elif isinstance(value, LMap):
            for name in sorted(value):
                self.value(value[name], value.value_at(name), path, where, (*key, name))


def _where(where: tuple) -> str:
    """kitsoki's name of an effect: `on_enter[0]`, `intent "go" transition[0] effects[1] on_complete[0]`."""
    head = where[0]
    count = head.count("{}")
    text = head.format(*(_q(arg) if isinstance(arg, str) else arg for arg in where[1:1 + count]))
    rest = where[1 + count:]
    return text + "".join(f" {rest[i]}[{rest[i + 1]}]" for i in range(0, len(rest), 2))


def _key(key: tuple) -> str:
    """`set "x"`, `with "args"[0].cmd`, `emit_intent slot "n"`, `emit_intent`."""
    label, name, *steps = key
    text = label if name is None else f"{label} {_q(name)}"
    return text + "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps)


def expression_issues(states: Any) -> list[ConfigIssue]:
    """kitsoki's reasons for every guard and templated effect value under `states` that does not compile."""
    if not isinstance(states, LMap):
        return []
    walk = _Walk()
    walk.states(states, "")
    return walk.issues
