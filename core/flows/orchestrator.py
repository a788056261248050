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

from dataclasses import dataclass, field
from typing import Any, Callable

from core.flows.app import AppModel
from core.flows.clock import MAX_ROUNDS, FakeClock, parse_duration_ns
from core.flows.expressions import ExprError, ExprUnsupported, eval_bool, render_value
from core.flows.ids import SESSION_ID
from core.flows.jobs import Jobs, Notification
from core.flows.jobs import run as run_job
from core.flows.jobs import submit as submit_job
from core.flows.hosts import Registry, dispatch
from core.flows.machine import Abort, Event, HostCall, Machine, TurnResult, Unsupported
from core.kitsoki.checks import resolve_target
from core.flows.values import GoInt, copy_value, go_quote
from core.flows.views import render_say, render_state, render_turn, with_error_banner
from core.kitsoki.duration import DurationError

POST_BIND_MAX_DEPTH = 4
"""kitsoki's OrchestratorPostBindMaxDepth."""
REDIRECT_MAX_DEPTH = 4
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


REAL_SLEEP_MARGIN_NS = 4_000_000_000
"""Foreground stub delays (real sleeps) up to this much inside one advance_clock wait are safely
under kitsoki's 5 s deadline; more is declined rather than raced."""


class Session:
    def __init__(self, app: AppModel, machine: Machine, registry: Registry, state: str,
                 world: dict[str, Any], initial_keys: set[str] | frozenset = frozenset(), staged: bool = False) -> None:
        self.app = app
        self.staged = staged
        """`mode: staged`: the post-bind emit chain rests at decision gates (core.flows.decisions)."""
        self.machine = machine
        self.registry = registry
        self.state = state
        self.world = world
        self.clock = FakeClock()
        self.jobs = Jobs()
        self._last_entered = ""
        self.turn_state = state
        """The state the current intent turn started in (kitsoki's rig.currentStatePath)."""
        self.evented: dict[str, str] = {key: "set" for key in world if key in initial_keys}
        """World keys the journey holds as events, and how the last one changed them."""
        self._replayed: tuple[dict[str, Any], dict[str, str]] | None = None
        """(the world reload made, the events it replayed): reloading that again gives the same values."""
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
        self.world.update(copy_value(values))
        if values:
            self._replayed = None
        for key in values:
            self.evented[key] = "set"

    def reload(self) -> None:
        """kitsoki's loadJourney replays the world from its events through JSON: a value a `set`
        wrote comes back with every number a float64, a declared `int` as int64 (an `increment`
        is replayed as int64 too)."""
        if self._replayed is not None and self._replayed[0] is self.world and self._replayed[1] == self.evented:
            return  # nothing happened since the last replay (a JSON round trip of its result is itself)
        world = dict(self.world)
        for key, how in self.evented.items():
            if how == "set" and key in world:
                value = _as_json_numbers(world[key])
                var = self.app.world.get(key)
                if var is not None and var.type == "int" and isinstance(value, float):
                    value = GoInt(int(value), "int64")  # kitsoki's coerceWorldVar for declared ints
                world[key] = value
        self.world = world
        self._replayed = (world, dict(self.evented))

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
        """kitsoki's advanceAndWait: jobs that finish at once are drained first, then the fake
        clock moves and due jobs and timeouts settle, earliest first, at most 32 rounds. kitsoki
        gives the whole wait 5 s of real time, which foreground stub delays (real sleeps) use up."""
        slept = self.registry.real_sleep_ns
        events = self._advance(ns)
        slept = self.registry.real_sleep_ns - slept
        if slept >= REAL_SLEEP_MARGIN_NS:
            raise Unsupported(f"foreground host_handlers delays sleeping {slept / 1e9:g}s of real time while "
                              "advance_clock waits (kitsoki gives the wait 5s; past it the run stops)")
        return events

    def _advance(self, ns: int) -> list[Event]:
        events = self.drain()
        self.clock.advance(ns)
        for _ in range(MAX_ROUNDS):
            timers = [(t.fires_at, 1, t) for t in self.clock.due()]
            finished = [(job.due or 0, 0, job) for job in self.jobs.due(self.clock.now)]
            if not timers and not finished:
                parked = self.jobs.pending()
                if parked:  # kitsoki waits for every job to finish: a job still sleeping fails the run
                    raise Abort(f"advance_clock: scheduler WaitIdle: context deadline exceeded (job {parked[0].namespace} "
                                "still sleeping on the fake clock)")
                return events
            for _, kind, item in sorted(timers + finished, key=lambda entry: (entry[0], entry[1])):
                if kind == 0:
                    events.extend(self._complete(item))
                    continue
                self.clock.cancel(item.state)
                if self.state == item.state:
                    self.reload()
                    fired = self._fire(item.state, item.target)
                    self.record(fired)
                    events.extend(fired)
        raise Abort(f"advance_clock: drain did not stabilize after {MAX_ROUNDS} iterations")

    def drain(self) -> list[Event]:
        """The park barrier: every job without a delay finishes (and those it starts, bounded)."""
        events: list[Event] = []
        for _ in range(MAX_ROUNDS):
            ready = self.jobs.immediate()
            if not ready:
                return events
            for job in ready:
                events.extend(self._complete(job))
        raise Abort(f"advance_clock: jobs did not park after {MAX_ROUNDS} rounds")

    # -- background jobs --

    def _submitter(self, state: str):
        def submit(call: HostCall, args: dict[str, Any], world: dict[str, Any]) -> list[Event]:
            return submit_job(self.jobs, self.registry, call, args, state, self.clock.now, world)
        return submit

    def _complete(self, job) -> list[Event]:
        """kitsoki's handleJobTerminal for one finished job. `last_job_*` are visible to the
        on_complete effects but, never written as events, not kept in the journey; an effect
        that fails drops the whole completion (kitsoki logs it and persists nothing)."""
        status, data, error = run_job(job, self.registry)
        job.status, job.error = status, error
        self.reload()
        world = dict(self.world)
        world["last_job_id"] = job.id
        world["last_job_status"] = status
        if data is not None:
            world["last_job_result"] = data
        events: list[Event] = []
        current = job.origin
        try:
            if self.state != job.origin:
                current = self.state  # stale: the session moved on, on_complete is dropped
            elif job.on_complete:
                current, world = self._on_complete(job, world, events)
        except Abort:
            return []
        for key in ("last_job_id", "last_job_status", "last_job_result"):
            written = any(key in (event.payload.get("set") or {}) for event in events if event.kind == "world.update")
            if not written:
                if key in self.world:
                    world[key] = self.world[key]
                else:
                    world.pop(key, None)
        world["inbox"] = self.jobs.summary()
        events.append(Event("world.update", {"set": {"inbox": world["inbox"]}}))
        self.jobs.inbox.append(Notification("success" if status == "done" else "error",
                                            f"Job {'done' if status == 'done' else 'failed'}: {job.namespace}"))
        previous = self.state
        self.state, self.world = current, world
        self.record(events)
        self.arm_timeout(previous, current)
        return events

    def _on_complete(self, job, world: dict[str, Any], events: list[Event]) -> tuple[str, dict[str, Any]]:
        current = job.origin
        result = TurnResult(job.origin, world)
        landed, world = self.machine.run_effects_and_state(job.origin, world, job.on_complete, result)
        events.extend(result.events)
        if landed and landed != job.origin:
            current = landed
        redirected = False
        if result.host_calls:
            more, world, redirect, _ = self.dispatch_calls(result.host_calls, world, job.origin, 0)
            events.extend(more)
            if redirect:
                current, redirected = redirect, True
        if not redirected:
            target = self._on_complete_target(job, world)
            if target:
                try:
                    entered, entered_world = self._enter_target(job.origin, target, world)
                except Abort:
                    return current, world  # kitsoki logs the target's error; the rest of the completion stands
                events.extend(entered)
                world = entered_world
                current = self._last_entered or target
        return current, world

    def _on_complete_target(self, job, world: dict[str, Any]) -> str:
        env = {"world": world, "slots": {}, "event": {}}
        for effect in job.on_complete:
            if not isinstance(effect, dict) or not effect.get("target"):
                continue
            when = str(effect.get("when") or "")
            if when.strip():
                try:
                    if not eval_bool(when, env):
                        continue
                except ExprError:
                    return ""  # kitsoki logs the error and stays
                except ExprUnsupported as exc:
                    raise Unsupported(f"on_complete when: {when.strip()} ({exc})") from None
            raw = str(effect["target"])
            resolved = _on_complete_path(job.origin, raw)
            if "{{" in resolved:
                # A templated target renders against the post-effects world, then resolves
                # again; a render error or a non-string leaves the session where it is (kitsoki
                # logs a warning).
                try:
                    rendered = render_value(resolved, env)
                except ExprError:
                    return ""
                except ExprUnsupported as exc:
                    raise Unsupported(f"on_complete target {go_quote(raw)} ({exc})") from None
                if not isinstance(rendered, str):
                    return ""
                resolved = _on_complete_path(job.origin, rendered.strip())
            return resolved if resolved in self.app.states else ""
        return ""

    def _enter_target(self, origin: str, target: str, world: dict[str, Any]) -> tuple[list[Event], dict[str, Any]]:
        """resolveAndApplyOnCompleteTarget: enter the target and run its on_enter (effects, then
        its host calls). kitsoki drops the world these return but appends their events, and the
        journey it reloads replays them: their sets, increments and binds are kept."""
        events = [Event("machine.transition", {"from": origin, "to": target, "intent": "__on_complete_target__"})]
        self._last_entered = target
        found = self.app.states[target]
        if found.on_enter:
            result = TurnResult(target, world)
            landed, world = self.machine.run_effects_and_state(target, world, found.on_enter, result)
            events.extend(result.events)
            if landed and landed != target:
                self._last_entered = landed
            if result.host_calls:
                more, world, _, _ = self.dispatch_calls(result.host_calls, world, self._last_entered, 0)
                events.extend(more)
        return events, world

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
            if ide.get("connected") is not False:
                ide["connected"] = False
                self._replayed = None
        else:
            self.world["ide"] = {"connected": False}
            self._replayed = None
        if not (isinstance(self.world.get("session_id"), str) and self.world["session_id"]):
            self.world["session_id"] = SESSION_ID
            self._replayed = None

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
            state, world, harness_error, view = self._settle(state, world, events, 0, view)
        self.state, self.world = state, world
        self.record(events)
        self.arm_timeout(previous, state)
        found = self.app.states.get(state)
        mode = "completed" if found is not None and found.terminal else "transitioned"
        return Outcome(mode, state, events, harness_error=harness_error, view=view)

    def _lazy(self, function, *args) -> View:
        return lambda: function(self.app, *args)

    def _settle(self, state: str, world: dict[str, Any], events: list[Event], depth: int,
                view: View) -> tuple[str, dict[str, Any], str, View]:
        """kitsoki's settlePostBindEmits: (state, world, harness error, the turn's view). A nested
        dispatch's re-render replaces the view; each round's render of where it settled replaces
        it again unless that renders empty (an exit: the last non-empty view stays)."""
        if depth > POST_BIND_MAX_DEPTH:
            message = (f"settlePostBindEmits: orchestrator recursion depth {depth} exceeded cap "
                       f"{POST_BIND_MAX_DEPTH}")
            events.append(Event("harness.error", {"phase": "settle_post_bind_emits", "error": message}))
            return state, world, message, view
        result = TurnResult(state, world)
        try:
            landed, new_world, dispatched = self.machine.post_bind_emits(state, world, result, self.staged)
        except (ExprError, Abort) as exc:
            message = str(exc)
            events.append(Event("harness.error", {"phase": "dispatch_post_bind_emits", "error": message}))
            return state, world, message, view
        if not dispatched:
            return state, world, "", view
        events.extend(result.events)
        state, world = landed, new_world
        say = list(result.say)
        error = ""
        if result.host_calls:
            more, world, redirect, host_view = self.dispatch_calls(result.host_calls, world, state, 0)
            events.extend(more)
            if host_view is not None:
                view = _or(host_view, view)
            if redirect:
                state = redirect
            state, world, error, view = self._settle(state, world, events, depth + 1, view)
        return state, world, error, _or(self._lazy(_said_view, state, world, say), view)

    # -- host calls --

    def dispatch_calls(self, calls: list[HostCall], world: dict[str, Any], state: str,
                       depth: int) -> tuple[list[Event], dict[str, Any], str, View | None]:
        """kitsoki's dispatchHostCalls with its on_error redirect: (events, world, the landed state
        when a redirect happened else "", the view it re-rendered or None)."""
        if not calls:
            return [], world, "", None
        for call in calls:
            call.namespace = self.machine.resolve_interface(call.namespace)
        out = dispatch(self.registry, calls, world, self._submitter(state))
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
            emitted, world = self.machine.run_effects_and_state(target, copy_value(world), found.on_enter, result)
            events.extend(result.events)
            if emitted and emitted != target:
                landed = emitted
            if result.host_calls:
                for call in result.host_calls:
                    call.namespace = self.machine.resolve_interface(call.namespace)
                out = dispatch(self.registry, result.host_calls, world, self._submitter(landed))
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


_AS_IS = frozenset({str, bool, float, type(None)})
"""Leaves a JSON round trip gives back unchanged (an exact float: float(x) is x)."""


def _as_json_numbers(value: Any) -> Any:
    kind = type(value)  # the plain containers first, without a call per leaf (the world is replayed every turn)
    if kind is dict:
        return {key: item if type(item) in _AS_IS else _as_json_numbers(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _AS_IS else _as_json_numbers(item) for item in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return {key: _as_json_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_json_numbers(item) for item in value]
    return value


def _on_complete_path(origin: str, target: str) -> str:
    """kitsoki's resolveOnCompleteTarget: `..` segments walk up from the job's origin state;
    anything else is absolute (`/` reads as `.`), `.` included."""
    return resolve_target(origin, target) if target.startswith("..") else target.replace("/", ".")
