"""The orchestrator path of a flow: a session that dispatches host calls between machine turns.

kitsoki runs a flow through its orchestrator when the fixture has `host_handlers`, a cassette,
or an `advance_clock` turn (internal/testrunner/flows.go shouldUseOrchestrator). One
`Session.run_intent` is the orchestrator's RunIntent (internal/orchestrator/helpers.go):

1. the machine turn; a rejection is the outcome (MISSING_SLOTS asks for clarification instead:
   no failure, the state stays);
2. the turn's host calls are dispatched (core.flows.hosts); a failed call with `on_error:`
   enters that state and runs its on_enter, dispatching its own calls (redirect depth cap 4);
3. otherwise the landed state's on_enter `emit_intent`s are re-evaluated against the post-bind
   world, dispatching what they emit and its host calls, up to 4 nested rounds; an error there
   is recorded and the session stays where it was;
4. the landed state's `timeout:` is armed on the fake clock.

`advance` moves the fake clock and fires due timeouts (target's on_enter and its host calls).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

from core.flows.app import AppModel
from core.flows.clock import MAX_ROUNDS, FakeClock, parse_duration_ns
from core.flows.expressions import ExprError
from core.flows.hosts import Registry, dispatch
from core.flows.machine import Abort, Event, HostCall, Machine, TurnResult, Unsupported, resolve_target
from core.flows.values import GoInt, go_quote
from core.flows.views import render_say, render_state, render_turn, with_error_banner
from core.kitsoki.duration import DurationError

POST_BIND_MAX_DEPTH = 4
"""kitsoki's OrchestratorPostBindMaxDepth."""
REDIRECT_MAX_DEPTH = 4
SESSION_ID = "flow-session"
"""kitsoki's session id is a fresh ULID per flow; nothing can assert on its value."""


View = Callable[[], str]
"""A view rendered on demand: only a turn that checks its view pays for (or trips on) it."""


def _empty() -> str:
    return ""


@dataclass
class Outcome:
    mode: str
    """transitioned, completed, rejected or clarify."""
    state: str
    events: list[Event] = field(default_factory=list)
    code: str = ""
    hint: str = ""
    harness_error: str = ""
    view: View = _empty
    """kitsoki's outcome.View: the turn's render, the post-bind re-render, the redirect's banner."""


