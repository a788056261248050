"""`phases:` / `phase_templates:` expansion, as kitsoki's expandPhases (internal/app/phases.go).

A phase template declares states once; each entry of `phases.graph` instantiates them with its
parameters: `{param}` in state names, `{{ tpl.param }}` and `{{ phase.next.<arc> }}` in bodies
(an arc's next phase `p` becomes `p_executing`; terminated / ended / completed / abandoned /
failed / ended_* pass through). `cycle_budgets: {arc: N}` guards an `_executing` state's arc with
a counter `cycle__<id>__<arc>` and adds a default arm to `<id>_error`. A state already declared
in `states:` wins over the template's (only its cycle budgets are still applied). Like kitsoki,
an instance keeps only the fields kitsoki's substitution copies (type, mode, description, view,
terminal, initial, relevant_world, relevant_slots, menu, timeout, on_enter, on, intents, states),
and an instantiated effect only when/invoke/say/emit/on_error/background/target/set/increment/
with/bind/on_complete.
"""

from __future__ import annotations

import re
from typing import Any

from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.yamlread import ConfigIssue

_STATE_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TEMPLATE = re.compile(r"\{\{\s*(tpl|phase)\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\s*\}\}")
_PASS_THROUGH = frozenset({"", "terminated", "ended", "completed", "abandoned", "failed"})
_STATE_FIELDS = ("type", "mode", "description", "view", "terminal", "initial", "relevant_world", "relevant_slots",
                 "menu")
_STRUCTURED = frozenset({"next", "cycle_budgets", "on_enter"})


