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
from typing import Any

from core.flows.app import AppModel
from core.flows.clock import MAX_ROUNDS, FakeClock, parse_duration_ns
from core.flows.expressions import ExprError
from core.flows.hosts import Registry, dispatch
from core.flows.machine import Abort, Event, HostCall, Machine, TurnResult, Unsupported, resolve_target
from core.flows.values import go_quote
from core.kitsoki.duration import DurationError

POST_BIND_MAX_DEPTH = 4
"""kitsoki's OrchestratorPostBindMaxDepth."""
REDIRECT_MAX_DEPTH = 4
SESSION_ID = "flow-session"
"""kitsoki's session id is a fresh ULID per flow; nothing can assert on its value."""


@dataclass
class Outcome:
    mode: str
    """transitioned, completed, rejected or clarify."""
    state: str
    events: list[Event] = field(default_factory=list)
    code: str = ""
    hint: str = ""
    harness_error: str = ""


class Session:
    def __init__(self, app: AppModel, machine: Machine, registry: Registry, state: str,
                 world: dict[str, Any]) -> None:
        self.app = app
        self.machine = machine
        self.registry = registry
        self.state = state
        self.world = world
        self.clock = FakeClock()
        self.arm_timeout("", state)

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
                    events.extend(self._fire(timer.state, timer.target))
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
                more, world, redirect = self.dispatch_calls(result.host_calls, world, target, 0)
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
        more, world, redirect = self.dispatch_calls(result.host_calls, world, state, 0)
        events.extend(more)
        harness_error = ""
        if redirect:
            state = redirect
        else:
            state, world, harness_error = self._settle(state, world, events, 0)
        self.state, self.world = state, world
        self.arm_timeout(previous, state)
        found = self.app.states.get(state)
        mode = "completed" if found is not None and found.terminal else "transitioned"
        return Outcome(mode, state, events, harness_error=harness_error)

    def _settle(self, state: str, world: dict[str, Any], events: list[Event], depth: int) -> tuple[str, dict[str, Any], str]:
        """kitsoki's settlePostBindEmits."""
        if depth > POST_BIND_MAX_DEPTH:
            message = (f"settlePostBindEmits: orchestrator recursion depth {depth} exceeded cap "
                       f"{POST_BIND_MAX_DEPTH}")
            events.append(Event("harness.error", {"phase": "settle_post_bind_emits", "error": message}))
            return state, world, message
        result = TurnResult(state, world)
        try:
            landed, new_world, dispatched = self.machine.post_bind_emits(state, world, result)
        except (ExprError, Abort) as exc:
            message = str(exc)
            events.append(Event("harness.error", {"phase": "dispatch_post_bind_emits", "error": message}))
            return state, world, message
        if not dispatched:
            return state, world, ""
        events.extend(result.events)
        state, world = landed, new_world
        if result.host_calls:
            more, world, redirect = self.dispatch_calls(result.host_calls, world, state, 0)
            events.extend(more)
            if redirect:
                state = redirect
            return self._settle(state, world, events, depth + 1)
        return state, world, ""

    # -- host calls --

    def dispatch_calls(self, calls: list[HostCall], world: dict[str, Any], state: str,
                       depth: int) -> tuple[list[Event], dict[str, Any], str]:
        """kitsoki's dispatchHostCalls with its on_error redirect: (events, world, landed state
        when a redirect happened, else "")."""
        if not calls:
            return [], world, ""
        for call in calls:
            call.namespace = self.machine.resolve_interface(call.namespace)
        out = dispatch(self.registry, calls, world)
        if not out.redirect:
            return out.events, out.world, ""
        more, world, landed = self._enter_redirect(state, out.redirect, out.world, depth)
        return out.events + more, world, landed

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
