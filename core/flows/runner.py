"""Run one flow fixture against a story, on kitsoki's machine-only or orchestrator path.

kitsoki picks the path per fixture (internal/testrunner/flows.go shouldUseOrchestrator): a
non-empty `host_handlers`, an `advance_clock` turn or `use_orchestrator: true` runs the flow
through the orchestrator (core.flows.orchestrator: host calls dispatched to the stubs, post-bind
emits, on_error, the fake clock); anything else runs the machine alone (core.flows.machine:
invokes are recorded as `harness.called`, never dispatched, so a non-zero `expect_host_calls`
cannot pass there). The two paths differ where kitsoki's do:

* a rejected intent fails the turn with `unexpected validation error: CODE: msg` (machine-only)
  or `unexpected rejection: code=CODE hint=HINT` (orchestrator, where MISSING_SLOTS asks for
  clarification instead and fails nothing);
* `world_override` is applied before every turn (machine-only) or only before `intent:` turns
  (orchestrator); `input:` turns are routed by the fixture's `recording:` on the machine path
  (core.flows.recording; without one kitsoki stops the run, and so does this runner) and are
  fatal on the orchestrator path, as in kitsoki;
* a turn with `expect_error` checks only that;
* on the orchestrator path assertions read the journey as kitsoki reloads it after the turn (a
  `set` value's numbers come back as float64, a declared int as int64), and the view is the
  turn's outcome view (its render, the post-bind re-render, an on_error banner), else a render
  of where the turn settled (core.flows.views); the machine-only path renders the landed state.

Where kitsoki's run would stop with an error, the flow fails at that turn with `(kitsoki stops the
run here)`: kitsoki aborts the whole app run there (exit 2, no report), and the report's `fatal()`
says so. What the runner cannot judge is `not supported by the built-in runner: <what>` on the turn
kitsoki would have run (its own index, never a synthetic one), naming the turns not run after it;
every failure of such a flow starts with that marker.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from core.flows.app import AppModel, app_model
from core.flows.clock import parse_duration_ns
from core.flows.expressions import ExprError, ExprUnsupported, render
from core.flows.builtins import Files
from core.flows.fixtures import UNSUPPORTED, FlowFixture, FlowTurn
from core.flows.hosts import CassetteError, CassetteHandler, Cassette, Registry, load_cassette, read_stubs
from core.flows.machine import Abort, Event, Machine, Unsupported
from core.flows.orchestrator import Session
from core.flows.recording import Recording, RecordingError, load_recording
from core.flows.report import FATAL, SESSION_TURN, FlowResult, TurnResult
from core.flows.starlark.host import Handler as StarlarkHandler
from core.flows.starlark.host import StarlarkDeclined
from core.flows.values import copy_value, deep_equal, go_quote, go_type, go_value
from core.flows.views import ViewError, render_state, view_matches
from core.kitsoki.duration import DurationError
from core.kitsoki.story import Story

__all__ = ["Abort", "Unsupported", "deep_equal", "go_quote", "go_value", "run_fixture"]


def run_fixture(fixture: FlowFixture, story: Story, file: str, router_cache: dict | None = None) -> FlowResult:
    """Run one flow document against a story; every problem is a failure, never an exception."""
    result = FlowResult(File=file, Passed=False)
    if fixture.problems:
        result.Turns.append(TurnResult(TurnIndex=SESSION_TURN, Passed=False, Failures=list(fixture.problems)))
        return result
    app = app_model(story)
    blocked = app.needs_loader + app.problems
    if blocked:
        result.Turns.append(_not_started(fixture, str(Unsupported(blocked[0]))))
        return result
    state = fixture.initial_state or app.root
    if "#" in state:
        result.Turns.append(_not_started(fixture, str(Unsupported(f"initial_state {state} inside a parallel state "
                                                                  "(type: parallel)"))))
        return result
    setup = []
    if not state:
        setup.append("initial_state is not set and the story declares no root state")
    elif state not in app.states:
        setup.append(f"initial_state: {go_quote(state)} is not a state of this story")
    if setup:
        result.Turns.append(TurnResult(TurnIndex=SESSION_TURN, Passed=False, Failures=setup))
        return result
    inside = [path for path in _ancestors(state) if app.states[path].type == "parallel"] if state in app.states else []
    if inside:
        result.Turns.append(_not_started(fixture, str(Unsupported(f"initial_state {state} inside a parallel state "
                                                                  "(type: parallel)"))))
        return result
    run = _Run(fixture, app, state, router_cache if router_cache is not None else {})
    return run.execute(result)


def _not_started(fixture: FlowFixture, unsupported: str) -> TurnResult:
    """A flow the runner cannot start: said on the first turn kitsoki would run (its index 0)."""
    count = len(fixture.turns)
    return TurnResult(TurnIndex=0, Passed=False,
                      Failures=[f"{unsupported} (the flow did not start: {count} turn{'' if count == 1 else 's'} "
                                "not run)"])


def _ancestors(state: str) -> list[str]:
    parts = state.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


class _Run:
    def __init__(self, fixture: FlowFixture, app: AppModel, state: str, router_cache: dict) -> None:
        self.fixture = fixture
        self.app = app
        self.machine = Machine(app, fixture.host_bindings)
        self.router_cache = router_cache
        world = app.world_defaults()
        world.update(copy_value(fixture.initial_world))
        self.orchestrated = fixture.orchestrated
        self.state, self.world = state, world
        self.recorded_state = fixture.initial_state or ""
        """The state a recording is looked up in: kitsoki's runner starts from the fixture's initial_state
        as written ("" when absent), then the state each turn lands in."""
        self.session: Session | None = None
        self.setup_problems: list[str] = []
        self.cassette: Cassette | None = None
        self.had_error = False
        self.events: list[Event] = []
        self.last_view = ""
        self.recording: Recording | None = None
        if fixture.recording and not self.orchestrated:
            path = Path(fixture.recording)
            try:
                self.recording = load_recording(path if path.is_absolute() else fixture.file.parent / path)
            except RecordingError as exc:
                self.setup_problems.append(f"{exc} {FATAL}")
        if self.orchestrated:
            stubs: dict[str, Any] = dict(read_stubs(fixture.host_handlers, self.setup_problems))
            # kitsoki's builtins write files that later flows of the same run read back
            files = router_cache.setdefault("builtin_files", Files())
            registry = Registry(stubs, bool(fixture.host_bindings), files, self._starlark(fixture, app))
            self.session = Session(app, self.machine, registry, state, world, set(fixture.initial_world),
                                   staged=fixture.mode == "staged")
            if fixture.host_cassette:
                self._load_cassette(registry)

    def _starlark(self, fixture: FlowFixture, app: AppModel) -> StarlarkHandler | None:
        """The real host.starlark.run with the fixture's replay cassettes (paths relative to the
        fixture file, as kitsoki reads them)."""
        def beside(name: str) -> Path | None:
            if not name:
                return None
            path = Path(name)
            return path if path.is_absolute() else fixture.file.parent / path
        try:
            return StarlarkHandler(app.dir, beside(fixture.starlark_http_cassette),
                                   beside(fixture.starlark_inspect_cassette), bool(fixture.host_bindings))
        except StarlarkDeclined as exc:
            self.setup_problems.append(str(Unsupported(f"host.starlark.run: {exc}")))
            return None

    def _load_cassette(self, registry: Registry) -> None:
        path = Path(self.fixture.host_cassette)
        if not path.is_absolute():
            path = self.fixture.file.parent / path
        try:
            self.cassette = load_cassette(path)
        except CassetteError as exc:
            self.setup_problems.append(f"buildOrchestratorRig: load cassette: {exc} {FATAL}")
            return
        except Unsupported as exc:
            self.setup_problems.append(str(exc))
            return
        session = self.session
        for name in self.cassette.handlers():
            registry.stubs[name] = CassetteHandler(self.cassette, name, lambda: session.turn_state)

    def execute(self, result: FlowResult) -> FlowResult:
        if self.setup_problems:
            unsupported = [problem for problem in self.setup_problems if problem.startswith(UNSUPPORTED)]
            if unsupported and len(unsupported) == len(self.setup_problems):
                result.Turns.append(_not_started(self.fixture, unsupported[0]))
            else:
                result.Turns.append(TurnResult(TurnIndex=SESSION_TURN, Passed=False, Failures=self.setup_problems))
            return result
        stopped_at: int | None = None
        for index, turn in enumerate(self.fixture.turns):
            record = TurnResult(TurnIndex=index, Passed=False, NewState=self.current_state)
            self.last_view = ""
            try:
                record.Failures.extend(self._turn(index, turn))
            except Unsupported as exc:
                record.Failures = [str(exc)]
                stopped_at = index
            except Abort as exc:
                record.Failures = [f"turn {index + 1}: {exc} {FATAL}"]
                stopped_at = index
            record.NewState = self.current_state
            record.View = self.last_view  # filled when the turn checked its view
            record.Passed = not record.Failures
            result.Turns.append(record)
            if stopped_at is not None:
                break
        session: list[str] = []
        if stopped_at is not None:
            remaining = len(self.fixture.turns) - stopped_at - 1
            last = result.Turns[-1]
            if remaining and last.Failures and last.Failures[0].startswith(UNSUPPORTED):
                # Said on the turn it stopped at: kitsoki would run those turns, so no turn of ours
                # (and no synthetic one) may read as theirs.
                span = f"turn {stopped_at + 2}" if remaining == 1 else f"turns {stopped_at + 2}..{len(self.fixture.turns)}"
                last.Failures = [f"{last.Failures[0]} ({span} not run after it)"]
        else:
            session.extend(self._session_checks())
        result.Passed = all(turn.Passed for turn in result.Turns) and not session
        if session:
            result.Turns.append(TurnResult(TurnIndex=SESSION_TURN, Passed=False, Failures=session))
        return result

    @property
    def current_state(self) -> str:
        return self.session.state if self.session is not None else self.state

    @property
    def current_world(self) -> dict[str, Any]:
        return self.session.world if self.session is not None else self.world

    # -- one turn --

    def _turn(self, index: int, turn: FlowTurn) -> list[str]:
        if self.session is not None:
            return self._orchestrated_turn(index, turn)
        return self._machine_turn(turn)

    def _machine_turn(self, turn: FlowTurn) -> list[str]:
        failures: list[str] = []
        if turn.advance_clock:
            raise Unsupported("advance_clock without an intent on the machine-only path")
        if turn.intent is not None:
            intent, slots = turn.intent.name, copy_value(turn.intent.slots)
        elif self.recording is not None:
            try:
                intent, slots = self.recording.route(self.recorded_state, turn.input or "")
            except RecordingError as exc:
                raise Abort(str(exc)) from None
        else:
            # kitsoki resolves an input: turn only through a recording; without one its run stops here
            # (internal/testrunner/flows.go runOneFlowLegacy), whatever the story's phrasings say.
            raise Abort(f"input {go_quote(turn.input or '')} requires a recording but none was loaded")
        self.world.update(copy_value(turn.world_override))
        before = copy_value(self.world)
        outcome = self.machine.turn(self.state, self.world, intent, slots)
        self.events.extend(outcome.events)
        if turn.expect_error is not None:
            return self._expect_error(turn, outcome.error[0] if outcome.error else None, "")
        self.recorded_state = outcome.state
        if outcome.error:
            self.had_error = True
            code, message, _hint = outcome.error
            failures.append(f"unexpected validation error: {code}: {message}")
        else:
            self.state, self.world = outcome.state, outcome.world
        failures.extend(self._turn_checks(turn, outcome.events, before, slots, self._state_view))
        return failures

    def _state_view(self) -> str:
        return render_state(self.app, self.current_state, self.current_world)

    def _orchestrated_turn(self, index: int, turn: FlowTurn) -> list[str]:
        session = self.session
        assert session is not None
        job_status = {job.id: job.status for job in session.jobs.jobs}
        events: list[Event] = []
        slots: dict[str, Any] = {}
        outcome = None
        if turn.intent is not None:
            session.reload()
            session.turn_state = session.state  # what a cassette's `phase` reads during this turn
            slots = {key: self._render_slot(value) for key, value in turn.intent.slots.items()}
            session.override(turn.world_override)
            session.reload()
            before = copy_value(session.world)
            outcome = session.run_intent(turn.intent.name, slots)
            events = outcome.events
        elif turn.input:
            raise Abort(f"input: {go_quote(turn.input)} in orchestrator-path fixture; use intent: instead "
                        "(recording routing not yet supported on orchestrator path)")
        else:
            before = copy_value(session.world)
        if turn.advance_clock:
            try:
                ns = parse_duration_ns(turn.advance_clock)
            except DurationError as exc:
                raise Abort(f"advance_clock {go_quote(turn.advance_clock)}: {exc}") from None
            if ns > 0:
                session.advance(ns)  # events of later rounds are not the turn's (kitsoki reads outcome.Events)
        if not turn.advance_clock and session.jobs.immediate():
            job = session.jobs.immediate()[0]
            raise Unsupported(f"background job {job.namespace} without a delay and no advance_clock in the turn "
                              "(kitsoki finishes it at a time the flow does not fix)")
        session.reload()  # kitsoki asserts on the journey reloaded after the turn
        self.events.extend(events)
        if turn.expect_error is not None:
            rejected = outcome is not None and outcome.mode == "rejected"
            if rejected:
                self.had_error = True
            return self._expect_error(turn, outcome.code if rejected else None, outcome.mode if outcome else "transitioned",
                                      orchestrated=True)
        failures: list[str] = []
        if outcome is not None and outcome.mode == "rejected":
            self.had_error = True
            failures.append(f"unexpected rejection: code={outcome.code} hint={outcome.hint}")
        produced = outcome.view if outcome is not None else None

        def view() -> str:  # kitsoki: the outcome's view, else a render of where the turn settled
            return (produced() if produced is not None else "") or self._state_view()

        failures.extend(self._turn_checks(turn, events, before, slots, view))
        if turn.expect_inbox is not None:
            failures.extend(_inbox_checks(session.jobs, turn.expect_inbox))
        if turn.expect_jobs:
            failures.extend(_job_checks(session.jobs, job_status, turn.expect_jobs))
        return failures

    def _render_slot(self, value: Any) -> Any:
        """kitsoki's renderSlots: a string slot with `{{ }}` is rendered against the pre-turn world."""
        if not isinstance(value, str) or "{{" not in value:
            return value
        if re.search(r"\{\{[^}]*\|", value) or "{%" in value:
            raise Unsupported(f"slot template {go_quote(value)} (pongo filters)")
        try:
            return render(value, {"world": self.current_world})
        except ExprUnsupported as exc:
            raise Unsupported(f"slot template {go_quote(value)} ({exc})") from None
        except ExprError as exc:
            return f"(renderSlots error for {go_quote(value)}: {exc})"

    # -- assertions --

    def _expect_error(self, turn: FlowTurn, code: str | None, mode: str, orchestrated: bool = False) -> list[str]:
        want = turn.expect_error or ""
        if code is None:
            if orchestrated:
                return [f"expected error {go_quote(want)} but got none (mode={mode})"]
            return [f"expected error {go_quote(want)} but got none"]
        if code != want:
            if orchestrated:
                return [f"expect_error: code got {go_quote(code)}, want {go_quote(want)}"]
            return [f"expected error code {go_quote(want)} but got {go_quote(code)}"]
        return []

    def _turn_checks(self, turn: FlowTurn, events: list[Event], before: dict[str, Any],
                     slots: dict[str, Any], view: Callable[[], str]) -> list[str]:
        state, world = self.current_state, self.current_world
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
        if turn.expect_world_full:
            for key, want in turn.expect_world_full.items():
                got = world.get(key)
                if not deep_equal(got, want):
                    failures.append(f"expect_world_full[{go_quote(key)}]: got {go_value(got)}, want {go_value(want)}")
            for key in world:
                if key not in turn.expect_world_full:
                    failures.append(f"expect_world_full: unexpected key {go_quote(key)} in world")
        if turn.expect_world_unchanged and self.session is None:
            for key, was in before.items():
                if not deep_equal(was, world.get(key)):
                    failures.append(f"expect_world_unchanged: world[{go_quote(key)}] changed from {go_value(was)} "
                                    f"to {go_value(world.get(key))}")
        if turn.expect_events:
            failures.extend(_events_subsequence(events, turn))
        for call in turn.expect_host_calls:
            got = _count_dispatched(events, call.handler, call.args)
            if call.times is not None:
                if got != call.times:
                    failures.append(f"expect_host_calls: {call.handler} expected {call.times} invocations, got {got}")
            elif got == 0:
                failures.append(f"expect_host_calls: {call.handler} never invoked (args={go_value(call.args)})")
        failures.extend(_forbidden_calls(events, turn.expect_no_host_calls))
        if turn.expect_view_matches:
            try:
                self.last_view = view()
            except ViewError as exc:
                raise Unsupported(f"a view kitsoki would fail to render ({exc})") from None
            failures.extend(view_matches(self.last_view, turn.expect_view_matches))
        for key, want in turn.expect_slots.items():
            got = slots.get(key)
            if not deep_equal(got, want):
                failures.append(f"expect_slots[{go_quote(key)}]: got {go_value(got)}, want {go_value(want)}")
        return failures

    def _session_checks(self) -> list[str]:
        state, world = self.current_state, self.current_world
        failures = []
        landed = self.app.states.get(state)
        if self.fixture.expect_terminal and not (landed is not None and landed.terminal):
            failures.append(f"expect_terminal: state {go_quote(state)} is not terminal")
        if self.fixture.expect_no_errors and self.had_error:
            failures.append("expect_no_errors: there were validation errors")
        for key, want in self.fixture.expect_world_final.items():
            got = world.get(key)
            if not deep_equal(got, want):
                failures.append(f"expect_world_final[{go_quote(key)}]: got {go_value(got)}, want {go_value(want)}")
        failures.extend(_forbidden_calls(self.events, self.fixture.expect_no_host_calls))
        if self.cassette is not None and self.fixture.strict_cassette_coverage and self.cassette.unplayed():
            failures.append(f"unexpected remaining episodes: [{' '.join(self.cassette.unplayed())}]")
        return failures


