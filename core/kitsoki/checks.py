"""kitsoki's load-time checks on a folded, phase-expanded app (validateDef in internal/app/loader.go).

Each problem carries kitsoki's reason and the file:line:col of the declaration it is about:
- `app.id` is required; `app.context` and `app.context_path` exclude each other;
- `root:` names a declared state (a mapping root is kitsoki's inline compound and passes);
- the free-form fallback: kitsoki injects the `work` arm of the room named `landing` (or of
  `routing.free_form_fallback`) into every other non-terminal room without a default_intent;
- per state: relevant_world keys are world keys (or engine-owned ones), default_intent has an
  arm here and exactly one required string slot, contextual_routing lanes have arms, transcript and
  theme only on top-level rooms, every `on:` intent is global or the state's own (`*` always
  passes), every target resolves (absolute dotted paths, `..`-relative, `.` and templates pass),
  invoked hosts are on the `hosts:` allow-list when there is one, background / once / on_complete /
  emit_intent rules, decider is "", human or llm, every guard and templated effect value compiles
  (expr_checks.py), `timeout:` has a parseable `after` and a target
  that exists, a compound's literal `initial:` child exists, a parallel state has two or more
  regions and no `initial:`;
- the decider spec, routing (empty synonyms, slot synonyms only on enums and only for declared
  values, the semantic bars' order), a free-form fallback whose intent takes one required string
  slot, and no target reaching into an imported child past its entry.
"""

from __future__ import annotations

from typing import Any

from core.kitsoki import statememo
from core.kitsoki.duration import DurationError, parse_go_duration
from core.kitsoki.expr_checks import expression_issues
from core.kitsoki.imports import RESERVED_WORLD_KEYS
from core.kitsoki.tree import FALLBACK_KEY, Wrapper, map_states
from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.view_checks import view_problems
from core.kitsoki.yamlread import ConfigIssue



def parse_app_duration(text: str) -> None:
    """kitsoki's app.ParseDuration: a Go duration or `<n>d`; raises ValueError with its reason."""
    text = text.strip()
    if not text:
        return
    if text.endswith("d"):
        number = text[:-1]
        if any(unit in number for unit in ("ns", "us", "µs", "ms", "s", "m", "h")):
            raise ValueError(f'app.ParseDuration: "{text}" mixes days with other units; declare days alone (e.g. "10d")')
        try:
            float(number)
        except ValueError:
            raise ValueError(f'app.ParseDuration: "{text}": invalid day count') from None
        return
    try:
        parse_go_duration(text)
    except DurationError as exc:
        raise ValueError(f'app.ParseDuration: "{text}": {exc}') from None


def _paths(states: LMap, prefix: str, out: set[str]) -> None:
    for name, state in states.items():
        path = f"{prefix}.{name}" if prefix else name
        out.add(path)
        if isinstance(state, LMap) and isinstance(state.get("states"), LMap):
            _paths(state["states"], path, out)


def lookup(states: LMap, path: str) -> LMap | None:
    current: Any = None
    block: Any = states
    for part in path.split("."):
        if not isinstance(block, LMap) or part not in block:
            return None
        current = block[part]
        block = current.get("states") if isinstance(current, LMap) else None
    return current if isinstance(current, LMap) else None


def resolve_target(state_path: str, target: str) -> str:
    """kitsoki's resolveTarget: none or `.` stays, `..` segments walk up from the state; anything
    else is absolute (`/` reads as `.`)."""
    if target in ("", "."):
        return state_path
    if not target.startswith(".."):
        return target.replace("/", ".")
    parts = state_path.split(".")
    for segment in target.split("/"):
        if segment == "..":
            parts = parts[:-1]
        elif segment not in (".", ""):
            parts.append(segment)
    return ".".join(parts)


def _walk(states: LMap, prefix: str = ""):
    for name in sorted(states):
        state = states[name]
        path = f"{prefix}.{name}" if prefix else name
        yield path, state, prefix
        if isinstance(state, LMap) and isinstance(state.get("states"), LMap):
            yield from _walk(state["states"], path)