class Session:
    def __init__(self, app: AppModel, machine: Machine, registry: Registry, state: str,
                 world: dict[str, Any], initial_keys: set[str] | frozenset = frozenset()) -> None:
        self.app = app
        self.machine = machine
        self.registry = registry
        self.state = state
        self.world = world
        self.clock = FakeClock()
        self.turn_state = state
        """The state the current intent turn started in (kitsoki's rig.currentStatePath)."""
        self.evented: dict[str, str] = {key: "set" for key in world if key in initial_keys}
        """World keys the journey holds as events, and how the last one changed them."""
        self.arm_timeout("", state)

    # -- the journey --

    def record(self, events: list[Event]) -> None:
        for event in events:
            if event.kind != "world.update":
                continue
            for how in ("set", "increment"):
                for key in event.payload.get(how) or {}:
                    self.evented[key] = how

    def override(self, values: dict[str, Any]) -> None:
        """`world_override`: synthetic set events before the turn."""
        self.world.update(copy.deepcopy(values))
        for key in values:
            self.evented[key] = "set"

    def reload(self) -> None:
        """kitsoki's loadJourney replays the world from its events through JSON: a value a `set`
        wrote comes back with every number a float64, a declared `int` as int64 (an `increment`
        is replayed as int64 too)."""
        world = dict(self.world)
        for key, how in self.evented.items():
            if how == "set" and key in world:
                value = _as_json_numbers(world[key])
                var = self.app.world.get(key)
                if var is not None and var.type == "int" and isinstance(value, float):
                    value = GoInt(int(value), "int64")  # kitsoki's coerceWorldVar for declared ints
                world[key] = value
        self.world = world

    # -- timeouts --

    def arm_timeout(self, previous: str, new: str) -> None:
        if previous and previous != new:
            self.clock.cancel(previous)
        found = self.app.states.get(new)
        if not new or found is None or found.timeout is None:
            return
        after, target = found.timeout
        try:
            ns = parse_duration_ns(after)
        except DurationError:
            return
        if ns > 0:
            self.clock.arm(new, target, ns)

    def advance(self, ns: int) -> list[Event]:
        """Move the fake clock and settle the timeouts that fall due."""
        self.clock.advance(ns)
        events: list[Event] = []
        for _ in range(MAX_ROUNDS):
            due = self.clock.due()
            if not due:
                return events
            for timer in due:
                self.clock.cancel(timer.state)
                if self.state == timer.state:
                    self.reload()
                    fired = self._fire(timer.state, timer.target)
                    self.record(fired)
                    events.extend(fired)
        raise Abort(f"advance_clock: timeouts did not settle in {MAX_ROUNDS} rounds")

    def _fire(self, source: str, target: str) -> list[Event]:
        found = self.app.states.get(target)
        if found is None:
            raise Abort(f"fireTimeout: target state {go_quote(target)} not found")
        events = [Event("machine.timeout", {"from": source, "to": target}),
                  Event("machine.transition", {"from": source, "to": target, "intent": "__timeout__"})]
        world = self.world
        if found.on_enter:
            result = TurnResult(target, world)
            landed, world = self.machine.run_effects_and_state(target, world, found.on_enter, result)
            events.extend(result.events)
            if landed and landed != target:
                target = landed
            if result.host_calls:
                more, world, redirect, _ = self.dispatch_calls(result.host_calls, world, target, 0)
                events.extend(more)
                if redirect:
                    target = redirect
        self.state, self.world = target, world
        self.arm_timeout("", target)
        return events

    # -- one intent --

    def seed(self) -> None:
        """What kitsoki's loadJourney seeds into every turn's world: `ide.connected` (no IDE link
        in a flow) and a `session_id`."""
        ide = self.world.get("ide")
        if isinstance(ide, dict):
            ide["connected"] = False
        else:
            self.world["ide"] = {"connected": False}
        if not (isinstance(self.world.get("session_id"), str) and self.world["session_id"]):
            self.world["session_id"] = SESSION_ID

    def run_intent(self, intent: str, slots: dict[str, Any]) -> Outcome:
        previous = self.state
        self.seed()
        result = self.machine.turn(self.state, self.world, intent, slots)
        if result.error is not None:
            code, _message, hint = result.error
            if code == "MISSING_SLOTS":
                return Outcome("clarify", self.state)
            return Outcome("rejected", self.state, list(result.events), code=code, hint=hint)
        events = [Event("machine.intent_accepted", {"intent": intent, "slots": slots}), *result.events]
        state, world = result.state, result.world
        view: View = _empty
        if not any(call.bind for call in result.host_calls):  # kitsoki leaves the render to the re-render
            view = self._lazy(render_turn, state, world, result.arm_view, list(result.say), dict(slots))
        calls = result.host_calls
        more, world, redirect, host_view = self.dispatch_calls(calls, world, state, 0)
        events.extend(more)
        if calls and host_view is not None:
            view = host_view
        harness_error = ""
        if redirect:
            state = redirect
            message = world.get("last_error")
            if isinstance(message, str) and message:
                view = _banner(view, message)
        else:
            state, world, harness_error, settled = self._settle(state, world, events, 0)
            if settled is not None:
                view = _or(settled, view)
        self.state, self.world = state, world
        self.record(events)
        self.arm_timeout(previous, state)
        found = self.app.states.get(state)
        mode = "completed" if found is not None and found.terminal else "transitioned"
        return Outcome(mode, state, events, harness_error=harness_error, view=view)

    def _lazy(self, function, *args) -> View:
        return lambda: function(self.app, *args)

    def _settle(self, state: str, world: dict[str, Any], events: list[Event],
                depth: int) -> tuple[str, dict[str, Any], str, View | None]:
        """kitsoki's settlePostBindEmits: (state, world, harness error, the re-render when emits fired)."""
        if depth > POST_BIND_MAX_DEPTH:
            message = (f"settlePostBindEmits: orchestrator recursion depth {depth} exceeded cap "
                       f"{POST_BIND_MAX_DEPTH}")
            events.append(Event("harness.error", {"phase": "settle_post_bind_emits", "error": message}))
            return state, world, message, None
        result = TurnResult(state, world)
        try:
            landed, new_world, dispatched = self.machine.post_bind_emits(state, world, result)
        except (ExprError, Abort) as exc:
            message = str(exc)
            events.append(Event("harness.error", {"phase": "dispatch_post_bind_emits", "error": message}))
            return state, world, message, None
        if not dispatched:
            return state, world, "", None
        events.extend(result.events)
        state, world = landed, new_world
        say = list(result.say)
        error = ""
        if result.host_calls:
            more, world, redirect, _ = self.dispatch_calls(result.host_calls, world, state, 0)
            events.extend(more)
            if redirect:
                state = redirect
            state, world, error, _ = self._settle(state, world, events, depth + 1)
        final = self._lazy(_said_view, state, world, say)
        return state, world, error, final

    # -- host calls --

    def dispatch_calls(self, calls: list[HostCall], world: dict[str, Any], state: str,
                       depth: int) -> tuple[list[Event], dict[str, Any], str, View | None]:
        """kitsoki's dispatchHostCalls with its on_error redirect: (events, world, the landed state
        when a redirect happened else "", the view it re-rendered or None)."""
        if not calls:
            return [], world, "", None
        for call in calls:
            call.namespace = self.machine.resolve_interface(call.namespace)
        out = dispatch(self.registry, calls, world)
        if not out.redirect:
            view = self._lazy(render_state, state, out.world) if out.applied else None
            return out.events, out.world, "", view
        more, world, landed = self._enter_redirect(state, out.redirect, out.world, depth)
        if not landed:
            return out.events + more, world, "", None
        return out.events + more, world, landed, self._lazy(render_state, landed, world)

    def _enter_redirect(self, prior: str, target: str, world: dict[str, Any],
                        depth: int) -> tuple[list[Event], dict[str, Any], str]:
        if depth > REDIRECT_MAX_DEPTH:
            raise Unsupported(f"on_error redirect chain deeper than {REDIRECT_MAX_DEPTH} (from {prior} to {target})")
        target = resolve_target(prior, target) if target.startswith("..") else target.replace("/", ".")
        found = self.app.states.get(target)
        if found is None:
            # kitsoki logs the dispatch error and goes on without a redirect (so `on_error: .`
            # stops the remaining calls and keeps last_error, nothing more).
            message = f"orchestrator: on_error target state {go_quote(target)} not found"
            return [Event("harness.error", {"phase": "on_error", "error": message})], world, ""
        if target == prior:
            return [], world, target
        events = [Event("machine.transition", {"from": prior, "to": target, "intent": "on_error"}),
                  Event("machine.state_exited", {"state": prior}), Event("machine.state_entered", {"state": target})]
        landed = target
        if found.on_enter:
            result = TurnResult(target, world)
            emitted, world = self.machine.run_effects_and_state(target, copy.deepcopy(world), found.on_enter, result)
            events.extend(result.events)
            if emitted and emitted != target:
                landed = emitted
            if result.host_calls:
                for call in result.host_calls:
                    call.namespace = self.machine.resolve_interface(call.namespace)
                out = dispatch(self.registry, result.host_calls, world)
                events.extend(out.events)
                world = out.world
                if out.redirect:
                    more, world, nested = self._enter_redirect(landed, out.redirect, world, depth + 1)
                    events.extend(more)
                    return events, world, nested
        return events, world, landed


def _said_view(app: AppModel, state: str, world: dict[str, Any], say: list) -> str:
    view = render_state(app, state, world)
    if not view:
        return ""
    said = render_say(app, state, say)
    return f"{said}\n\n{view}" if said else view


def _or(first: View, fallback: View) -> View:
    """The first view unless it renders empty (kitsoki keeps the earlier view then)."""
    def pick() -> str:
        return first() or fallback()
    return pick


def _banner(view: View, message: str) -> View:
    return lambda: with_error_banner(view(), message)


def _as_json_numbers(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return {key: _as_json_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_json_numbers(item) for item in value]
    return value