JOB_STATUSES = ("done", "failed", "cancelled", "awaiting_input")


def _job_checks(jobs: Any, before: dict[str, str], expected: list[dict[str, Any]]) -> list[str]:
    """kitsoki's assertJobs: the jobs that became terminal in this turn, matched by namespace."""
    failures = []
    for index, want in enumerate(expected):
        if not want.get("namespace"):
            failures.append(f"expect_jobs[{index}]: namespace is required")
        if want.get("status") not in JOB_STATUSES:
            failures.append(f"expect_jobs[{index}]: status {go_quote(str(want.get('status') or ''))} is not one of "
                            "done|failed|cancelled|awaiting_input")
    if failures:
        return failures
    ended = [job for job in jobs.jobs if job.status in JOB_STATUSES and before.get(job.id) not in JOB_STATUSES]
    if len(ended) < len(expected):
        return [f"expect_jobs: expected {len(expected)} jobs to terminate this turn, got {len(ended)}"]
    taken: set[str] = set()
    for index, want in enumerate(expected):
        match = next((job for job in ended if job.id not in taken and job.namespace == want["namespace"]), None)
        if match is None:
            remaining = [f"{job.namespace}/{job.status}" for job in ended if job.id not in taken]
            failures.append(f"expect_jobs[{index}]: no newly-terminal job found with namespace="
                            f"{go_quote(want['namespace'])} (remaining: {go_value(remaining)})")
            continue
        taken.add(match.id)
        if match.status != want["status"]:
            failures.append(f"expect_jobs[{index}]: namespace={go_quote(want['namespace'])} got status="
                            f"{go_quote(match.status)}, want {go_quote(want['status'])} (job_id={match.id}, "
                            f"error={go_quote(match.error)})")
    return failures


