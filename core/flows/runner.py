"""A deterministic state machine over a loaded story: the built-in runner's turn engine.

It mirrors kitsoki's machine-only flow path (`internal/testrunner/flows.go` runOneFlowLegacy
over `internal/machine`) for a documented subset, and fails closed on everything else:

* a turn's intent is given (`intent: {name, slots}`) or routed from `input:` through the
  story's own examples and synonyms (the deterministic tiers of core.kitsoki.routing; kitsoki
  itself routes `input:` through a recording or an LLM);
* validation as kitsoki's: the intent must have an `on:` arm in the state or an ancestor
  (INTENT_NOT_ALLOWED_IN_STATE), required slots present (MISSING_SLOTS), enum slots in range
  (INVALID_SLOT_VALUE); no arm whose guard holds is GUARD_FAILED. A rejected turn keeps its
  state and world, fails, and counts as an error for `expect_no_errors`;
* arms: the first with `default: true`, no `when:`, or a `when:` that holds;
* `when:` in a small expression language (`world.<path>`, `slots.<path>`, numbers, quoted
  strings, true/false/nil/null, `== != < <= > >=`, `&& and || or ! not`, parentheses),
  parsed by a hand-written parser, never eval'd; anything else is refused;
* effects, each with an optional `when:`: `set` (literals, or one `{{ world.x }}` /
  `{{ slots.x }}` placeholder, coerced to the world variable's declared type as kitsoki does),
  `increment`, `say` (no output), `emit_intent` (+ `slots:`), chained after the turn like
  kitsoki (depth cap 8); `invoke` of a host handler is refused (no stubs in the subset);
* targets: `.` / none stays (no on_enter), an explicit target re-enters, `@exit:<name>` lands
  in `__exit__<name>` (terminal), `../x` is relative; entering a state runs its on_enter.

Where kitsoki would abort the whole run (a machine error: a guard that cannot be evaluated, an
emit chain with no arm, the depth cap) the flow fails at that turn and stops there.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from core.flows.fixtures import FlowFixture, unsupported
from core.flows.report import SESSION_TURN, FlowResult, TurnResult
from core.kitsoki.config import (
    _compose_file,
    _FileProblem,
    _plain,
    _Value,
    _ValueProblems,
)
from core.kitsoki.routing import Router
from core.kitsoki.story import (
    STORY_LIMITS,
    Intent,
    State,
    Story,
    Transition,
    Where,
    resolve_target,
)

EMIT_INTENT_MAX_DEPTH = 8
"""kitsoki's EmitIntentMaxDepth."""

WILDCARD = "*"
EFFECT_OPS = ("set", "increment", "say", "emit_intent")


class Unsupported(Exception):
    """The story or fixture uses something the built-in runner does not implement."""

    def __init__(self, what: str) -> None:
        super().__init__(unsupported(what))


class Abort(Exception):
    """kitsoki's machine would return an error here (the whole `test flows` run exits 2)."""


class _EvalError(Exception):
    """A guard or template that parses but cannot be evaluated against this world."""


# --- Go-compatible rendering of values in failure messages --------------------------------------


def go_quote(text: str) -> str:
    """Go's %q for ordinary strings."""
    return json.dumps(text, ensure_ascii=False)


def _go_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    digits = Decimal(repr(value))
    exponent = digits.adjusted()
    if -4 <= exponent < 6:  # %v is %g with the shortest digits: e-notation below 1e-4 and from 1e6 on
        text = format(digits, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa = format(digits.scaleb(-exponent), "f").rstrip("0").rstrip(".")
    return f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def go_value(value: Any) -> str:
    """Go's %v of a decoded YAML/JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_value(value[key])}" for key in sorted(value, key=str)) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_value(item) for item in value) + "]"
    return str(value)


def go_type(value: Any) -> str:
    """Go's %T of a decoded value (ints shown as int; kitsoki's YAML decoder may say uint64)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, (list, tuple)):
        return "[]interface {}"
    return type(value).__name__