def _go_print(value: Any) -> str:
    """fmt.Sprint of a YAML value, for the common scalar cases."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _next_target(target: str) -> str:
    if target in _PASS_THROUGH or target.startswith("ended_"):
        return target
    return f"{target}_executing"


class _Subst:
    def __init__(self, params: dict[str, Any], nexts: dict[str, str]) -> None:
        self.params, self.nexts = params, nexts

    def string(self, text: Any) -> Any:
        if not isinstance(text, str) or "{{" not in text:
            return text

        def one(match: re.Match) -> str:
            kind, name, arc = match.group(1), match.group(2), match.group(3)
            if kind == "tpl" and name in self.params:
                return _go_print(self.params[name])
            if kind == "phase" and name == "next" and arc and arc in self.nexts:
                return _next_target(self.nexts[arc])
            return match.group(0)

        return _TEMPLATE.sub(one, text)

    def any(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, LMap):
            return value.like({key: self.any(item) for key, item in value.items()})
        if isinstance(value, LSeq):
            return value.like(self.any(item) for item in value)
        if isinstance(value, dict):
            return {key: self.any(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.any(item) for item in value]
        return value

    def view(self, view: Any) -> Any:
        return self.any(view)

    def effect(self, effect: Any) -> Any:
        if not isinstance(effect, LMap):
            return effect
        out = effect.like()
        for key in ("when", "invoke", "say", "emit", "on_error", "target"):
            if effect.get(key):
                out[key] = self.string(effect[key])
        if effect.get("background"):
            out["background"] = effect["background"]
        for key in ("set", "increment", "bind"):
            block = effect.get(key)
            if isinstance(block, LMap) and block:
                out[key] = block.like({self.string(name): (item if key == "increment" else self.any(item))
                                       for name, item in block.items()})
        if isinstance(effect.get("with"), LMap) and effect["with"]:
            out["with"] = effect["with"].like({name: self.any(item) for name, item in effect["with"].items()})
        if isinstance(effect.get("on_complete"), LSeq) and effect["on_complete"]:
            out["on_complete"] = effect["on_complete"].like(self.effect(item) for item in effect["on_complete"])
        return out

    def transition(self, arm: Any) -> Any:
        if not isinstance(arm, LMap):
            return arm
        out = arm.like()
        for key in ("target", "when", "guard_hint"):
            if arm.get(key):
                out[key] = self.string(arm[key])
        if arm.get("default"):
            out["default"] = arm["default"]
        if arm.get("view") is not None:
            out["view"] = self.view(arm["view"])
        if arm.get("emit"):
            out["emit"] = arm["emit"]
        if "push_history" in arm:
            out["push_history"] = arm["push_history"]
        if isinstance(arm.get("effects"), LSeq) and arm["effects"]:
            out["effects"] = arm["effects"].like(self.effect(effect) for effect in arm["effects"])
        return out

    def state(self, template: Any) -> Any:
        if not isinstance(template, LMap):
            return template
        out = template.like()
        for key in _STATE_FIELDS:
            if key in template and template[key] is not None:
                value = template[key]
                out[key] = self.string(value) if key in ("description", "initial") else \
                    self.view(value) if key == "view" else value
        timeout = template.get("timeout")
        if isinstance(timeout, LMap):
            out["timeout"] = timeout.like({key: self.string(item) for key, item in timeout.items()})
        if isinstance(template.get("on_enter"), LSeq) and template["on_enter"]:
            out["on_enter"] = template["on_enter"].like(self.effect(effect) for effect in template["on_enter"])
        on = template.get("on")
        if isinstance(on, LMap) and on:
            block = on.like()
            for arc, arms in on.items():
                name = self.string(arc)
                block[name] = arms.like(self.transition(arm) for arm in arms) if isinstance(arms, LSeq) else arms
                if name != arc and arc in on.marks:
                    block.marks = dict(block.marks)
                    block.marks[name] = on.marks[arc]
            out["on"] = block
        if isinstance(template.get("intents"), LMap) and template["intents"]:
            out["intents"] = template["intents"].like(template["intents"])
        if isinstance(template.get("states"), LMap) and template["states"]:
            out["states"] = template["states"].like({name: self.state(child)
                                                     for name, child in template["states"].items()})
        return out


def _copy_arms(state: LMap) -> LMap:
    """A shallow copy of a state whose `on:` may be changed (never the parsed tree itself)."""
    out = state.like(state)
    out["on"] = state["on"].like(state["on"]) if isinstance(state.get("on"), LMap) else LMap(
        file=state.file, line=state.line, column=state.column)
    return out


def _budget_guards(state: LMap, phase_id: str, cycles: dict[str, int], nexts: dict[str, str]) -> str | None:
    """kitsoki's applyCycleBudgets, on a state whose `on:` the caller owns."""
    problems = []
    on: LMap = state["on"]
    for arc, limit in cycles.items():
        if limit <= 0:
            problems.append(f'cycle_budgets["{arc}"] must be > 0')
            continue
        counter = f"cycle__{phase_id}__{arc}"
        guard = f"world.{counter} < {limit}"
        error_target = f"{phase_id}_error"
        hint = f"cycle budget exceeded for {arc}"
        fallback = LMap({"target": error_target, "default": True, "guard_hint": hint},
                        file=state.file, line=state.line, column=state.column)
        existing = on.get(arc)
        if not isinstance(existing, LSeq) or not existing:
            retry = _next_target(nexts[arc]) if nexts.get(arc) else ""
            if not retry:
                on[arc] = LSeq([fallback], file=state.file, line=state.line, column=state.column)
                continue
            on[arc] = LSeq([
                LMap({"target": retry, "when": guard,
                      "effects": LSeq([LMap({"increment": LMap({counter: 1})})])},
                     file=state.file, line=state.line, column=state.column),
                fallback], file=state.file, line=state.line, column=state.column)
            continue
        arms = existing.like()
        for arm in existing:
            if not isinstance(arm, LMap) or arm.get("default"):
                arms.append(arm)
                continue
            changed = arm.like(arm)
            when = (arm.get("when") or "").strip() if isinstance(arm.get("when"), str) else ""
            changed["when"] = f"({when}) && ({guard})" if when else guard
            effects = arm.get("effects") if isinstance(arm.get("effects"), LSeq) else LSeq()
            changed["effects"] = effects.like([LMap({"increment": LMap({counter: 1})}), *effects])
            arms.append(changed)
        arms.append(fallback)
        on[arc] = arms
    return "; ".join(problems) if problems else None


def _string_map(entry: LMap, key: str) -> dict[str, str]:
    value = entry.get(key)
    return {name: _go_print(item) for name, item in value.items()} if isinstance(value, LMap) else {}


def _int_map(entry: LMap, key: str) -> dict[str, int]:
    value = entry.get(key)
    out: dict[str, int] = {}
    if isinstance(value, LMap):
        for name, item in value.items():
            if isinstance(item, bool):
                continue
            if isinstance(item, (int, float)):
                out[name] = int(item)
            else:
                try:
                    out[name] = int(str(item))
                except ValueError:
                    pass
    return out