def _base_name(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _one_required_string(intent: Any) -> bool:
    slots = intent.get("slots") if isinstance(intent, LMap) else None
    required = [slot for slot in (slots or {}).values() if isinstance(slot, LMap) and slot.get("required")]
    return len(required) == 1 and all(not slot.get("type") or slot.get("type") == "string" for slot in required)


def effective_fallback(definition: LMap) -> tuple[str, str] | None:
    """kitsoki's effectiveFreeFormFallback: (state path, intent) or None."""
    routing = definition.get("routing")
    if isinstance(routing, LMap) and isinstance(routing.get("free_form_fallback"), LMap):
        config = routing["free_form_fallback"]
        state, intent = str(config.get("state") or "").strip(), str(config.get("intent") or "").strip()
        return (state, intent) if state or intent else None
    states = definition.get("states") if isinstance(definition.get("states"), LMap) else LMap()
    candidates = []
    for path, state, _ in _walk(states):
        if not isinstance(state, LMap) or _base_name(path) != "landing":
            continue
        on = state.get("on") if isinstance(state.get("on"), LMap) else {}
        if "work" in on:
            candidates.append((path, "work"))
            continue
        candidates.extend((path, name) for name in on if name.endswith("__work"))
    return min(candidates) if candidates else None


def apply_fallback(definition: LMap) -> None:
    """Inject the free-form fallback arm into every other non-terminal room (kitsoki's
    applyFreeFormFallback); the injected arms are marked so they never count as a gate."""
    found = effective_fallback(definition)
    if not found or not found[0] or not found[1]:
        return
    path, intent = found
    states = definition.get("states")
    if not isinstance(states, LMap):
        return
    source = lookup(states, path)
    arms = source.get("on", {}).get(intent) if isinstance(source, LMap) and isinstance(source.get("on"), LMap) else None
    if not isinstance(arms, LSeq) or not arms:
        return
    fallback = statememo.recall(_FALLBACKS, (id(arms), path), arms, {}, [])
    if fallback is None:
        fallback = arms.like()
        for arm in arms:
            if isinstance(arm, LMap):
                arm = arm.like(arm)
                arm["target"] = path
                arm[FALLBACK_KEY] = True
            fallback.append(arm)
        statememo.keep(_FALLBACKS, (id(arms), path), arms, {}, fallback)

    def inject(state_path: str, state: LMap) -> LMap:
        if state_path == path or state.get("terminal") is True or state.get("default_intent") or \
                state.get("agent_off_ramp") not in (None, False):
            return state
        on = state.get("on")
        if isinstance(on, LMap) and intent in on:
            return state
        key = (id(state), id(fallback), intent)  # the same state given the same arms: the same copy
        injected = statememo.recall(_INJECTED, key, state, {}, [])
        if injected is not None and injected[0] is fallback:
            return injected[1]
        original = state
        state = state.like(state)
        block = on.like(on) if isinstance(on, LMap) else LMap(file=state.file, line=state.line, column=state.column)
        block[intent] = fallback
        state["on"] = block
        statememo.keep(_INJECTED, key, original, {}, (fallback, state))
        return state

    definition["states"] = map_states(states, inject)


def _frozen(value: Any) -> tuple:
    if isinstance(value, dict):
        return (type(value).__name__, tuple((key, _frozen(item)) for key, item in value.items()))
    if isinstance(value, list):
        return (type(value).__name__, tuple(_frozen(item) for item in value))
    return (type(value).__name__, value)


def _intent_shape(value: Any) -> Any:
    """What a state's checks read of an intent they look up (whether it is there, None, a mapping,
    and its slots: _one_required_string, view_checks.choice_cross_ref), compared by value."""
    if value is statememo.MISSING:
        return value
    if value is None:
        return ("none",)
    if not isinstance(value, LMap):
        return ("other",)
    return ("map", _frozen(value.get("slots")))


_FALLBACKS: dict = statememo.register({})
_INJECTED: dict = statememo.register({})
_VERDICTS: dict = statememo.register({})
"""(id of a state, its path, ids of its ancestors' own intents) -> [(the state, what its checks asked
of the app outside it -> the answer, the issues of the state and its children)]."""


class _Checks:
    def __init__(self, definition: LMap, wrappers: dict[str, Wrapper]) -> None:
        self.definition = definition
        self.wrappers = wrappers
        self.issues: list[ConfigIssue] = []
        states = definition.get("states") if isinstance(definition.get("states"), LMap) else LMap()
        self.states = states
        self.paths: set[str] = set()
        _paths(states, "", self.paths)
        world = definition.get("world") if isinstance(definition.get("world"), LMap) else LMap()
        self.world = set(world) | RESERVED_WORLD_KEYS
        self.intents = definition.get("intents") if isinstance(definition.get("intents"), LMap) else LMap()
        hosts = definition.get("hosts")
        self.hosts = set(hosts) if isinstance(hosts, LSeq) else set()
        self.on_keys: dict[str, set[str]] = {}
        for path, state, _ in _walk(states):
            if isinstance(state, LMap):
                names = set(state.get("on") or ()) | set(state.get("__intent_aliases__") or ())
                if names:
                    self.on_keys[path] = names
        # What a state's checks read of the app outside the state, watched (core.kitsoki.statememo).
        self.stack: list[dict] = []
        self._world = statememo.Watched(self.world, "w", self.stack)
        self._intents = statememo.Watched(self.intents, "i", self.stack, _intent_shape)
        self._paths = statememo.Watched(self.paths, "p", self.stack)
        self._hosts = statememo.Watched(self.hosts, "h", self.stack)
        self.answers = {"w": self._world.answer, "i": self._intents.answer, "i?": self._intents.holds, "p": self._paths.answer,
                        "h": self._hosts.answer, "r": lambda asked: self.reachable(*asked)}

    def add(self, at: tuple[str, int, int], message: str, key: str = "") -> None:
        self.issues.append(ConfigIssue(file=at[0], line=at[1], column=at[2], key=key, message=message))

    def run(self) -> list[ConfigIssue]:
        definition = self.definition
        app = definition.get("app") if isinstance(definition.get("app"), LMap) else LMap()
        top = (definition.file, 1, 1)
        if not app.get("id"):
            self.add(definition.key_at("app") if "app" in definition else top, "app.id is required", "app.id")
        if app.get("context") and app.get("context_path"):
            self.add(definition.key_at("app"), "app.context and app.context_path are mutually exclusive; set only one",
                     "app")
        root = definition.get("root")
        if isinstance(root, str):
            if root and root not in self.paths:
                self.add(definition.value_at("root"), f'root: state "{root}" is not declared in states', "root")
        elif not isinstance(root, LMap):
            kind = "<nil>" if root is None else {bool: "bool", int: "uint64", float: "float64"}.get(type(root), "[]interface {}")
            self.add(definition.value_at("root") if "root" in definition else top,
                     f"root: unsupported value type {kind}; expected a state name string", "root")
        self.states_pass(self.states, "", {})
        self.issues.extend(expression_issues(self.states))
        decider = definition.get("decider")
        if isinstance(decider, LMap):
            at = definition.key_at("decider")
            agents = definition.get("agents") if isinstance(definition.get("agents"), LMap) else {}
            if not str(decider.get("agent") or "").strip():
                self.add(at, "decider.agent is required", "decider.agent")
            elif agents and decider["agent"] not in agents:
                self.add(at, f'decider.agent "{decider["agent"]}" is not declared in agents', "decider.agent")
            if not str(decider.get("schema") or "").strip():
                self.add(at, "decider.schema is required", "decider.schema")
            threshold = decider.get("threshold") or 0
            if isinstance(threshold, (int, float)) and not 0 <= threshold <= 1:
                self.add(at, f"decider.threshold {threshold:.2f} out of range [0,1]", "decider.threshold")
        self.routing()
        self.reach_into_child()
        return self.issues

    def states_pass(self, states: LMap, prefix: str, ancestors: dict[str, Any], scope: tuple = ()) -> None:
        """Each state's checks (and its children's), remembered by the state's identity, its path and its
        ancestors' own intents (`scope`, those mappings: what it sees beyond the app's intents; held by the
        memo, so their ids stay theirs), with what the checks asked of the app and the answers: kept while
        each question gets the same answer."""
        scope_ids = tuple(id(intents) for intents in scope)
        for name in sorted(states):
            state = states[name]
            if not isinstance(state, LMap):
                continue
            path = f"{prefix}.{name}" if prefix else name
            key = (id(state), path, scope_ids)
            known = statememo.recall(_VERDICTS, key, state, self.answers, self.stack)
            if known is not None:
                self.issues.extend(known[0])
                continue
            start = len(self.issues)
            record: dict = {}
            self.stack.append(record)
            try:
                self.state_checks(state, path, prefix, ancestors, scope)
            finally:
                self.stack.pop()
            statememo.keep(_VERDICTS, key, state, record, (tuple(self.issues[start:]), scope))

    def state_checks(self, state: LMap, path: str, prefix: str, ancestors: dict[str, Any], held: tuple) -> None:
        at = state.at
        local = state.get("intents") if isinstance(state.get("intents"), LMap) else LMap()
        scope = {**ancestors, **local}
        for key in state.get("relevant_world") or ():
            if key not in self._world:
                self.add(at, f'state "{path}": relevant_world key "{key}" is not declared in world schema',
                         f"states.{path}.relevant_world")
        on = state.get("on") if isinstance(state.get("on"), LMap) else LMap()
        default_intent = state.get("default_intent")
        if default_intent:
            if default_intent not in on:
                self.add(at, f'state "{path}": default_intent "{default_intent}" has no matching on: arc in this '
                             "state", f"states.{path}.default_intent")
            intent = scope.get(default_intent, self._intents.get(default_intent))
            if intent is None:
                self.add(at, f'state "{path}": default_intent "{default_intent}" is not a declared intent',
                         f"states.{path}.default_intent")
            elif not _one_required_string(intent):
                self.add(at, f'state "{path}": default_intent "{default_intent}" must declare exactly one required '
                             "string slot to receive the free-text utterance", f"states.{path}.default_intent")
        routing = state.get("contextual_routing")
        if isinstance(routing, LMap) and routing.get("enabled"):
            if not (routing.get("room_chat") or routing.get("help_chat") or routing.get("meta_chat")):
                self.add(at, f'state "{path}": contextual_routing.enabled requires at least one lane (room_chat, '
                             "help_chat, or meta_chat)")
            for lane in ("room_chat", "plan_accept_intent", "plan_refine_intent"):
                value = routing.get(lane)
                if not value:
                    continue
                if value not in on:
                    self.add(at, f'state "{path}": contextual_routing.{lane} "{value}" has no matching on: arc in '
                                 "this state")
                if value not in scope and value not in self._intents:
                    self.add(at, f'state "{path}": contextual_routing.{lane} "{value}" is not a declared intent')
        invalid, choices = view_problems(state.get("view"), self._intents, scope)
        where = state.value_at("view") if "view" in state else at
        if invalid:
            self.add(where, f'state "{path}": {invalid}', f"states.{path}.view")
        for index, problem in choices:
            self.add(where, f'state "{path}": view[{index}] (choice): {problem}', f"states.{path}.view")
        if prefix:
            for key in ("transcript", "theme"):
                if state.get(key):
                    self.add(at, f'state "{path}": {key}: only allowed on top-level (room) states')
        elif state.get("transcript") not in (None, "", "persistent", "transient"):
            self.add(at, f'state "{path}": transcript: "{state["transcript"]}" is not one of "persistent", '
                         '"transient"')
        for intent_name in sorted(on):
            where = on.key_at(intent_name)
            if intent_name != "*" and intent_name not in self._intents and intent_name not in local:
                self.add(where, f'state "{path}": on: "{intent_name}" — intent not declared in intents library or '
                                "state.intents", f"states.{path}.on.{intent_name}")
            arms = on[intent_name] if isinstance(on[intent_name], LSeq) else ()
            for index, arm in enumerate(arms):
                if not isinstance(arm, LMap):
                    continue
                self.target(path, arm.get("target"), arm.at if arm.kline else on[intent_name].item_at(index))
                invalid, choices = view_problems(arm.get("view"), self._intents, scope)
                if invalid:
                    self.add(arm.at, f'state "{path}" intent "{intent_name}": transition view: {invalid}')
                for position, problem in choices:
                    self.add(arm.at, f'state "{path}" intent "{intent_name}": transition view[{position}] '
                                     f"(choice): {problem}")
                for position, effect in enumerate(arm.get("effects") or ()):
                    if isinstance(effect, LMap):
                        location = f'state "{path}" intent "{intent_name}" effects[{position}]'
                        self.invoke(effect, f'state "{path}" intent "{intent_name}": effect', arm)
                        self.background(effect, location, path, False, arm)
        for index, effect in enumerate(state.get("on_enter") or ()):
            if isinstance(effect, LMap):
                self.invoke(effect, f'state "{path}": on_enter', state)
                self.background(effect, f'state "{path}" on_enter[{index}]', path, False, state)
        decider = state.get("decider")
        if decider not in (None, "", "human", "llm"):
            self.add(at, f'state "{path}": decider "{decider}" is invalid (want "", "human", or "llm")',
                     f"states.{path}.decider")
        timeout = state.get("timeout")
        if isinstance(timeout, LMap):
            after, target = timeout.get("after"), timeout.get("target")
            if not after:
                self.add(at, f"state \"{path}\": timeout: missing 'after' field", f"states.{path}.timeout")
            elif "{{" not in str(after):
                try:
                    parse_app_duration(str(after))
                except ValueError as exc:
                    self.add(timeout.value_at("after"), f'state "{path}": timeout.after "{after}": {exc}',
                             f"states.{path}.timeout.after")
            if not target:
                self.add(at, f"state \"{path}\": timeout: missing 'target' field", f"states.{path}.timeout")
            else:
                self.target(path, target, timeout.value_at("target"))
        kind, initial = state.get("type"), state.get("initial")
        if kind == "compound" and initial and "{{" not in str(initial) and "{%" not in str(initial):
            if f"{path}.{initial}" not in self._paths:
                self.add(at, f'state "{path}": initial child "{initial}" does not exist', f"states.{path}.initial")
        if kind == "parallel":
            children = state.get("states") if isinstance(state.get("states"), LMap) else {}
            if len(children) < 2:
                self.add(at, f'state "{path}": parallel state must declare at least 2 child regions (got '
                             f"{len(children)})", f"states.{path}")
            if initial:
                self.add(at, f'state "{path}": parallel state must not declare initial: — each region picks its '
                             "own initial", f"states.{path}.initial")
        if isinstance(state.get("states"), LMap):
            inner = (*held, local) if "intents" in state and isinstance(state["intents"], LMap) else held
            self.states_pass(state["states"], path, scope, inner)

    def target(self, path: str, target: Any, at: tuple[str, int, int]) -> None:
        if not isinstance(target, str) or target in ("", ".") or "{{" in target:
            return
        resolved = resolve_target(path, target)
        if resolved not in self._paths:
            self.add(at, f'state "{path}": transition target "{target}" (resolved: "{resolved}") does not exist',
                     f"states.{path}")

    def invoke(self, effect: LMap, location: str, owner: LMap) -> None:
        invoke = effect.get("invoke")
        if invoke and self._hosts and invoke not in self._hosts:
            self.add(effect.value_at("invoke") if "invoke" in effect.marks else owner.at,
                     f'{location} invoke "{invoke}" is not declared in app hosts')

    def background(self, effect: LMap, location: str, origin: str, inside: bool, owner: LMap) -> None:
        at = effect.at if effect.kline else (effect.file, effect.line, effect.column)
        if effect.get("background") and not effect.get("invoke"):
            self.add(at, f"{location}: background: true requires invoke: to be set")
        if effect.get("once") and not effect.get("bind"):
            self.add(at, f"{location}: once: true requires a non-empty bind: (the bind target is the cache that arms "
                         "the skip)")
        target = effect.get("target")
        if target and not inside:
            self.add(at, f"{location}: target: is only allowed inside on_complete: effects (it fires a synthetic "
                         "transition once the background job terminates); use a normal transition's target: for "
                         "in-turn transitions")
        if target and inside:
            conflicts = [key for key in ("set", "increment", "say", "invoke", "bind") if effect.get(key)]
            if conflicts:
                self.add(at, f"{location}: target: cannot be combined with {'/'.join(conflicts)} on the same effect "
                             "(split into separate effects in the on_complete: chain — mutation first, transition last)")
            if "{{" not in str(target):
                resolved = resolve_target(origin, str(target))
                if resolved not in self._paths:
                    self.add(at, f'{location}: target "{target}" (resolved: "{resolved}") does not exist')
        emit = effect.get("emit_intent")
        if emit:
            if target:
                self.add(at, f"{location}: emit_intent: cannot be combined with target: on the same effect (split into "
                             "separate effects)")
            if "{{" not in str(emit) and not self.reachable_watched(origin, str(emit)):
                self.add(at, f'{location}: emit_intent "{emit}" is not declared on state "{origin}"\'s on: arcs (nor '
                             "any ancestor's)")
        for index, child in enumerate(effect.get("on_complete") or ()):
            if not isinstance(child, LMap):
                continue
            where = f"{location} on_complete[{index}]"
            if child.get("background"):
                self.add(at, f"{where}: background: true is not allowed inside on_complete:")
            if child.get("invoke") and self._hosts and child["invoke"] not in self._hosts:
                self.add(at, f'{where}: invoke "{child["invoke"]}" is not declared in app hosts')
            self.background(child, where, origin, True, owner)

    def reachable_watched(self, path: str, name: str) -> bool:
        found = self.reachable(path, name)
        for record in self.stack:
            record[("r", (path, name))] = found
        return found

    def reachable(self, path: str, name: str) -> bool:
        while True:
            if name in self.on_keys.get(path, ()):
                return True
            if "." not in path:
                return False
            path = path.rsplit(".", 1)[0]

    def routing(self) -> None:
        for name in sorted(self.intents):
            self.synonyms(f'intent "{name}"', self.intents[name], self.intents.key_at(name))
        for path, state, _ in _walk(self.states):
            if isinstance(state, LMap) and isinstance(state.get("intents"), LMap):
                for name in sorted(state["intents"]):
                    self.synonyms(f'state "{path}" intent "{name}"', state["intents"][name],
                                  state["intents"].key_at(name))
        routing = self.definition.get("routing")
        if not isinstance(routing, LMap):
            return
        at = self.definition.key_at("routing")
        max_age = routing.get("cache_max_age")
        if max_age not in (None, ""):  # an app.Duration: refused when the file is decoded (duration.go:28-45)
            try:
                parse_app_duration(str(max_age))
            except ValueError as exc:
                self.add(routing.value_at("cache_max_age"), f"app.Duration: {exc}", "routing.cache_max_age")
        high, mid = routing.get("semantic_high_bar", 0.80), routing.get("semantic_mid_bar", 0.65)
        high = high if isinstance(high, (int, float)) and not isinstance(high, bool) else 0.80
        mid = mid if isinstance(mid, (int, float)) and not isinstance(mid, bool) else 0.65
        if not 0 <= high <= 1:
            self.add(at, f"routing.semantic_high_bar: {high:.4f} is outside [0, 1]", "routing.semantic_high_bar")
        if not 0 <= mid <= 1:
            self.add(at, f"routing.semantic_mid_bar: {mid:.4f} is outside [0, 1]", "routing.semantic_mid_bar")
        if high > 0 and mid > 0 and not high > mid:
            self.add(at, f"routing.semantic_high_bar ({high:.4f}) must be greater than routing.semantic_mid_bar "
                         f"({mid:.4f})", "routing.semantic_high_bar")
        fallback = routing.get("free_form_fallback")
        if isinstance(fallback, LMap):
            state_path, intent = str(fallback.get("state") or "").strip(), str(fallback.get("intent") or "").strip()
            if not state_path:
                self.add(at, "routing.free_form_fallback.state is required")
                return
            if not intent:
                self.add(at, "routing.free_form_fallback.intent is required")
                return
            state = lookup(self.states, state_path)
            if state is None:
                self.add(at, f'routing.free_form_fallback.state "{state_path}" is not declared in states')
                return
            if intent not in (state.get("on") or {}):
                self.add(at, f'routing.free_form_fallback.intent "{intent}" has no matching on: arc in state '
                             f'"{state_path}"')
                return
            found = None
            parts = state_path.split(".")
            for depth in range(len(parts), 0, -1):
                candidate = lookup(self.states, ".".join(parts[:depth]))
                if candidate is not None and isinstance(candidate.get("intents"), LMap) and intent in candidate["intents"]:
                    found = candidate["intents"][intent]
                    break
            found = found if found is not None else self.intents.get(intent)
            if found is None:
                self.add(at, f'routing.free_form_fallback.intent "{intent}" is not a declared intent')
            elif not _one_required_string(found):
                self.add(at, f'routing.free_form_fallback.intent "{intent}" must declare exactly one required string '
                             "slot to receive the free-text utterance")

    def synonyms(self, where: str, intent: Any, at: tuple[str, int, int]) -> None:
        if not isinstance(intent, LMap):
            return
        for index, phrase in enumerate(intent.get("synonyms") or ()):
            if not str(phrase if phrase is not None else "").strip():
                self.add(at, f"{where}: synonyms[{index}] is empty")
        slots = intent.get("slots") if isinstance(intent.get("slots"), LMap) else LMap()
        for slot_name in sorted(slots):
            slot = slots[slot_name]
            if not isinstance(slot, LMap) or not slot.get("synonyms"):
                continue
            slot_at = slots.key_at(slot_name)
            if slot.get("type") != "enum":
                self.add(slot_at, f'{where} slot "{slot_name}": synonyms: is only valid on enum slots (got type '
                                  f'"{slot.get("type") or ""}")')
                continue
            values = [str(value) for value in slot.get("values") or ()]
            for key in sorted(slot["synonyms"]):
                if key not in values:
                    self.add(slot_at, f'{where} slot "{slot_name}": synonyms key "{key}" is not in values: '
                                      f"[{' '.join(values)}]")
                    continue
                for index, phrase in enumerate(slot["synonyms"][key] or ()):
                    if not str(phrase if phrase is not None else "").strip():
                        self.add(slot_at, f'{where} slot "{slot_name}": synonyms["{key}"][{index}] is empty')

    def reach_into_child(self) -> None:
        if not self.wrappers:
            return
        for name in self.states:
            if name in self.wrappers:
                continue
            state = self.states[name]
            if isinstance(state, LMap):
                self._reach(name, state)

    def _reach(self, top: str, state: LMap) -> None:
        def check(target: Any, where: str, at: tuple[str, int, int]) -> None:
            if not isinstance(target, str) or target in ("", ".") or "{{" in target or target.startswith(".."):
                return
            normal = target.replace("/", ".")
            alias, dot, rest = normal.partition(".")
            if not dot or alias not in self.wrappers or rest == self.wrappers[alias].entry:
                return
            entry = self.wrappers[alias].entry
            self.add(at, f'state "{top}" {where} targets "{target}" which reaches into the imported child "{alias}" '
                         f'past its entry "{entry}"; use target: "{alias}" to invoke the child or have the child '
                         "expose a new exit")

        on = state.get("on") if isinstance(state.get("on"), LMap) else {}
        for intent, arms in on.items():
            for index, arm in enumerate(arms if isinstance(arms, LSeq) else ()):
                if isinstance(arm, LMap):
                    check(arm.get("target"), f"on.{intent}[{index}].target", arm.at)
        timeout = state.get("timeout")
        if isinstance(timeout, LMap):
            check(timeout.get("target"), "timeout.target", timeout.at)
        for index, effect in enumerate(state.get("on_enter") or ()):
            if isinstance(effect, LMap):
                check(effect.get("on_error"), f"on_enter[{index}].on_error", effect.at)
                check(effect.get("target"), f"on_enter[{index}].target", effect.at)
        for child in (state.get("states") or {}).values():
            if isinstance(child, LMap):
                self._reach(top, child)


def validate_definition(definition: LMap, wrappers: dict[str, Wrapper]) -> list[ConfigIssue]:
    """Inject the free-form fallback into `definition` (which the caller owns), then check it."""
    apply_fallback(definition)
    return _Checks(definition, wrappers).run()
