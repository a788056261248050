"""The state machine: one turn of a story, as kitsoki's internal/machine computes it.

`Machine.turn` validates an intent (INTENT_NOT_ALLOWED_IN_STATE, MISSING_SLOTS,
INVALID_SLOT_VALUE, GUARD_FAILED), picks the first arm whose guard holds (a `default: true`
arm or one without `when:` wins where it stands), applies its effects, runs `on_enter` of every
state newly entered (and of the state itself on an explicit self-target), then dispatches the
intents those effects emitted, each as a synthetic turn (depth cap 24, kitsoki's). Host invocations are not
run here: the turn returns them (`HostCall`) for the orchestrator to dispatch, with the world
as it stood at the invoke and the raw `with:` for the re-render after earlier binds.

Effects: `set` (every key rendered against the pre-block world, then coerced to the declared
type), `increment`, `say`, `invoke` (+ `id`, `with`, `bind`, `on_error`, `once`), `emit_intent`
(+ `slots`), each with an optional `when:`. A `when:` that cannot be evaluated defers an
`emit_intent` and is otherwise a machine error, which kitsoki turns into a fatal run error
(`Abort` here). Targets: none or `.` stays, `../x` is relative, anything else an absolute
dotted path; a compound target descends to its `initial:` child.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field
from typing import Any

from core.flows.app import WILDCARD, AppModel, Arm, chain
from core.flows.decisions import stops_here
from core.flows.expressions import ExprError, ExprUnsupported, eval_bool, render, resolve_value
from core.flows.fixtures import unsupported
from core.flows.values import GoInt, copy_value, go_quote, go_value
from core.kitsoki.checks import resolve_target

EMIT_INTENT_MAX_DEPTH = 24
"""kitsoki's EmitIntentMaxDepth (internal/machine/parallel.go:95)."""
EFFECT_KEYS = frozenset({"__iface__", "when", "set", "increment", "say", "invoke", "id", "with", "bind", "on_error", "background",
                         "once", "on_complete", "emit_intent", "slots", "agent", "selection", "target"})
"""The effect keys the machine implements (`agent` and `selection` only steer a real agent: stubs ignore
them; `target` is read by a job's on_complete, the machine skips it); kitsoki's `emit` and `effects` and
unknown keys are refused."""


class Unsupported(Exception):
    """The story or fixture uses something the built-in runner does not implement."""

    def __init__(self, what: str) -> None:
        super().__init__(unsupported(what))


class Abort(Exception):
    """kitsoki's machine would return an error here (the whole `test flows` run exits 2)."""


@dataclass
class Event:
    """A machine or orchestrator event (kitsoki's store.Event: kind and payload)."""

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)

    def dump(self) -> dict[str, Any]:
        return {"Kind": self.kind, "Payload": self.payload}


@dataclass
class HostCall:
    """kitsoki's machine.HostInvocation: one `invoke:` the orchestrator is to dispatch."""

    namespace: str
    args: dict[str, Any]
    raw_with: dict[str, Any]
    env: dict[str, Any]
    world_snapshot: dict[str, Any]
    bind: dict[str, str]
    on_error: str = ""
    background: bool = False
    on_complete: list[Any] = field(default_factory=list)


@dataclass
class TurnResult:
    state: str
    world: dict[str, Any]
    error: tuple[str, str, str] | None = None
    """(code, message, guard hint) when the intent was rejected."""
    host_calls: list[HostCall] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    say: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    """Each `say:` as (template, world, slots) at the effect."""
    arm_view: Any = None
    """The winning arm's own `view:` (it replaces the state's in the turn's view)."""
    slots: dict[str, Any] = field(default_factory=dict)