def _inbox_checks(jobs: Any, want: dict[str, Any]) -> list[str]:
    """kitsoki's assertInbox over the session's unread notifications."""
    unread = jobs.unread()
    failures = []
    if want.get("unread") is not None and len(unread) != want["unread"]:
        failures.append(f"expect_inbox.unread: got {len(unread)}, want {want['unread']}")
    if want.get("needs_attention") is not None:
        attention = sum(1 for note in unread if note.severity == "action_required")
        if attention != want["needs_attention"]:
            failures.append(f"expect_inbox.needs_attention: got {attention}, want {want['needs_attention']}")
    wanted = want.get("severities") or []
    got = sorted(note.severity for note in unread)
    if wanted and got != sorted(str(s) for s in wanted):
        failures.append(f"expect_inbox.severities: got {go_value(got)}, want {go_value(list(wanted))}")
    return failures


def _count_dispatched(events: list[Event], handler: str, args: dict[str, Any]) -> int:
    count = 0
    for event in events:
        if event.kind != "harness.dispatched" or event.payload.get("namespace") != handler:
            continue
        got = event.payload.get("args") or {}
        if all(deep_equal(got.get(key), want) for key, want in args.items()):
            count += 1
    return count


def _forbidden_calls(events: list[Event], handlers: list[str]) -> list[str]:
    banned = set(handlers)
    return [f"expect_no_host_calls: {event.payload.get('namespace')} was invoked but listed as forbidden"
            for event in events if event.kind == "harness.dispatched" and event.payload.get("namespace") in banned]


def _events_subsequence(events: list[Event], turn: FlowTurn) -> list[str]:
    failures, position = [], 0
    for want in turn.expect_events:
        found = False
        while position < len(events):
            event = events[position]
            position += 1
            if _event_matches(event, want):
                found = True
                break
        if not found:
            failures.append(f"expect_events: event {want.shown()} not found in subsequence")
    return failures


def _event_matches(event: Event, want: Any) -> bool:
    if event.kind != want.kind:
        return False
    payload = event.payload
    if want.from_ and payload.get("from") != want.from_:
        return False
    if want.to and payload.get("to") != want.to:
        return False
    return all(deep_equal(payload.get(key), value) for key, value in want.effect.items())