def _json_normal(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 1e21 else value
    if isinstance(value, dict):
        return {str(key): _json_normal(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_normal(item) for item in value]
    return str(value)


def deep_equal(a: Any, b: Any) -> bool:
    """kitsoki's deepEqualValues: equal when both marshal to the same JSON (so 1 == 1.0)."""
    return json.dumps(_json_normal(a), sort_keys=True) == json.dumps(_json_normal(b), sort_keys=True)


# --- the `when:` expression subset -------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>\d+\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[<>!().])
""", re.VERBOSE)
_KEYWORDS = {"and": "&&", "or": "||", "not": "!"}
_LITERALS = {"true": True, "false": False, "nil": None, "null": None}
_ROOTS = ("world", "slots")
_COMPARE = ("==", "!=", "<", "<=", ">", ">=")


def _tokenize(source: str) -> list[tuple[str, Any]]:
    tokens: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            raise Unsupported(f"when: {source.strip()}")
        pos = match.end()
        kind = match.lastgroup
        text = match.group()
        if kind == "space":
            continue
        if kind == "number":
            tokens.append(("lit", float(text) if any(c in text for c in ".eE") else int(text)))
        elif kind == "string":
            tokens.append(("lit", _unquote(text, source)))
        elif kind == "name" and text in _KEYWORDS:
            tokens.append(("op", _KEYWORDS[text]))
        elif kind == "name" and text in _LITERALS:
            tokens.append(("lit", _LITERALS[text]))
        elif kind == "name":
            tokens.append(("name", text))
        else:
            tokens.append(("op", text))
    return tokens


_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t"}


def _unquote(text: str, source: str) -> str:
    out, chars = [], iter(text[1:-1])
    for char in chars:
        if char == "\\":
            escaped = _ESCAPES.get(next(chars, ""))
            if escaped is None:
                raise Unsupported(f"when: {source.strip()}")
            out.append(escaped)
        else:
            out.append(char)
    return "".join(out)


class _Parser:
    """or := and (|| and)* ; and := cmp (&& cmp)* ; cmp := unary [op unary] ;
    unary := ! unary | primary ; primary := literal | world.path | slots.path | ( or )"""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokenize(source)
        self.pos = 0

    def refuse(self) -> Unsupported:
        return Unsupported(f"when: {self.source.strip()}")

    def peek(self) -> tuple[str, Any] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, Any]:
        token = self.peek()
        if token is None:
            raise self.refuse()
        self.pos += 1
        return token

    def parse(self) -> tuple:
        if not self.tokens:
            raise self.refuse()
        tree = self.disjunction()
        if self.peek() is not None:
            raise self.refuse()
        return tree

    def disjunction(self) -> tuple:
        left = self.conjunction()
        while self.peek() == ("op", "||"):
            self.take()
            left = ("||", left, self.conjunction())
        return left

    def conjunction(self) -> tuple:
        left = self.comparison()
        while self.peek() == ("op", "&&"):
            self.take()
            left = ("&&", left, self.comparison())
        return left

    def comparison(self) -> tuple:
        left = self.unary()
        token = self.peek()
        if token is not None and token[0] == "op" and token[1] in _COMPARE:
            self.take()
            left = (token[1], left, self.unary())
            after = self.peek()
            if after is not None and after[0] == "op" and after[1] in _COMPARE:
                raise self.refuse()  # chained comparisons mean something else in kitsoki's language
        return left

    def unary(self) -> tuple:
        if self.peek() == ("op", "!"):
            self.take()
            return ("!", self.unary())
        return self.primary()

    def primary(self) -> tuple:
        kind, value = self.take()
        if kind == "lit":
            return ("lit", value)
        if kind == "op" and value == "(":
            inner = self.disjunction()
            if self.take() != ("op", ")"):
                raise self.refuse()
            return inner
        if kind == "name" and value in _ROOTS:
            path = [value]
            while self.peek() == ("op", "."):
                self.take()
                part_kind, part = self.take()
                if part_kind != "name":
                    raise self.refuse()
                path.append(part)
            if len(path) < 2:
                raise self.refuse()
            return ("path", tuple(path))
        raise self.refuse()


_COMPILED: dict[str, tuple] = {}


def compile_guard(source: str) -> tuple:
    """Parse a `when:` expression; Unsupported when it is outside the subset."""
    tree = _COMPILED.get(source)
    if tree is None:
        tree = _Parser(source).parse()
        _COMPILED[source] = tree
    return tree


def _lookup(path: tuple[str, ...], env: dict[str, Any]) -> Any:
    value: Any = env.get(path[0]) or {}
    for part in path[1:]:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise _EvalError(f"cannot fetch {part} from {go_type(value)}")
        value = value.get(part)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return deep_equal(a, b) if type(a) is type(b) else False


def _evaluate(tree: tuple, env: dict[str, Any]) -> Any:
    op = tree[0]
    if op == "lit":
        return tree[1]
    if op == "path":
        return _lookup(tree[1], env)
    if op == "!":
        value = _evaluate(tree[1], env)
        if not isinstance(value, bool):
            raise _EvalError(f"invalid operation: ! ({go_type(value)})")
        return not value
    if op in ("&&", "||"):
        left = _evaluate(tree[1], env)
        if not isinstance(left, bool):
            raise _EvalError(f"invalid operation: {go_type(left)} {op} ...")
        if (op == "&&" and not left) or (op == "||" and left):
            return left
        right = _evaluate(tree[2], env)
        if not isinstance(right, bool):
            raise _EvalError(f"invalid operation: bool {op} {go_type(right)}")
        return right
    left, right = _evaluate(tree[1], env), _evaluate(tree[2], env)
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if not ((_is_number(left) and _is_number(right)) or (isinstance(left, str) and isinstance(right, str))):
        raise _EvalError(f"invalid operation: {go_type(left)} {op} {go_type(right)}")
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def eval_guard(source: str, world: dict[str, Any], slots: dict[str, Any]) -> bool:
    """Evaluate a `when:`; Unsupported outside the subset, _EvalError when it cannot be evaluated."""
    value = _evaluate(compile_guard(source), {"world": world, "slots": slots})
    if not isinstance(value, bool):
        raise _EvalError(f"expected bool, got {go_type(value)}")
    return value


_PLACEHOLDER = re.compile(r"^\s*\{\{\s*((?:world|slots)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*\}\}\s*$")


def resolve_value(value: Any, world: dict[str, Any], slots: dict[str, Any]) -> Any:
    """kitsoki's resolveEffectValue for the subset: literals, or one `{{ world.x }}` / `{{ slots.x }}`."""
    if isinstance(value, str):
        if "{{" not in value:
            return value
        match = _PLACEHOLDER.match(value)
        if match is None:
            raise Unsupported(f"template {go_quote(value)}")
        return copy.deepcopy(_lookup(tuple(match.group(1).split(".")), {"world": world, "slots": slots}))
    if isinstance(value, list):
        return [resolve_value(item, world, slots) for item in value]
    if isinstance(value, dict):
        return {key: resolve_value(item, world, slots) for key, item in value.items()}
    return value


# --- raw YAML of arms and on_enter steps --------------------------------------------------------


class _RawIndex:
    """The plain YAML mapping that starts at a given file:line:col, read from the story files.

    The story model splits an effect entry into one Effect per key and keeps only invoke /
    emit_intent of an on_enter step, losing `when:`, `slots:` and set/increment there; the
    runner reads those entries back from the file so nothing is silently dropped.
    """

    def __init__(self) -> None:
        self.files: dict[str, dict[tuple[int, int], _Value]] = {}

    def lookup(self, where: Where) -> Any:
        index = self.files.get(where.file)
        if index is None:
            index = {}
            try:
                self._walk(_compose_file(Path(where.file), STORY_LIMITS), index)
            except (_FileProblem, _ValueProblems):
                pass
            self.files[where.file] = index
        value = index.get((where.line, where.column))
        return None if value is None else _plain(value)

    def _walk(self, value: _Value, index: dict[tuple[int, int], _Value]) -> None:
        if value.kind == "map":
            index.setdefault((value.at.line, value.at.column), value)
            children = value.data.values()
        elif value.kind == "seq":
            children = value.data
        else:
            return
        for child in children:
            self._walk(child, index)


# --- the machine --------------------------------------------------------------------------------


@dataclass
class Outcome:
    state: str
    world: dict[str, Any]
    error: str | None = None
    """kitsoki's ValidationError as "CODE: message" when the intent was rejected."""


@dataclass
class Machine:
    story: Story
    raw: _RawIndex = field(default_factory=_RawIndex)
    _router: Router | None = None

    # -- structure --

    def chain(self, state: str) -> Iterator[str]:
        """The state and its ancestors, leaf first (`a.b.c`, `a.b`, `a`)."""
        path = state
        while True:
            yield path
            if "." not in path:
                return
            path = path.rsplit(".", 1)[0]

    def allowed(self, state: str) -> list[str]:
        names = {name for path in self.chain(state) if path in self.story.states
                 for name in self.story.states[path].on if name != WILDCARD}
        return sorted(names)

    def has_children(self, state: str) -> bool:
        prefix = f"{state}."
        return any(name.startswith(prefix) for name in self.story.states)

    def lookup_intent(self, state: str, name: str) -> Intent | None:
        for path in self.chain(state):
            found = self.story.states.get(path)
            if found is not None and name in found.intents:
                return found.intents[name]
        return self.story.intents.get(name)

    def router(self) -> Router:
        if self._router is None:
            self._router = Router(self.story.all_intents(), strict=False)
        return self._router

    # -- one turn --

    def route(self, state: str, text: str) -> tuple[str | None, dict[str, Any], str | None]:
        """(intent, slots, failure) for an `input:` turn, routed among the state's intents."""
        verdict = self.router().route(text, allow=self.allowed(state))
        if verdict.intent is None:
            why = f" (ambiguous: {', '.join(verdict.candidates)})" if verdict.tier == "tie" else ""
            return None, {}, f"input {go_quote(text)} routed to no intent{why}"
        return verdict.intent, dict(verdict.slots), None

    def validate(self, state: str, intent: str, slots: dict[str, Any]) -> str | None:
        if intent not in self.allowed(state):
            if any(WILDCARD in self.story.states[p].on for p in self.chain(state) if p in self.story.states):
                raise Unsupported(f"on: {WILDCARD} (wildcard handler in {state})")
            return (f"INTENT_NOT_ALLOWED_IN_STATE: intent {go_quote(intent)} is not allowed in state "
                    f"{go_quote(state)}")
        definition = self.lookup_intent(state, intent)
        if definition is None:
            return None
        missing = []
        for name in sorted(definition.slots):
            slot = definition.slots[name]
            value = slots.get(name)
            if slot.required and value is None:
                missing.append(name)
                continue
            if name in slots and slot.values and go_value(value) not in slot.values:
                return (f"INVALID_SLOT_VALUE: slot {go_quote(name)} value {go_quote(go_value(value))} is not one of "
                        f"{go_value(slot.values)}")
        if missing:
            return f"MISSING_SLOTS: intent requires slots: {go_value(missing)}"
        return None

    def find_transition(self, state: str, intent: str, world: dict[str, Any],
                        slots: dict[str, Any]) -> tuple[Transition | None, str, bool]:
        """(winning arm, the state it was found on, whether any handler exists)."""
        for path in self.chain(state):
            found = self.story.states.get(path)
            if found is None:
                continue
            arms = found.on.get(intent)
            if arms:
                return self._first_arm(arms, world, slots), path, True
            if found.on.get(WILDCARD):
                raise Unsupported(f"on: {WILDCARD} (wildcard handler in {path})")
        return None, state, False

    def _first_arm(self, arms: list[Transition], world: dict[str, Any], slots: dict[str, Any]) -> Transition | None:
        for arm in arms:
            if arm.default or not arm.when:
                return arm
            try:
                if eval_guard(arm.when, world, slots):
                    return arm
            except _EvalError as exc:
                raise Abort(f"guard {go_quote(arm.when)} on {arm.intent}: {exc}") from None
        return None

    def resolve(self, path: str, raw_target: str | None) -> str:
        raw = (raw_target or "").strip()
        if "{{" in raw or "{%" in raw:
            raise Unsupported(f"templated target {go_quote(raw)}")
        if raw in ("", "."):
            target = path
        elif raw.startswith(".."):  # kitsoki's relative reference, from the arm's state
            parts = path.split(".")
            for segment in raw.split("/"):
                if segment == "..":
                    parts = parts[:-1]
                elif segment not in (".", ""):
                    parts.append(segment)
            target = ".".join(parts)
        else:
            target = resolve_target(self.story, path, raw) or ""
        if target not in self.story.states:
            raise Abort(f"target {go_quote(raw)} (from state {go_quote(path)}) is not a state of this story")
        if self.has_children(target):
            raise Unsupported(f"compound state {target} as a target (initial: child selection)")
        return target

    def turn(self, state: str, world: dict[str, Any], intent: str, slots: dict[str, Any]) -> Outcome:
        """kitsoki's Machine.Turn for the subset."""
        error = self.validate(state, intent, slots)
        if error:
            return Outcome(state, world, error)
        arm, path, _ = self.find_transition(state, intent, world, slots)
        if arm is None:
            return Outcome(state, world, f"GUARD_FAILED: no transition matched for intent {go_quote(intent)} in "
                                         f"state {go_quote(state)}")
        target = self.resolve(path, arm.target)
        world, emits = self.apply(self.arm_effects(arm), world, slots, "effect")
        raw = (arm.target or "").strip()
        reentry = target == state and raw not in ("", ".")
        if target != state or reentry:
            for entered in ([state] if reentry else _enter_paths(state, target)):
                world, more = self.enter(entered, world, slots)
                emits.extend(more)
        if emits:
            target, world = self.dispatch(target, world, emits, 0)
        return Outcome(target, world)

    def enter(self, state: str, world: dict[str, Any], slots: dict[str, Any]) -> tuple[dict[str, Any], list]:
        found = self.story.states.get(state)
        if found is None or not found.on_enter:
            return world, []
        return self.apply(self.on_enter_steps(found), world, slots, "on_enter")

    def dispatch(self, state: str, world: dict[str, Any], emits: list[tuple[str, dict[str, Any]]],
                 depth: int) -> tuple[str, dict[str, Any]]:
        """kitsoki's dispatchEmittedIntents (one-shot mode): each emit is a synthetic turn."""
        if depth >= EMIT_INTENT_MAX_DEPTH:
            raise Abort(f"emit_intent: dispatch exceeded max depth ({EMIT_INTENT_MAX_DEPTH}) at state "
                        f"{go_quote(state)} — likely a cyclic emit chain")
        for name, slots in emits:
            arm, path, _ = self.find_transition(state, name, world, slots)
            if arm is None:
                raise Abort(f"emit_intent {go_quote(name)} at {go_quote(state)}: no transition arm matched "
                            "(intent has no on: handler, or all guards failed)")
            target = self.resolve(path, arm.target)
            world, chained = self.apply(self.arm_effects(arm), world, slots, "effect")
            if target != state:
                for entered in _enter_paths(state, target):
                    world, more = self.enter(entered, world, slots)
                    chained.extend(more)
            state = target
            if chained:
                state, world = self.dispatch(state, world, chained, depth + 1)
        return state, world

    # -- effects --

    def arm_effects(self, arm: Transition) -> list[Any]:
        raw = self.raw.lookup(arm.at)
        if isinstance(raw, dict):
            effects = raw.get("effects")
            if effects is None:
                return []
            if not isinstance(effects, list):
                raise Unsupported("effects: (not a list)")
            return effects
        return [{effect.op: effect.args} for effect in arm.effects]

    def on_enter_steps(self, state: State) -> list[Any]:
        steps = []
        for step in state.on_enter:
            raw = self.raw.lookup(step.at)
            if isinstance(raw, dict):
                steps.append(raw)
            elif step.invoke:
                steps.append({"invoke": step.invoke})
            elif step.emit_intent:
                steps.append({"emit_intent": step.emit_intent})
            else:
                raise Unsupported(f"on_enter step at {step.at}")
        return steps

    def apply(self, effects: list[Any], world: dict[str, Any], slots: dict[str, Any],
              context: str) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        """kitsoki's applyEffects: a new world and the emitted intents, in order."""
        world = copy.deepcopy(world)
        emits: list[tuple[str, dict[str, Any]]] = []
        for effect in effects:
            if not isinstance(effect, dict):
                raise Unsupported(f"{context} entry {go_quote(go_value(effect))}")
            if "invoke" in effect:
                when = effect.get("when")
                if when and not self._effect_when(when, effect, world, slots):
                    continue
                handler = effect["invoke"]
                raise Unsupported(f"on_enter invoke {handler}" if context == "on_enter" else "effect invoke")
            extra = [key for key in effect if key not in EFFECT_OPS and key != "when"
                     and not (key == "slots" and "emit_intent" in effect)]
            if extra:
                raise Unsupported(f"effect {extra[0]}")
            ops = [key for key in ("set", "increment", "say") if key in effect]
            if len(ops) > 1:
                raise Unsupported(f"effect {'+'.join(ops)} in one entry")
            when = effect.get("when")
            if when is not None and not isinstance(when, str):
                raise Unsupported(f"effect when: {go_value(when)}")
            if when and not self._effect_when(when, effect, world, slots):
                continue
            if "set" in effect:
                self._set(effect["set"], world, slots)
            elif "increment" in effect:
                self._increment(effect["increment"], world)
            if "emit_intent" in effect:
                emit = self._emit(effect, world, slots)
                if emit is not None:
                    emits.append(emit)
        return world, emits

    def _effect_when(self, when: str, effect: dict[str, Any], world: dict[str, Any], slots: dict[str, Any]) -> bool:
        try:
            return eval_guard(when, world, slots)
        except _EvalError as exc:
            if "emit_intent" in effect:
                return False  # kitsoki defers it to a post-bind pass the machine-only runner never makes
            raise Abort(f"effect when {go_quote(when)}: eval: {exc}") from None

    def _set(self, values: Any, world: dict[str, Any], slots: dict[str, Any]) -> None:
        if not isinstance(values, dict):
            raise Unsupported(f"effect set: {go_value(values)} (not a mapping)")
        snapshot = world  # every key of one set: renders against the pre-block world
        resolved = {key: resolve_value(values[key], snapshot, slots) for key in sorted(values)}
        for key, value in resolved.items():
            world[key] = self._coerce(key, value)

    def _coerce(self, key: str, value: Any) -> Any:
        var = self.story.world.get(key)
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

    def _increment(self, deltas: Any, world: dict[str, Any]) -> None:
        if not isinstance(deltas, dict):
            raise Unsupported(f"effect increment: {go_value(deltas)} (not a mapping)")
        for key, delta in deltas.items():
            if not isinstance(delta, int) or isinstance(delta, bool):
                raise Unsupported(f"effect increment {key}: {go_value(delta)} (not a whole number)")
            world[key] = _to_int(world.get(key)) + delta

    def _emit(self, effect: dict[str, Any], world: dict[str, Any],
              slots: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        name = effect["emit_intent"]
        if not isinstance(name, str):
            raise Unsupported(f"emit_intent: {go_value(name)}")
        if "{{" in name:
            value = resolve_value(name, world, slots)
            name = "" if value is None else go_value(value).strip()
        if not name:
            return None
        emit_slots = effect.get("slots") or {}
        if not isinstance(emit_slots, dict):
            raise Unsupported(f"emit_intent slots: {go_value(emit_slots)} (not a mapping)")
        return name, {key: resolve_value(value, world, slots) for key, value in emit_slots.items()}


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


def _enter_paths(old: str, new: str) -> list[str]:
    """The levels of `new` that `old` does not share, outermost first (kitsoki's stateEnterPaths)."""
    if old == new:
        return []
    old_parts, new_parts = old.split("."), new.split(".")
    common = 0
    while common < min(len(old_parts), len(new_parts)) and old_parts[common] == new_parts[common]:
        common += 1
    return [".".join(new_parts[: i + 1]) for i in range(common, len(new_parts))]


# --- one fixture --------------------------------------------------------------------------------


def run_fixture(fixture: FlowFixture, story: Story, file: str, machine: Machine | None = None) -> FlowResult:
    """Run one flow document against a story; every problem is a failure, never an exception."""
    result = FlowResult(File=file, Passed=False)
    if fixture.problems:
        result.Turns.append(TurnResult(TurnIndex=SESSION_TURN, Passed=False, Failures=list(fixture.problems)))
        return result
    machine = machine or Machine(story)
    state = fixture.initial_state or story.root or ""
    setup = []
    if not state:
        setup.append("initial_state is not set and the story declares no root state")
    elif state not in story.states:
        setup.append(f"initial_state: {go_quote(state)} is not a state of this story")
    if setup:
        result.Turns.append(TurnResult(TurnIndex=SESSION_TURN, Passed=False, Failures=setup))
        return result

    world = {name: copy.deepcopy(var.default) for name, var in story.world.items()}
    world.update(copy.deepcopy(fixture.initial_world))
    had_error = False
    stopped_at: int | None = None

    for index, turn in enumerate(fixture.turns):
        record = TurnResult(TurnIndex=index, Passed=False, NewState=state)
        try:
            if turn.intent is not None:
                intent, slots = turn.intent.name, copy.deepcopy(turn.intent.slots)
            else:
                intent, slots, failure = machine.route(state, turn.input or "")
                if failure:
                    had_error = True
                    record.Failures.append(failure)
            if intent is not None:
                outcome = machine.turn(state, world, intent, slots)
                if outcome.error:
                    had_error = True
                    record.Failures.append(f"unexpected validation error: {outcome.error}")
                state, world = outcome.state, outcome.world
        except Unsupported as exc:
            record.Failures.append(str(exc))
            stopped_at = index
        except Abort as exc:
            record.Failures.append(f"turn {index + 1}: {exc} (kitsoki stops the run here)")
            stopped_at = index
        record.NewState = state
        if stopped_at is None:
            record.Failures.extend(_turn_checks(turn, state, world))
        record.Passed = not record.Failures
        result.Turns.append(record)
        if stopped_at is not None:
            break

    session: list[str] = []
    if stopped_at is not None:
        remaining = len(fixture.turns) - stopped_at - 1
        if remaining:
            session.append(f"turns {stopped_at + 2}..{len(fixture.turns)} not run: the flow stopped at turn "
                           f"{stopped_at + 1}")
    else:
        landed = story.states.get(state)
        if fixture.expect_terminal and not (landed is not None and landed.terminal):
            session.append(f"expect_terminal: state {go_quote(state)} is not terminal")
        if fixture.expect_no_errors and had_error:
            session.append("expect_no_errors: there were validation errors")
        for key, want in fixture.expect_world_final.items():
            got = world.get(key)
            if not deep_equal(got, want):
                session.append(f"expect_world_final[{go_quote(key)}]: got {go_value(got)}, want {go_value(want)}")
    result.Passed = all(turn.Passed for turn in result.Turns) and not session
    if session:
        result.Turns.append(TurnResult(TurnIndex=SESSION_TURN, Passed=False, Failures=session))
    return result


def _turn_checks(turn: Any, state: str, world: dict[str, Any]) -> list[str]:
    failures = []
    if turn.expect_state and state != turn.expect_state:
        failures.append(f"expect_state: got {go_quote(state)}, want {go_quote(turn.expect_state)}")
    if turn.expect_not_state and state == turn.expect_not_state:
        failures.append(f"expect_not_state: state must not be {go_quote(turn.expect_not_state)}")
    if turn.expect_state_in and state not in turn.expect_state_in:
        failures.append(f"expect_state_in: {go_quote(state)} not in {go_value(turn.expect_state_in)}")
    for key, want in turn.expect_world.items():
        got = world.get(key)
        if not deep_equal(got, want):
            failures.append(f"expect_world[{go_quote(key)}]: got {go_value(got)} ({go_type(got)}), "
                            f"want {go_value(want)} ({go_type(want)})")
    return failures