def _to_int(value: Any) -> int:
    """kitsoki's toInt64: numbers truncate, numeric strings parse, anything else is 0."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    return 0


def enter_paths(old: str, new: str) -> list[str]:
    """The levels of `new` that `old` does not share, outermost first (kitsoki's stateEnterPaths)."""
    if old == new:
        return []
    old_parts, new_parts = old.split("."), new.split(".")
    common = 0
    while common < min(len(old_parts), len(new_parts)) and old_parts[common] == new_parts[common]:
        common += 1
    return [".".join(new_parts[: i + 1]) for i in range(common, len(new_parts))]


RUN = {"id": "", "turn": 0}
"""kitsoki's machine evaluates effects with a zero RunCtx: `run.id` is "" and `run.turn` 0 there."""


def _env(world: dict[str, Any], slots: dict[str, Any]) -> dict[str, Any]:
    return {"world": world, "slots": slots, "event": {}, "run": RUN}


def _guard(source: str, env: dict[str, Any]) -> bool:
    try:
        return eval_bool(source, env)
    except ExprUnsupported as exc:
        raise Unsupported(f"when: {source.strip()} ({exc})") from None


class Machine:
    def __init__(self, app: AppModel, bindings: dict[str, str] | None = None) -> None:
        self.app = app
        self.bindings = dict(bindings or {})
        """`host_bindings:` of the fixture: interface name -> handler, over the story's defaults."""

    def resolve_interface(self, name: str) -> str:
        """kitsoki's resolveAllInterfaces: `iface.<name>.<op>` -> `<binding>.<op>`."""
        if not name.startswith("iface."):
            return name
        rest = name[len("iface."):]
        if "." not in rest:
            raise Unsupported(f"invoke {name} (expected iface.<name>.<op>)")
        interface, op = rest.rsplit(".", 1)
        spec = self.app.host_interfaces.get(interface)
        if spec is None:
            raise Unsupported(f"invoke {name}: interface {interface} is not declared here")
        binding = self.bindings.get(interface) or str(spec.get("default") or "")
        if not binding:
            raise Unsupported(f"invoke {name}: interface {interface} has no default and no host_binding")
        return f"{binding}.{op}"

    # -- structure --

    def allowed(self, state: str) -> list[str]:
        names = {name for path in chain(state) if path in self.app.states
                 for name in self.app.states[path].on if name != WILDCARD}
        aliases = [(alias, target) for path in chain(state) if path in self.app.states
                   for alias, target in self.app.states[path].intent_aliases.items()]
        grown = True
        while aliases and grown:  # an alias is allowed where the name it stands for is
            grown = False
            for alias, target in aliases:
                if target in names and alias not in names:
                    names.add(alias)
                    grown = True
        return sorted(names)

    def has_wildcard(self, state: str) -> bool:
        return any(WILDCARD in self.app.states[path].on for path in chain(state) if path in self.app.states)

    def resolve_alias(self, state: str, name: str) -> str:
        """kitsoki's resolveEmittedIntentName: the nearest state's alias for an imported intent."""
        for path in chain(state):
            found = self.app.states.get(path)
            if found is not None and found.intent_aliases.get(name):
                return found.intent_aliases[name]
        return name

    # -- validation --

    def validate(self, state: str, intent: str, slots: dict[str, Any]) -> tuple[str, str, str] | None:
        """kitsoki's Validate; fills a slot's declared default into `slots` as it does."""
        if intent not in self.allowed(state) and not self.has_wildcard(state):
            return ("INTENT_NOT_ALLOWED_IN_STATE",
                    f"intent {go_quote(intent)} is not allowed in state {go_quote(state)}", "")
        definition = self.app.lookup_intent(state, intent)
        if definition is None:
            return None
        missing = []
        for name in sorted(definition.slots):
            slot = definition.slots[name]
            value = slots.get(name)
            if slot.required and value is None:
                missing.append(name)
                continue
            default = getattr(slot, "default", None)
            if name not in slots and default is not None:
                slots[name] = copy.deepcopy(default)
                value = slots[name]
            if name in slots and slot.values and go_value(value) not in slot.values:
                return ("INVALID_SLOT_VALUE", f"slot {go_quote(name)} value {go_quote(go_value(value))} is not one of "
                        f"{go_value(slot.values)}", "")
        if missing:
            return ("MISSING_SLOTS", f"intent requires slots: {go_value(missing)}", "")
        return None

    def find_transition(self, state: str, intent: str, env: dict[str, Any]) -> tuple[Arm | None, str, str]:
        """(winning arm, the state it was found on, guard hint when every guard failed)."""
        for path in chain(state):
            found = self.app.states.get(path)
            if found is None:
                continue
            for name in (intent, WILDCARD):  # specific arms first, then `*`, before the parent
                arms = found.on.get(name)
                if arms:
                    arm, hint = self._first_arm(arms, env)
                    return arm, path, hint
        return None, state, ""

    def _first_arm(self, arms: list[Arm], env: dict[str, Any]) -> tuple[Arm | None, str]:
        hint = ""
        for arm in arms:
            if arm.default or not arm.when.strip():
                return arm, ""
            try:
                if _guard(arm.when, env):
                    return arm, ""
            except ExprError as exc:
                raise Abort(f"expr eval {go_quote(arm.when)}: {exc}") from None
            if not hint and arm.guard_hint:
                hint = arm.guard_hint
        return None, hint

    def resolve_initial(self, path: str, env: dict[str, Any]) -> str:
        found = self.app.states.get(path)
        if found is not None and found.type == "parallel":
            raise Unsupported(f"entering the parallel state {path} (type: parallel)")
        if found is None or found.type != "compound" or not found.initial:
            return path  # kitsoki lands on the state itself
        child = found.initial
        if "{{" in child or "{%" in child:
            from core.flows.pongo import PongoError, PongoUnsupported, TemplateSet

            try:  # kitsoki renders a templated initial: with pongo2 against the turn's env
                child = TemplateSet(None).render(child, {**env, "item": None})
            except PongoUnsupported as exc:
                raise Unsupported(f"templated initial: on {path} ({exc})") from None
            except PongoError as exc:
                raise Abort(f"evaluate initial expression {go_quote(found.initial)}: {exc}") from None
        return self.resolve_initial(f"{path}.{child.strip()}", env)

    def _target(self, path: str, raw: str, env: dict[str, Any]) -> str:
        raw = raw.strip()
        if "{{" in raw:
            try:
                raw = render(raw, env).strip()
            except ExprUnsupported as exc:
                raise Unsupported(f"target {go_quote(raw)} ({exc})") from None
            except ExprError as exc:
                raise Abort(f"render transition target {go_quote(raw)}: {exc}") from None
        if "{%" in raw:
            raise Unsupported(f"templated target {go_quote(raw)}")
        if raw.startswith("@exit:"):
            raw = f"__exit__{raw[len('@exit:'):]}"
        target = resolve_target(path, raw)
        if target not in self.app.states:
            raise Abort(f"target {go_quote(raw)} (from state {go_quote(path)}) is not a state of this story")
        return self.resolve_initial(target, env)

    # -- one turn --

    def turn(self, state: str, world: dict[str, Any], intent: str, slots: dict[str, Any]) -> TurnResult:
        """kitsoki's Machine.Turn."""
        intent = self.resolve_alias(state, intent)
        error = self.validate(state, intent, slots)
        if error:
            return TurnResult(state, world, error, events=[Event("machine.validation_failed", {
                "code": error[0], "message": error[1], "intent": intent, "state": state})])
        env = _env(world, slots)
        arm, path, hint = self.find_transition(state, intent, env)
        if arm is None:
            message = f"no transition matched for intent {go_quote(intent)} in state {go_quote(state)}"
            return TurnResult(state, world, ("GUARD_FAILED", message, hint), events=[Event(
                "machine.validation_failed", {"code": "GUARD_FAILED", "intent": intent, "state": state,
                                              "guard_hint": hint})])
        target = self._target(path, arm.target, env)
        result = TurnResult(target, world, arm_view=arm.view, slots=slots)
        world, emits = self.apply(arm.effects, world, env, result)
        raw = arm.target.strip()
        reentry = target == state and raw not in ("", ".")
        if target != state or reentry:
            for entered in ([state] if reentry else enter_paths(state, target)):
                world, more = self.enter(entered, world, env, result)
                emits.extend(more)
        result.events.insert(0, Event("machine.transition", {"from": state, "to": target, "intent": intent,
                                                              "slots": slots}))
        if emits:
            target, world = self.dispatch(target, world, emits, 0, result)
        result.state, result.world = target, world
        return result

    def enter(self, state: str, world: dict[str, Any], env: dict[str, Any],
              result: TurnResult) -> tuple[dict[str, Any], list]:
        found = self.app.states.get(state)
        if found is None or not found.on_enter:
            return world, []
        return self.apply(found.on_enter, world, {**env, "world": world}, result)

    def dispatch(self, state: str, world: dict[str, Any], emits: list[tuple[str, dict[str, Any]]],
                 depth: int, result: TurnResult, staged: bool = False) -> tuple[str, dict[str, Any]]:
        """kitsoki's dispatchEmittedIntents: each emit is a synthetic turn, unless the chain has
        reached a decision gate a human owes (core.flows.decisions)."""
        if depth >= EMIT_INTENT_MAX_DEPTH:
            raise Abort(f"emit_intent: dispatch exceeded max depth ({EMIT_INTENT_MAX_DEPTH}) at state "
                        f"{go_quote(state)} — likely a cyclic emit chain")
        if stops_here(self, state, world, emits, depth, staged):
            result.events.append(Event("gate.decided", {"state": state, "decider": "human", "bailed_to_human": True}))
            return state, world
        for name, slots in emits:
            name = self.resolve_alias(state, name)
            env = _env(world, slots)
            arm, path, _ = self.find_transition(state, name, env)
            if arm is None:
                raise Abort(f"emit_intent {go_quote(name)} at {go_quote(state)}: no transition arm matched "
                            "(intent has no on: handler, or all guards failed)")
            target = self._target(path, arm.target, env)
            world, chained = self.apply(arm.effects, world, env, result)
            result.events.append(Event("machine.transition", {"from": state, "to": target, "intent": name,
                                                               "slots": slots}))
            if target != state:
                for entered in enter_paths(state, target):
                    world, more = self.enter(entered, world, env, result)
                    chained.extend(more)
            state = target
            if chained:
                state, world = self.dispatch(state, world, chained, depth + 1, result, staged)
        return state, world

    def run_effects_and_state(self, state: str, world: dict[str, Any], effects: list[Any],
                              result: TurnResult) -> tuple[str, dict[str, Any]]:
        """kitsoki's RunEffectsAndState: effects with empty slots, then their emits."""
        env = _env(world, {})
        world, emits = self.apply(effects, world, env, result)
        if emits and state:
            state, world = self.dispatch(state, world, emits, 0, result)
        return state, world

    def post_bind_emits(self, state: str, world: dict[str, Any], result: TurnResult,
                        staged: bool = False) -> tuple[str, dict[str, Any], bool]:
        """kitsoki's DispatchPostBindEmits: the landed state's on_enter emits, against the post-bind
        world. Returns (state, world, whether anything was dispatched); a guard or render error is
        raised as ExprError (the orchestrator records it and stays put)."""
        found = self.app.states.get(state)
        if found is None or not found.on_enter:
            return state, world, False
        env = _env(world, {})
        emits = []
        for effect in found.on_enter:
            if not isinstance(effect, dict) or not effect.get("emit_intent"):
                continue
            when = str(effect.get("when") or "")
            if when.strip() and not _guard(when, env):
                continue
            name = str(effect["emit_intent"])
            if "{{" in name:
                name = render(name, env).strip()
            if not name:
                continue
            slots = effect.get("slots") or {}
            emits.append((name, {key: resolve_value(value, env) for key, value in dict(slots).items()}))
        if not emits:
            return state, world, False
        before = len(result.events)
        state, world = self.dispatch(state, world, emits, 0, result, staged)
        return state, world, len(result.events) > before

    # -- effects --

    def apply(self, effects: list[Any], world: dict[str, Any], env: dict[str, Any],
              result: TurnResult) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        """kitsoki's applyEffects: a new world and the emitted intents, in order; host calls and
        events are appended to `result`."""
        emits: list[tuple[str, dict[str, Any]]] = []
        if not effects:  # nothing to change (a transition without effects): the world as it was, uncopied
            return world, emits
        world = copy_value(world)
        env = {**env, "world": world}
        for effect in effects:
            if not isinstance(effect, dict):
                raise Unsupported(f"effect entry {go_quote(go_value(effect))}")
            unknown = [key for key in effect if key not in EFFECT_KEYS]
            if unknown:
                raise Unsupported(f"effect {unknown[0]}")
            when = effect.get("when")
            if when is not None and not isinstance(when, str):
                raise Unsupported(f"effect when: {go_value(when)}")
            if when and when.strip():
                env["world"] = world
                try:
                    holds = _guard(when, env)
                except ExprError as exc:
                    if effect.get("emit_intent"):
                        continue  # deferred to the post-bind pass
                    raise Abort(f"effect when {go_quote(when)}: eval: {exc}") from None
                if not holds:
                    continue
            try:
                if effect.get("set"):
                    self._set(effect["set"], world, env, result)
                elif effect.get("increment"):
                    self._increment(effect["increment"], world, result)
                elif effect.get("say"):
                    # rendered only if a view is checked, against the world of this moment
                    result.say.append((str(effect["say"]), copy_value(world), dict(env.get("slots") or {})))
                elif effect.get("invoke"):
                    self._invoke(effect, world, env, result)
                if effect.get("emit_intent"):
                    env["world"] = world
                    emit = self._emit(effect, env)
                    if emit is not None:
                        emits.append(emit)
            except ExprUnsupported as exc:
                kind = next((key for key in ("set", "invoke", "emit_intent", "increment", "say") if key in effect), "?")
                raise Unsupported(f"{kind} effect: {exc}") from None
            except ExprError as exc:
                raise Abort(f"effect: {exc}") from None
        return world, emits

    def _set(self, values: Any, world: dict[str, Any], env: dict[str, Any], result: TurnResult) -> None:
        if not isinstance(values, dict):
            raise Unsupported(f"effect set: {go_value(values)} (not a mapping)")
        block = {**env, "world": dict(world)}  # every key of one set: renders against the pre-block world
        resolved = {key: resolve_value(values[key], block) for key in sorted(values)}
        for key, value in resolved.items():
            world[key] = self._coerce(key, value)
            result.events.append(Event("world.update", {"set": {key: value}}))

    def _coerce(self, key: str, value: Any) -> Any:
        var = self.app.world.get(key)
        if var is None or not isinstance(value, str):
            return value
        if var.type == "bool" and value in ("true", "false"):
            return value == "true"
        if var.type == "int" and re.fullmatch(r"[+-]?\d+", value):
            return int(value)
        if var.type == "float":
            try:
                return float(value)
            except ValueError:
                return value
        return value

    def _increment(self, deltas: Any, world: dict[str, Any], result: TurnResult) -> None:
        if not isinstance(deltas, dict):
            raise Unsupported(f"effect increment: {go_value(deltas)} (not a mapping)")
        for key, delta in deltas.items():
            if not isinstance(delta, int) or isinstance(delta, bool):
                raise Unsupported(f"effect increment {key}: {go_value(delta)} (not a whole number)")
            world[key] = GoInt(_to_int(world.get(key)) + delta, "int64")
            result.events.append(Event("world.update", {"increment": {key: delta}}))

    def _invoke(self, effect: dict[str, Any], world: dict[str, Any], env: dict[str, Any], result: TurnResult) -> None:
        original = effect.get("__iface__")  # the loader bound it already; a fixture's host_bindings rebinds it
        name = self.resolve_interface(str(original if original and self.bindings else effect["invoke"]))
        bind = effect.get("bind") or {}
        if not isinstance(bind, dict):
            raise Unsupported(f"invoke {name} bind: {go_value(bind)} (not a mapping)")
        bind = {str(key): str(value) for key, value in bind.items()}
        if effect.get("once") and bind and all(_is_set(world.get(key)) for key in bind):
            result.events.append(Event("world.update", {"namespace": name, "skipped": "cached"}))
            return
        with_ = effect.get("with") or {}
        if not isinstance(with_, dict):
            raise Unsupported(f"invoke {name} with: {go_value(with_)} (not a mapping)")
        env = {**env, "world": world}
        args = {key: resolve_value(value, env) for key, value in with_.items()}
        raw = dict(with_)
        if effect.get("id"):
            args["call"] = str(effect["id"])
            raw["call"] = str(effect["id"])
        on_complete = effect.get("on_complete") or []
        call = HostCall(namespace=name, args=args, raw_with=raw, env=dict(env), world_snapshot=dict(world),
                        bind=bind, on_error=str(effect.get("on_error") or ""),
                        background=bool(effect.get("background")),
                        on_complete=on_complete if isinstance(on_complete, list) else [on_complete])
        result.host_calls.append(call)
        result.events.append(Event("harness.called", {"namespace": name, "args": args, "background": call.background}))

    def _emit(self, effect: dict[str, Any], env: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        name = effect["emit_intent"]
        if not isinstance(name, str):
            raise Unsupported(f"emit_intent: {go_value(name)}")
        if "{{" in name:
            name = render(name, env).strip()
        if not name:
            return None
        emit_slots = effect.get("slots") or {}
        if not isinstance(emit_slots, dict):
            raise Unsupported(f"emit_intent slots: {go_value(emit_slots)} (not a mapping)")
        return name, {key: resolve_value(value, env) for key, value in emit_slots.items()}


def _is_set(value: Any) -> bool:
    """kitsoki's worldValueSet: nil, "", empty list/map are unset."""
    if value is None:
        return False
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True
