"""`imports:` folded as kitsoki folds them (internal/app/imports.go, imports_rewriter.go).

Each import binds a child story under an alias. The child becomes one compound state at the alias
(`type: compound`, `initial:` its entry), its states kept by their own names beneath it; every
world key and intent of the child is renamed `<alias>__<name>` and every reference to them
(`world.x` in guards, templates, set/bind keys, relevant_world, on: keys, default_intent, menus,
`available('x')` helpers ...) is rewritten to match; a bare target becomes a `../` sibling walk
so it still lands inside the wrapper; `@exit:<name>` becomes the importer's `exits.<name>.to` with
that exit's `set:` appended; re-entry resets the child's world to its defaults and `world_in`
projects the importer's values in (synthesised `on_enter` sets on the wrapper); host interfaces
lift as `<alias>__<iface>` with `host_bindings` overriding their defaults; `intents.export` mirrors
importer intents into the child's namespace and `intents.import` lifts exported child intents
under their bare names. Nothing here mutates its inputs: folded states are new mappings.

Where a `source:` is: core/kitsoki/import_sources.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.kitsoki import probed, statememo
from core.kitsoki.import_sources import (  # noqa: F401 - where a source is; importable from here as before
    KITSOKI_PREFIX,
    Resolved,
    SourceError,
    Sources,
    find_repo_root,
    resolve_source,
)
from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.yamlread import ConfigIssue

ALIAS_RE = re.compile(r"^[a-z][a-z0-9_]*$")
RESERVED_WORLD_KEYS = frozenset({"last_error", "host_error", "write_mode_scope", "session_id"})
"""Engine-owned world keys: never renamed by a fold, always valid in relevant_world."""
EXIT_PREFIX = "@exit:"
ALIASES_KEY = "__intent_aliases__"
"""Internal key on a folded state: authored intent name -> its renamed on: key (kitsoki's IntentAliases)."""

_WORLD_REF = re.compile(r"\bworld\.([A-Za-z_][A-Za-z0-9_]*)", re.ASCII)
_HELPER_REF = re.compile(r"\b(available|blocked|blocked_reason|intent_status)\((['\"])([A-Za-z_][A-Za-z0-9_]*)['\"]\)",
                         re.ASCII)


# --- the rewriter -------------------------------------------------------------------------------------


@dataclass
class Rewriter:
    """Renames one child's world keys, intents, agents and interfaces under `alias`."""

    alias: str
    world: frozenset[str]
    intents: frozenset[str]
    agents: frozenset[str]
    ifaces: frozenset[str]
    exported: frozenset[str] = frozenset()

    def name(self, key: str) -> str:
        return f"{self.alias}__{key}"

    def intent_ref(self, name: Any) -> Any:
        if not isinstance(name, str) or not name or name == "*":
            return name
        if name in self.intents or name in self.exported:
            return self.name(name)
        return name

    def world_key(self, key: str) -> str:
        return self.name(key) if key in self.world else key

    def expr(self, text: Any) -> Any:
        if not isinstance(text, str) or not text:
            return text
        if "world." in text and self.world:
            text = _WORLD_REF.sub(lambda m: f"world.{self.name(m.group(1))}" if m.group(1) in self.world
                                  else m.group(0), text)
        if "(" in text and (self.intents or self.exported):
            def helper(m: re.Match) -> str:
                renamed = self.intent_ref(m.group(3))
                return m.group(0) if renamed == m.group(3) else f"{m.group(1)}({m.group(2)}{renamed}{m.group(2)})"
            text = _HELPER_REF.sub(helper, text)
        return text

    def any(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.expr(value)
        if isinstance(value, LMap):
            return value.like({key: self.any(item) for key, item in value.items()})
        if isinstance(value, LSeq):
            return value.like(self.any(item) for item in value)
        return value

    def view(self, value: Any) -> Any:
        """Templates in a view; choice / media intent fields are intent references."""
        if isinstance(value, str):
            return self.expr(value)
        if isinstance(value, LMap):
            return value.like({key: (self.intent_ref(item) if key in ("intent", "annotate_intent") else
                                     self.view(item)) for key, item in value.items()})
        if isinstance(value, LSeq):
            return value.like(self.view(item) for item in value)
        return value

    def intent(self, intent: Any) -> Any:
        if not isinstance(intent, LMap):
            return intent
        out = intent.like(intent)
        for key in ("description", "title"):
            if key in out:
                out[key] = self.expr(out[key])
        if isinstance(out.get("examples"), LSeq):
            out["examples"] = out["examples"].like(self.expr(item) for item in out["examples"])
        slots = out.get("slots")
        if isinstance(slots, LMap):
            renamed = slots.like()
            for slot_name, slot in slots.items():
                if isinstance(slot, LMap):
                    slot = slot.like(slot)
                    for key in ("description", "prompt", "validator", "format_hint"):
                        if key in slot:
                            slot[key] = self.expr(slot[key])
                renamed[slot_name] = slot
            out["slots"] = renamed
        return out

    def effect(self, effect: Any) -> Any:
        if not isinstance(effect, LMap):
            return effect
        out = effect.like(effect)
        for key in ("when", "say", "id", "emit_intent"):
            if key in out:
                out[key] = self.expr(out[key])
        if isinstance(out.get("slots"), LMap):
            out["slots"] = self.any(out["slots"])
        invoke = out.get("invoke")
        if isinstance(invoke, str) and invoke.startswith("iface."):
            name, dot, op = invoke[len("iface."):].partition(".")
            if dot and name and name in self.ifaces:
                out["invoke"] = f"iface.{self.name(name)}.{op}"
        for key in ("set", "increment", "bind"):
            block = out.get(key)
            if isinstance(block, LMap):
                renamed = block.like()
                renamed.marks = {self.world_key(name): mark for name, mark in block.marks.items()}
                for name, item in block.items():
                    renamed[self.world_key(name)] = item if key == "increment" else self.expr(item) \
                        if key == "bind" else self.any(item)
                out[key] = renamed
        with_ = out.get("with")
        if isinstance(with_, LMap):
            renamed = with_.like()
            for name, item in with_.items():
                if name == "agent" and isinstance(item, str) and "{{" not in item and item in self.agents:
                    renamed[name] = self.name(item)
                else:
                    renamed[name] = self.any(item)
            out["with"] = renamed
        if isinstance(out.get("on_complete"), LSeq):
            out["on_complete"] = out["on_complete"].like(self.effect(item) for item in out["on_complete"])
        return out

    def state(self, state: Any, depth: int, retarget: Any, fold: Any = None) -> Any:
        """A rewritten copy of a child state (and its children, each through `fold(child, depth)` when
        given); `retarget` maps a target string."""
        if not isinstance(state, LMap):
            return state
        out = state.like(state)
        if "view" in out:
            out["view"] = self.view(out["view"])
        for key in ("description", "initial"):
            if key in out:
                out[key] = self.expr(out[key])
        if isinstance(out.get("relevant_world"), LSeq):
            out["relevant_world"] = out["relevant_world"].like(
                self.world_key(key) if isinstance(key, str) else key for key in out["relevant_world"])
        aliases = dict(state.get(ALIASES_KEY) or {})
        on = out.get("on")
        if isinstance(on, LMap):
            renamed = on.like()
            marks = {}
            for intent_name, arms in on.items():
                new_name = self.intent_ref(intent_name)
                if isinstance(arms, LSeq):
                    arms = arms.like(self.transition(arm, retarget) for arm in arms)
                renamed[new_name] = arms
                if intent_name in on.marks:
                    marks[new_name] = on.marks[intent_name]
                if new_name != intent_name:
                    for key, value in list(aliases.items()):
                        if value == intent_name:
                            aliases[key] = new_name
                    aliases[intent_name] = new_name
            renamed.marks = marks
            out["on"] = renamed
        if aliases:
            out[ALIASES_KEY] = aliases
        if "default_intent" in out:
            out["default_intent"] = self.intent_ref(out["default_intent"])
        routing = out.get("contextual_routing")
        if isinstance(routing, LMap):
            routing = routing.like(routing)
            for key in ("room_chat", "plan_accept_intent", "plan_refine_intent"):
                if routing.get(key):
                    routing[key] = self.intent_ref(routing[key])
            out["contextual_routing"] = routing
        if isinstance(out.get("on_enter"), LSeq):
            out["on_enter"] = out["on_enter"].like(self.effect(item) for item in out["on_enter"])
        ramp = out.get("agent_off_ramp")
        if isinstance(ramp, LMap) and ramp.get("agent") in self.agents:
            ramp = ramp.like(ramp)
            ramp["agent"] = self.name(ramp["agent"])
            out["agent_off_ramp"] = ramp
        intents = out.get("intents")
        if isinstance(intents, LMap):
            renamed = intents.like()
            renamed.marks = {self.intent_ref(name): mark for name, mark in intents.marks.items()}
            for name, intent in intents.items():
                renamed[self.intent_ref(name)] = self.intent(intent)
            out["intents"] = renamed
        if isinstance(out.get("menu"), LSeq):
            out["menu"] = out["menu"].like(self.intent_ref(item) for item in out["menu"])
        timeout = out.get("timeout")
        if isinstance(timeout, LMap) and timeout.get("target"):
            timeout = timeout.like(timeout)
            timeout["target"] = retarget(timeout["target"], depth)
            out["timeout"] = timeout
        children = out.get("states")
        if isinstance(children, LMap):
            out["states"] = children.like({name: (fold(child, depth + 1) if fold is not None else
                                                  self.state(child, depth + 1, retarget))
                                           for name, child in children.items()})
        return out

    def transition(self, arm: Any, retarget: Any) -> Any:
        if not isinstance(arm, LMap):
            return arm
        out = arm.like(arm)
        for key in ("when", "guard_hint"):
            if key in out:
                out[key] = self.expr(out[key])
        if "view" in out:
            out["view"] = self.view(out["view"])
        if isinstance(out.get("effects"), LSeq):
            out["effects"] = out["effects"].like(self.effect(item) for item in out["effects"])
        return out


# --- folding ------------------------------------------------------------------------------------------


_FOLDS: dict[tuple, list] = statememo.register({})
"""(id of a child state, depth, alias) -> [(the state, what its fold asked -> the
answer, the folded state, issues of the rewrite pass, issues of the retarget pass)]."""


def _remember(key: tuple, entry: tuple) -> None:
    statememo.trim(_FOLDS)
    entries = _FOLDS.setdefault(key, [])
    entries.append(entry)
    if len(entries) > statememo.MAX_ENTRIES:
        del entries[0]


def _memo_on() -> bool:
    return statememo.enabled()


class _Watched:
    """A rewriter's name set that tells every fold under way what was asked of it (core.kitsoki.imports
    fold_state keeps a folded state only while the same questions get the same answers)."""

    __slots__ = ("items", "kind", "stack")

    def __init__(self, items: frozenset[str], kind: str, stack: list[dict]) -> None:
        self.items, self.kind, self.stack = items, kind, stack

    def __contains__(self, name: Any) -> bool:
        found = name in self.items
        for record in self.stack:
            record[(self.kind, name)] = found
        return found

    def __bool__(self) -> bool:
        found = bool(self.items)
        for record in self.stack:
            record[(self.kind.upper(), None)] = found
        return found


def _issue(at: tuple[str, int, int], key: str, message: str) -> ConfigIssue:
    return ConfigIssue(file=at[0], line=at[1], column=at[2], key=key, message=message)


def _is_zero(value: Any) -> bool:
    return value is None or value == "" or value == 0 or value is False or (
        isinstance(value, (list, dict)) and not value)


def _exit_requires(states: LMap, exits: LMap, defaulted: set[str], alias: str, at: tuple[str, int, int],
                   prefix: str = "") -> list[ConfigIssue]:
    issues = []
    for name, state in states.items():
        if not isinstance(state, LMap):
            continue
        path = f"{prefix}.{name}" if prefix else name
        on = state.get("on")
        if isinstance(on, LMap):
            for intent, arms in on.items():
                for arm in arms if isinstance(arms, LSeq) else ():
                    target = arm.get("target") if isinstance(arm, LMap) else None
                    if not isinstance(target, str) or not target.startswith(EXIT_PREFIX):
                        continue
                    exit_name = target[len(EXIT_PREFIX):]
                    spec = exits.get(exit_name)
                    requires = spec.get("requires") if isinstance(spec, LMap) else None
                    if not requires:
                        continue
                    set_keys: set[str] = set()
                    for effect in arm.get("effects") or ():
                        if isinstance(effect, LMap):
                            for key in ("set", "bind", "increment"):
                                if isinstance(effect.get(key), LMap):
                                    set_keys.update(effect[key])
                    missing = [key for key in requires if key not in set_keys and key not in defaulted]
                    if missing:
                        issues.append(_issue(arm.at if isinstance(arm, LMap) else at, f"imports.{alias}",
                                             f'imports.{alias}: state "{path}" intent "{intent}" transitions to '
                                             f"@exit:{exit_name} but does not set required key(s) "
                                             f"[{' '.join(missing)}] (declared in child.exits.{exit_name}.requires)"))
        if isinstance(state.get("states"), LMap):
            issues.extend(_exit_requires(state["states"], exits, defaulted, alias, at, path))
    return issues


_WRAPPERS: dict[tuple, list] = statememo.register({})
"""(alias, where the import is declared) -> [the wrapper state a fold made there last]."""


def _same_wrapper(alias: str, at: tuple[str, int, int], wrapper: LMap) -> LMap:
    """The wrapper state the last fold of this import made, when it holds the very same folded states and
    equal everything else (entry, order, where, the world it sets on entry); else `wrapper`. A child that
    did not change then folds to the same object as its states do (fold_state), so the memos of an
    importer's importer (its own fold, the checks) find it too, instead of starting over at each new
    wrapper (a draft that adds one room to bugfix made dev-story's every import a new state for
    kitsoki-dev's fold and checks)."""
    if not statememo.enabled():
        return wrapper
    key = (alias, at)
    kept = _WRAPPERS.get(key)
    if kept is not None and _wrapper_equal(kept[0], wrapper):
        return kept[0]
    statememo.trim(_WRAPPERS)
    _WRAPPERS[key] = [wrapper]
    return wrapper


def _wrapper_equal(old: LMap, new: LMap) -> bool:
    if list(old) != list(new) or old.get("initial") != new.get("initial") or old.at != new.at:
        return False
    old_states, new_states = old["states"], new["states"]
    if list(old_states) != list(new_states) or old_states.marks != new_states.marks or old_states.at != new_states.at:
        return False
    if any(old_states[name] is not new_states[name] for name in new_states):
        return False
    return statememo.located(old.get("on_enter")) == statememo.located(new.get("on_enter"))


def fold_child(parent: LMap, alias: str, spec: LMap, child: LMap, at: tuple[str, int, int]) -> list[ConfigIssue]:
    """Fold `child` (a loaded AppDef, not changed) into `parent` (whose top-level blocks the caller
    owns: states, world, intents, hosts, host_interfaces, agents, meta_modes) under `alias`."""
    issues: list[ConfigIssue] = []
    key = f"imports.{alias}"
    child_world = child.get("world") if isinstance(child.get("world"), LMap) else LMap()
    child_intents = child.get("intents") if isinstance(child.get("intents"), LMap) else LMap()
    child_agents = child.get("agents") if isinstance(child.get("agents"), LMap) else LMap()
    child_ifaces = child.get("host_interfaces") if isinstance(child.get("host_interfaces"), LMap) else LMap()
    child_states = child.get("states") if isinstance(child.get("states"), LMap) else LMap()
    child_exits = child.get("exits") if isinstance(child.get("exits"), LMap) else LMap()
    intents_spec = spec.get("intents") if isinstance(spec.get("intents"), LMap) else LMap()
    rewriter = Rewriter(alias, frozenset(k for k in child_world if k not in RESERVED_WORLD_KEYS),
                        frozenset(child_intents), frozenset(child_agents), frozenset(child_ifaces),
                        frozenset(intents_spec.get("export") or ()))

    entry = spec.get("entry") or (child.get("root") if isinstance(child.get("root"), str) else "")
    if not entry:
        return [_issue(at, key, f"imports.{alias}: entry is required (child declares no root either)")]
    exits_spec = spec.get("exits") if isinstance(spec.get("exits"), LMap) else LMap()
    for name in exits_spec:
        if name not in child_exits:
            issues.append(_issue(exits_spec.key_at(name), f"{key}.exits.{name}",
                                 f'imports.{alias}: exits.{name}: child does not declare an exit named "{name}"'))

    defaulted = {k for k, v in child_world.items() if k not in RESERVED_WORLD_KEYS and isinstance(v, LMap)
                 and v.get("default") is not None and not _is_zero(v.get("default"))}
    issues.extend(_exit_requires(child_states, child_exits, defaulted, alias, at))

    stack: list[dict] = []
    """The recorders of the folds of states under way (innermost last): what each one asked."""

    def import_at() -> tuple[str, int, int]:
        """Where the import is declared, for an issue (asked, so a fold that raised none does not
        depend on it: an edit above the import moves it)."""
        for record in stack:
            record[("@", None)] = at
        return at

    def exit_of(name: Any) -> Any:
        mapped = exits_spec.get(name)
        if stack:  # asked as what it holds, where (an edit elsewhere in the importer parses it anew)
            shape = statememo.located(mapped)
            for record in stack:
                record[("e", name)] = shape
        return mapped

    def retarget(target: Any, depth: int, sink: list[ConfigIssue]) -> Any:
        if not isinstance(target, str) or target in ("", ".") or "{{" in target:
            return target
        if target.startswith(EXIT_PREFIX):
            name = target[len(EXIT_PREFIX):]
            mapped = exit_of(name)
            if isinstance(mapped, LMap) and mapped.get("to"):
                return str(mapped["to"])
            sink.append(_issue(import_at(), key, f"imports.{alias}: child uses @exit:{name} but parent does not map it"))
            return target
        if not target.startswith("..") and ("/" in target or "." in target):
            return target
        if target.startswith(".."):
            dotdots = 0
            for segment in target.split("/"):
                if segment != "..":
                    break
                dotdots += 1
            if dotdots > depth + 1:
                sink.append(_issue(import_at(), key, f'imports.{alias}: target "{target}" walks above the child\'s namespace '
                                              f"(depth {depth}, {dotdots} `..` segments); cross-boundary parent "
                                              "targets are forbidden"))
            return target
        return "../" * (depth + 1) + target

    def retarget_own(state: Any, depth: int, sink: list[ConfigIssue]) -> Any:
        """Targets of a rewritten state (its children are done): arms (with @exit: world_out sets), effects."""
        if not isinstance(state, LMap):
            return state

        def retarget(target: Any, depth: int) -> Any:
            return retarget_to(target, depth, sink)
        on = state.get("on")
        if isinstance(on, LMap):
            for intent_name, arms in list(on.items()):
                if not isinstance(arms, LSeq):
                    continue
                new_arms = arms.like()
                for arm in arms:
                    if not isinstance(arm, LMap):
                        new_arms.append(arm)
                        continue
                    arm = arm.like(arm)
                    original = arm.get("target")
                    effects = arm.get("effects") if isinstance(arm.get("effects"), LSeq) else None
                    if isinstance(original, str) and original.startswith(EXIT_PREFIX):
                        mapped = exit_of(original[len(EXIT_PREFIX):])
                        if isinstance(mapped, LMap) and isinstance(mapped.get("set"), LMap) and mapped["set"]:
                            effects = (effects.like(effects) if effects is not None else LSeq(
                                file=arm.file, line=arm.line, column=arm.column))
                            effects.append(LMap({"set": mapped["set"]}, file=arm.file, line=arm.line,
                                                column=arm.column))
                    if "target" in arm:
                        arm["target"] = retarget(original, depth)
                    if effects is not None:
                        arm["effects"] = effects.like(_effect_targets(e, retarget, depth) for e in effects)
                    new_arms.append(arm)
                on[intent_name] = new_arms
        if isinstance(state.get("on_enter"), LSeq):
            state["on_enter"] = state["on_enter"].like(_effect_targets(e, retarget, depth) for e in state["on_enter"])
        return state

    retarget_to = retarget
    watched = Rewriter(alias, _Watched(rewriter.world, "w", stack), _Watched(rewriter.intents, "i", stack),
                       _Watched(rewriter.agents, "a", stack), _Watched(rewriter.ifaces, "f", stack),
                       _Watched(rewriter.exported, "x", stack))
    sets = {"w": rewriter.world, "i": rewriter.intents, "a": rewriter.agents, "f": rewriter.ifaces,
            "x": rewriter.exported}

    def still(record: dict) -> bool:
        for (kind, name), answer in record.items():
            if kind == "e":
                if statememo.located(exits_spec.get(name)) != answer:
                    return False
            elif kind == "@":
                if at != answer:
                    return False
            elif kind.isupper():
                if bool(sets[kind.lower()]) is not answer:
                    return False
            elif (name in sets[kind]) is not answer:
                return False
        return True

    def fold_state(state: Any, depth: int) -> tuple[Any, list[ConfigIssue], list[ConfigIssue]]:
        """A child state rewritten and retargeted, with the issues of each pass (in the order the two
        passes over a whole subtree would raise them). Remembered by the state's identity (parsed
        trees are never mutated) with every name the fold asked about and its answer: a state of an
        unchanged file folds to the same object while those answers hold (core.kitsoki.checks's memo
        of check verdicts then finds it)."""
        if not isinstance(state, LMap):
            return state, [], []
        memo_key = (id(state), depth, alias)
        for entry in _FOLDS.get(memo_key, ()) if _memo_on() else ():
            if entry[0] is state and still(entry[1]):
                for record in stack:
                    record.update(entry[1])
                return entry[2], list(entry[3]), list(entry[4])
        record: dict = {}
        stack.append(record)
        own_a: list[ConfigIssue] = []
        kids: list[tuple[list, list]] = []

        def fold(child: Any, child_depth: int) -> Any:
            out, a, b = fold_state(child, child_depth)
            kids.append((a, b))
            return out

        try:
            out = watched.state(state, depth, lambda target, d: retarget(target, d, own_a), fold)
            own_b: list[ConfigIssue] = []
            retarget_own(out, depth, own_b)
        finally:
            stack.pop()
        first = own_a + [issue for a, _ in kids for issue in a]
        second = own_b + [issue for _, b in kids for issue in b]
        if _memo_on():
            _remember(memo_key, (state, record, out, tuple(first), tuple(second)))
        return out, first, second

    def fold_intent(intent: Any) -> Any:
        """rewriter.intent, remembered as fold_state remembers states (so a check's lookup of an
        unchanged intent finds the same object)."""
        if not isinstance(intent, LMap):
            return intent
        memo_key = (id(intent), -1, alias)
        for entry in _FOLDS.get(memo_key, ()) if _memo_on() else ():
            if entry[0] is intent and still(entry[1]):
                return entry[2]
        record: dict = {}
        stack.append(record)
        try:
            out = watched.intent(intent)
        finally:
            stack.pop()
        if _memo_on():
            _remember(memo_key, (intent, record, out, (), ()))
        return out

    states = parent.setdefault("states", LMap())
    if alias in states:
        return issues + [_issue(at, key, f"imports.{alias}: alias collides with existing parent state of the same name")]
    wrapper_children = LMap(file=at[0], line=at[1], column=at[2])
    for name in sorted(child_states):
        folded, first, second = fold_state(child_states[name], 0)
        issues.extend(first)
        issues.extend(second)
        wrapper_children[name] = folded
    wrapper_children.marks = child_states.marks
    on_enter = LSeq(file=at[0], line=at[1], column=at[2])
    world_in = spec.get("world_in") if isinstance(spec.get("world_in"), LMap) else LMap()
    for name in sorted(child_world):
        var = child_world[name]
        if name in RESERVED_WORLD_KEYS or name in world_in:
            continue
        default = var.get("default") if isinstance(var, LMap) and ({"type", "default", "values"} & set(var)) else var
        if default is None:
            continue
        on_enter.append(LMap({"set": LMap({rewriter.name(name): default})}, file=at[0], line=at[1], column=at[2]))
    for name in sorted(world_in):
        if name not in rewriter.world:
            issues.append(_issue(world_in.key_at(name), f"{key}.world_in.{name}",
                                 f'imports.{alias}: world_in.{name}: child does not declare world key "{name}"'))
            continue
        on_enter.append(LMap({"set": LMap({rewriter.name(name): world_in[name]})}, file=at[0], line=at[1],
                             column=at[2]))
    wrapper = LMap({"type": "compound", "initial": str(entry), "states": wrapper_children},
                   file=at[0], line=at[1], column=at[2])
    wrapper.kline, wrapper.kcol = at[1], at[2]
    if on_enter:
        wrapper["on_enter"] = on_enter
    wrapper["__import__"] = alias
    states[alias] = _same_wrapper(alias, at, wrapper)

    world = parent.setdefault("world", LMap())
    for name in sorted(child_world):
        if name in RESERVED_WORLD_KEYS:
            continue
        new = rewriter.name(name)
        if new in world:
            issues.append(_issue(at, key, f'imports.{alias}: world key "{new}" collides'))
            continue
        world[new] = child_world[name]
    intents = parent.setdefault("intents", LMap())
    for name in sorted(child_intents):
        new = rewriter.name(name)
        if new in intents:
            issues.append(_issue(at, key, f'imports.{alias}: intent "{new}" collides'))
            continue
        intents[new] = fold_intent(child_intents[name])

    hosts = parent.setdefault("hosts", LSeq())
    mode = spec.get("hosts") or "inherit"
    if mode == "inherit":
        for host in child.get("hosts") or ():
            if host not in hosts:
                hosts.append(host)
    elif mode == "declared":
        for host in sorted(set(child.get("hosts") or ())):
            if host not in hosts:
                issues.append(_issue(at, key, f'imports.{alias}: hosts: declared but parent does not list child host '
                                              f'"{host}"'))
    else:
        issues.append(_issue(at, key, f"imports.{alias}: hosts: must be 'inherit' or 'declared' (got \"{mode}\")"))

    ifaces = parent.setdefault("host_interfaces", LMap())
    bindings = spec.get("host_bindings") if isinstance(spec.get("host_bindings"), LMap) else LMap()
    for name in sorted(child_ifaces):
        new = rewriter.name(name)
        if new in ifaces:
            issues.append(_issue(at, key, f'imports.{alias}: host_interface "{new}" collides'))
            continue
        iface = child_ifaces[name]
        if not isinstance(iface, LMap):
            continue
        clone = iface.like(iface)
        if name in bindings:
            clone["default"] = bindings[name]
        ifaces[new] = clone
    for name, handler in bindings.items():
        if name in child_ifaces:
            continue
        full = rewriter.name(name)
        if isinstance(ifaces.get(full), LMap):
            clone = ifaces[full].like(ifaces[full])
            clone["default"] = handler
            ifaces[full] = clone
            continue
        issues.append(_issue(bindings.key_at(name), f"{key}.host_bindings.{name}",
                             f'imports.{alias}: host_bindings.{name}: no matching host_interface (looked for "{full}" '
                             "in lifted child interfaces)"))

    for name in intents_spec.get("export") or ():
        if name not in intents:
            issues.append(_issue(at, f"{key}.intents.export",
                                 f'imports.{alias}: intents.export references undefined parent intent "{name}"'))
            continue
        intents[rewriter.name(name)] = intents[name]
    exports = child.get("exports") if isinstance(child.get("exports"), LMap) else LMap()
    exported = set(exports.get("intents") or ())
    lifted = intents_spec.get("import") or ()
    for index, name in enumerate(lifted):
        where = lifted.item_at(index) if isinstance(lifted, LSeq) else at
        if name not in exported:
            issues.append(_issue(where, f"{key}.intents.import",
                                 f"imports.{alias}: intents.import.{name}: child does not declare it in exports.intents"))
            continue
        if name not in child_intents:
            issues.append(_issue(where, f"{key}.intents.import",
                                 f"imports.{alias}: intents.import.{name}: child does not define this intent"))
            continue
        if name in intents:
            issues.append(_issue(where, f"{key}.intents.import",
                                 f"imports.{alias}: intents.import.{name}: collides with parent intent of same name"))
            continue
        intents[name] = fold_intent(child_intents[name])

    modes = child.get("meta_modes") if isinstance(child.get("meta_modes"), LMap) else LMap()
    if modes:
        parent_modes = parent.setdefault("meta_modes", LMap())
        for name in sorted(modes):
            new = rewriter.name(name)
            if new in parent_modes:
                issues.append(_issue(at, key, f'imports.{alias}: meta_mode "{new}" collides'))
                continue
            mode_def = modes[name]
            if isinstance(mode_def, LMap) and mode_def.get("agent") in child_agents:
                mode_def = mode_def.like(mode_def)
                mode_def["agent"] = rewriter.name(mode_def["agent"])
            parent_modes[new] = mode_def
    if child_agents:
        parent_agents = parent.setdefault("agents", LMap())
        for name in sorted(child_agents):
            new = rewriter.name(name)
            if new in parent_agents:
                issues.append(_issue(at, key, f'imports.{alias}: agent "{new}" collides'))
                continue
            parent_agents[new] = child_agents[name]
    return issues


def _effect_targets(effect: Any, retarget: Any, depth: int) -> Any:
    if not isinstance(effect, LMap):
        return effect
    changed = None
    for key in ("on_error", "target"):
        if effect.get(key):
            changed = changed or effect.like(effect)
            changed[key] = retarget(effect[key], depth)
    complete = effect.get("on_complete")
    if isinstance(complete, LSeq) and complete:
        changed = changed or effect.like(effect)
        out = complete.like()
        for sub in complete:
            if isinstance(sub, LMap):
                sub = sub.like(sub)
                for key in ("on_error", "target"):
                    if sub.get(key):
                        sub[key] = retarget(sub[key], depth)
            out.append(sub)
        changed["on_complete"] = out
    return changed if changed is not None else effect


def apply_overrides(child: LMap, overrides: LMap, alias: str, at: tuple[str, int, int],
                    parent_dir: Path) -> tuple[LMap, list[ConfigIssue]]:
    """kitsoki's applyOverrides on a copy of the child: replace named top-level states and intents
    (prompt overrides must name files that exist)."""
    issues: list[ConfigIssue] = []
    child = child.like(child)
    for block, what in (("states", "a top-level state"), ("intents", "an intent")):
        replacing = overrides.get(block) if isinstance(overrides.get(block), LMap) else LMap()
        if not replacing:
            continue
        own = child.get(block) if isinstance(child.get(block), LMap) else LMap()
        own = own.like(own)
        for name in sorted(replacing):
            if name not in own:
                issues.append(_issue(replacing.key_at(name), f"imports.{alias}.overrides.{block}.{name}",
                                     f"imports.{alias}: overrides: {block}.{name}: child does not declare {what} "
                                     f'named "{name}"'))
                continue
            own[name] = replacing[name]
        child[block] = own
    prompts = overrides.get("prompts") if isinstance(overrides.get("prompts"), LMap) else LMap()
    for rel in sorted(prompts):
        target = Path(str(prompts[rel]))
        target = target if target.is_absolute() else parent_dir / target
        if not probed.exists(target):
            issues.append(_issue(prompts.key_at(rel), f"imports.{alias}.overrides.prompts.{rel}",
                                 f"imports.{alias}: overrides: prompts.{rel}: stat {target}: no such file or directory"))
    return child, issues