def expand_phases(definition: LMap, file: str) -> list[ConfigIssue]:
    """Add the states `phases:` instantiates to `definition["states"]` (a mapping the caller owns)."""
    phases = definition.get("phases")
    if not isinstance(phases, LMap) or not isinstance(phases.get("graph"), LMap) or not phases["graph"]:
        return []
    where = phases.at

    def issue(message: str, at: tuple[str, int, int] = where) -> ConfigIssue:
        return ConfigIssue(file=at[0], line=at[1], column=at[2], key="phases", message=message)

    templates = definition.get("phase_templates")
    if not isinstance(templates, LMap):
        return [issue("phases: declared but no phase_templates: present")]
    name = phases.get("template")
    if not name:
        return [issue("phases.template: required")]
    template = templates.get(str(name))
    if not isinstance(template, LMap):
        return [issue(f'phases.template "{name}": not found in phase_templates')]
    states: LMap = definition["states"]
    parameters = template.get("parameters") if isinstance(template.get("parameters"), LMap) else LMap()
    template_states = template.get("states") if isinstance(template.get("states"), LMap) else LMap()
    checkpoint = definition.get("checkpoint_intents") if isinstance(definition.get("checkpoint_intents"), LMap) else None
    issues: list[ConfigIssue] = []
    graph: LMap = phases["graph"]
    for phase_id in sorted(graph):
        entry = graph[phase_id]
        at = graph.key_at(phase_id)
        if not isinstance(entry, LMap):
            issues.append(issue(f'phases.graph["{phase_id}"]: empty entry', at))
            continue
        params: dict[str, Any] = {}
        for param, spec in parameters.items():
            if isinstance(spec, LMap) and spec.get("default") is not None:
                params[param] = spec["default"]
        params.update({key: value for key, value in entry.items() if key not in _STRUCTURED})
        params["id"] = phase_id
        missing = [param for param in sorted(parameters)
                   if isinstance(parameters[param], LMap) and parameters[param].get("required") and param not in params]
        if missing:
            issues.extend(issue(f'phases.graph["{phase_id}"]: missing required template parameter "{param}"', at)
                          for param in missing)
            continue
        nexts, cycles = _string_map(entry, "next"), _int_map(entry, "cycle_budgets")
        override = entry.get("on_enter")
        if override is not None and not isinstance(override, LSeq):
            issues.append(issue(f'phases.graph["{phase_id}"]: on_enter: expected a list of effects, got '
                                f"{type(override).__name__}", at))
            continue
        subst = _Subst(params, nexts)
        for template_name in sorted(template_states):
            unknown: list[str] = []

            def name_part(match: re.Match) -> str:
                if match.group(1) not in params:
                    unknown.append(match.group(1))
                    return match.group(0)
                return _go_print(params[match.group(1)])

            expanded = _STATE_NAME.sub(name_part, template_name)
            if unknown:
                issues.append(issue(f'phases.graph["{phase_id}"]: state name "{template_name}": unknown parameter '
                                    f'"{unknown[0]}"', at))
                continue
            existing = states.get(expanded)
            if existing is not None:
                if expanded.endswith("_executing") and cycles and isinstance(existing, LMap):
                    owned = _copy_arms(existing)
                    problem = _budget_guards(owned, phase_id, cycles, nexts)
                    states[expanded] = owned
                    if problem:
                        issues.append(issue(f'phases.graph["{phase_id}"]: {problem}', at))
                continue
            instance = subst.state(template_states[template_name])
            if not isinstance(instance, LMap):
                continue
            if expanded.endswith("_executing"):
                if cycles:
                    instance = _copy_arms(instance)
                    problem = _budget_guards(instance, phase_id, cycles, nexts)
                    if problem:
                        issues.append(issue(f'phases.graph["{phase_id}"]: {problem}', at))
                        continue
                if override is not None:
                    instance["on_enter"] = override.like(subst.effect(effect) for effect in override)
            if expanded.endswith("_awaiting_reply") and checkpoint:
                intents = instance.get("intents")
                intents = intents.like(intents) if isinstance(intents, LMap) else LMap()
                for intent_name, intent in checkpoint.items():
                    intents.setdefault(intent_name, intent)
                instance["intents"] = intents
            states[expanded] = instance
    return issues
