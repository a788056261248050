"""Host stubs and host dispatch: what a flow's `host_handlers:` answer, and how an invoke runs.

A fixture's `host_handlers:` registers one canned handler per name (kitsoki's
internal/testrunner/hoststubs.go). A stub answers in this order: sleep `delay` on the fake
clock, ask `request_clarification`, then the `by_call[args.call]` envelope, the `by_op[args.op]`
envelope, `infra_error`, and finally `{data, error}`. A name is looked up exactly, then by its
longest registered dotted prefix, the dropped suffix becoming `args.op` unless the caller set one
(internal/host/host.go). Without `host_bindings:` only the stubs and
`host.jobs.answer_clarification` are registered, so any other name is an infrastructure error;
with it, kitsoki's builtins are registered too (core.flows.builtins answers the ones whose answer
follows from their arguments and files, and declines the rest).

`dispatch` is the orchestrator's dispatchHostCalls (internal/orchestrator/host_dispatch.go):
per call a `harness.dispatched` event with the args after re-rendering `with:` against the
invoke-time world plus earlier binds; an infrastructure error sets `last_error` and `host_error`
and follows `on_error` (else goes on); a domain error sets them too (with data, stderr,
exit_code), binds still apply, then `on_error`. A `bind:` value is a dot path into the result
data (`a.b[0]`) or a `{{ }}` template over `result` and `world`; a miss leaves the key unset.

A `host_cassette:` serves each handler its episodes name (internal/testrunner/cassette.go): the
first unplayed episode (or one with `replay: any`) whose every `match` key holds (`handler`,
`phase` = the turn's first state segment or `phase_from`, `schema_name` = the basename of
`args.schema`, any other key an arg, compared as JSON). A miss is an infrastructure error, not a
failure by itself; recording new episodes (`record_mode: new_episodes`) is not supported.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.flows.builtins import BUILTINS, Files
from core.flows.builtins import answer as answer_builtin
from core.flows.expressions import ExprError, ExprUnsupported, render_value
from core.flows.machine import Event, HostCall, Unsupported
from core.flows.values import copy_value, go_quote, go_value
from core.kitsoki.duration import DurationError
from core.safeio import read_regular

ANSWER_CLARIFICATION = "host.jobs.answer_clarification"
STARLARK_RUN = "host.starlark.run"
NO_JOB_CONTEXT = "host.RequestClarification: not running as a background job (no JobContext in ctx)"


class InfraError(Exception):
    """A handler failed at the infrastructure level (kitsoki: Invoke returned an error)."""


@dataclass
class Envelope:
    data: dict[str, Any] | None = None
    error: str = ""
    infra_error: str = ""


@dataclass
class HostStub:
    """One `host_handlers:` entry (kitsoki's HostStub)."""

    name: str
    envelope: Envelope = field(default_factory=Envelope)
    delay: str = ""
    request_clarification: str = ""
    by_op: dict[str, Envelope] = field(default_factory=dict)
    by_call: dict[str, Envelope] = field(default_factory=dict)

    def real_sleep_ns(self) -> int:
        """A foreground call's delay: kitsoki's stub sleeps on the clock of the call's context,
        which only a background job's carries (the scheduler's fake clock); a foreground call
        sleeps in real time and then answers. Raises InfraError when the delay does not parse."""
        if not self.delay:
            return 0
        from core.flows.clock import parse_duration_ns

        try:
            return max(0, parse_duration_ns(self.delay))
        except DurationError as exc:
            raise InfraError(f"stub {self.name}: parse delay: {exc}") from None

    def answer(self, args: dict[str, Any], background: bool = False) -> tuple[dict[str, Any] | None, str]:
        """(data, domain error) of one call; raises InfraError for an infrastructure error. A
        background call's delay is the job's (core.flows.jobs), a foreground one's the registry's."""
        if self.request_clarification:
            return None, NO_JOB_CONTEXT
        envelope = None
        call = args.get("call")
        if self.by_call and isinstance(call, str) and call in self.by_call:
            envelope = self.by_call[call]
        op = args.get("op")
        if envelope is None and self.by_op and isinstance(op, str) and op in self.by_op:
            envelope = self.by_op[op]
        if envelope is None:
            if self.envelope.infra_error:
                raise InfraError(self.envelope.infra_error)
            envelope = self.envelope
        elif envelope.infra_error:
            raise InfraError(envelope.infra_error)
        return copy.deepcopy(envelope.data), envelope.error


def _envelope(value: dict[str, Any]) -> Envelope:
    data = value.get("data")
    return Envelope(data=data if isinstance(data, dict) else None, error=str(value.get("error") or ""),
                    infra_error=str(value.get("infra_error") or ""))


def read_stubs(value: Any, problems: list[str]) -> dict[str, HostStub]:
    """`host_handlers:` as stubs; shape problems are appended to `problems` (keys kitsoki's
    non-strict decoder would drop are dropped here too)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append("host_handlers must be a mapping of handler name to stub")
        return {}
    stubs = {}
    for name, spec in value.items():
        name = str(name)
        spec = spec if isinstance(spec, dict) else {}
        stub = HostStub(name=name, envelope=_envelope(spec), delay=str(spec.get("delay") or ""),
                        request_clarification=str(spec.get("request_clarification") or ""))
        for key in ("by_op", "by_call"):
            table = spec.get(key)
            if isinstance(table, dict):
                setattr(stub, key, {str(k): _envelope(v if isinstance(v, dict) else {}) for k, v in table.items()})
            elif table is not None:
                problems.append(f"host_handlers.{name}.{key} must be a mapping")
        if spec.get("data") is not None and not isinstance(spec.get("data"), dict):
            problems.append(f"host_handlers.{name}.data must be a mapping")
        stubs[name] = stub
    return stubs


class Registry:
    """The handlers a flow's orchestrator can reach: the fixture's stubs, then a cassette's handlers
    (which replace stubs of the same name, as kitsoki registers them after)."""

    def __init__(self, stubs: dict[str, Any], bindings: bool = False, files: Files | None = None,
                 starlark: Any = None) -> None:
        self.stubs: dict[str, Any] = dict(stubs)
        self.bindings = bindings
        """`host_bindings:` set: kitsoki registers its real builtin handlers beside the stubs."""
        self.files = files if files is not None else Files()
        """What the builtins kitsoki would run have written (core.flows.builtins)."""
        self.starlark = starlark
        """The real host.starlark.run (core.flows.starlark.host.Handler): registered by a fixture's
        starlark_*_cassette, or among the builtins with host_bindings."""
        self.real_sleep_ns = 0
        """Real time kitsoki would have slept in foreground stub delays so far."""

    def lookup(self, name: str) -> tuple[Any, str]:
        """(stub, the registered name it matched) by exact name, then longest dotted prefix."""
        if name in self.stubs:
            return self.stubs[name], name
        current = name
        while "." in current:
            current = current.rsplit(".", 1)[0]
            if current in self.stubs:
                return self.stubs[current], current
        return None, ""

    def builtin(self, name: str) -> str:
        """The builtin `name` resolves to (exact, then longest dotted prefix), "" for none; only
        `host.jobs.answer_clarification` without `host_bindings`."""
        current = name
        while True:
            if current in BUILTINS and (self.bindings or current == ANSWER_CLARIFICATION):
                return current
            if current == STARLARK_RUN and self.starlark is not None and self.starlark.registered:
                return current
            if "." not in current:
                return ""
            current = current.rsplit(".", 1)[0]

    def invoke(self, name: str, args: dict[str, Any], background: bool = False,
               world: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str]:
        stub, registered = self.lookup(name)
        builtin = self.builtin(name)
        if builtin and (stub is None or len(builtin) > len(registered)):
            stub, registered = None, builtin  # a stub replaces a builtin of its own name only
        if registered != name and not (isinstance(args.get("op"), str) and args.get("op")):
            suffix = name[len(registered):].lstrip(".") if registered else ""
            if suffix:
                args["op"] = suffix
        if stub is None:
            if registered == ANSWER_CLARIFICATION:
                raise Unsupported(f"invoke {ANSWER_CLARIFICATION} (background jobs)")
            if registered == STARLARK_RUN and self.starlark is not None:
                if background or world is None:
                    raise Unsupported(f"invoke {STARLARK_RUN} as a background job")
                return self.starlark(args, world)
            if registered:
                return answer_builtin(registered, args, self.files)
            raise InfraError(f"host: no handler registered for {go_quote(name)}")
        if background and isinstance(stub, HostStub):
            return stub.answer(args, background=True)
        if isinstance(stub, HostStub):
            self.real_sleep_ns += stub.real_sleep_ns()
        return stub.answer(args)


# --- dispatch ---------------------------------------------------------------------------------


def _rerender(call: HostCall, binds: dict[str, Any], live: dict[str, Any] | None = None) -> dict[str, Any]:
    """kitsoki's rerenderHostArgs over dispatchRerenderWorld: `with:` against the invoke-time
    world plus earlier binds of this dispatch (a background call: the live world); a leaf that
    fails keeps its machine-time value."""
    if not call.raw_with:
        return dict(call.args)
    world = dict(live) if live is not None else {**call.world_snapshot, **binds}
    env = {**call.env, "world": world}

    def leaf(raw: Any, existing: Any, has: bool) -> Any:
        if isinstance(raw, str):
            if "{{" not in raw:
                return raw
            try:
                return render_value(raw, env)
            except ExprUnsupported as exc:
                raise Unsupported(f"invoke {call.namespace} with: {exc}") from None
            except ExprError:
                return existing if has else raw
        if isinstance(raw, dict):
            before = existing if isinstance(existing, dict) else {}
            return {k: leaf(v, before.get(k), k in before) for k, v in raw.items()}
        if isinstance(raw, list):
            before = existing if isinstance(existing, list) else []
            return [leaf(v, before[i] if i < len(before) else None, i < len(before)) for i, v in enumerate(raw)]
        return raw

    return {key: leaf(raw, call.args.get(key), key in call.args) for key, raw in call.raw_with.items()}


_SEGMENT = re.compile(r"^([^\[\]]*)((?:\[\d+\])*)$")


def bind_path(data: dict[str, Any] | None, path: str) -> tuple[Any, bool]:
    """kitsoki's lookupBindPath: `a.b[0].c` into the result data; (value, found)."""
    if data is None or not path:
        return None, False
    current: Any = data
    for segment in path.split("."):
        match = _SEGMENT.match(segment)
        if match is None:
            return None, False
        key, indices = match.group(1), [int(i) for i in re.findall(r"\[(\d+)\]", match.group(2))]
        if key:
            if not isinstance(current, dict) or key not in current:
                return None, False
            current = current[key]
        for index in indices:
            if not isinstance(current, list) or not 0 <= index < len(current):
                return None, False
            current = current[index]
    return current, True


@dataclass
class Dispatched:
    events: list[Event]
    world: dict[str, Any]
    redirect: str = ""
    applied: bool = False


def dispatch(registry: Registry, calls: list[HostCall], world: dict[str, Any], submit=None) -> Dispatched:
    """kitsoki's dispatchHostCalls (the redirect is returned, not entered); a background call goes
    to `submit(call, args, world) -> events` (core.flows.jobs)."""
    out = Dispatched(events=[], world=dict(world))
    if not calls:
        return out
    binds: dict[str, Any] = {}
    w = out.world
    for call in calls:
        if call.background:
            if submit is None:
                raise Unsupported(f"background: true on invoke {call.namespace} (jobs and on_complete)")
            out.events.extend(submit(call, _rerender(call, binds, live=w), w))
            out.applied = True
            continue
        args = _rerender(call, binds)
        out.events.append(Event("harness.dispatched", {"namespace": call.namespace, "args": copy_value(args),
                                                        "background": False}))
        try:
            data, error = registry.invoke(call.namespace, args, world=w)
        except InfraError as exc:
            message = str(exc)
            w["last_error"] = message
            w["host_error"] = {"namespace": call.namespace, "message": message}
            out.events.append(Event("world.update", {"set": {"last_error": message}}))
            out.events.append(Event("world.update", {"set": {"host_error": w["host_error"]}}))
            out.events.append(Event("harness.returned", {"namespace": call.namespace, "error": message}))
            out.applied = True
            if call.on_error:
                out.redirect = call.on_error
                break
            continue
        if error:
            w["last_error"] = error
            host_error: dict[str, Any] = {"namespace": call.namespace, "message": error}
            if data is not None:
                host_error["data"] = data
                for key in ("stderr", "exit_code"):
                    if key in data:
                        host_error[key] = data[key]
            w["host_error"] = host_error
            out.events.append(Event("world.update", {"set": {"last_error": error}}))
            out.events.append(Event("world.update", {"set": {"host_error": host_error}}))
        for key in sorted(call.bind):
            source = call.bind[key]
            if "{{" in source:
                env = {**call.env, "world": dict(w), "result": data or {}}
                try:
                    value = render_value(source, env)
                except ExprUnsupported as exc:
                    raise Unsupported(f"bind {key}: {exc}") from None
                except ExprError:
                    continue
            else:
                value, found = bind_path(data, source)
                if not found:
                    continue
            w[key] = value
            binds[key] = value
            out.events.append(Event("world.update", {"set": {key: value}}))
            out.applied = True
        payload: dict[str, Any] = {"namespace": call.namespace}
        if error:
            payload["error"] = error
        if data is not None:
            payload["data"] = data
        out.events.append(Event("harness.returned", payload))
        if error and call.on_error:
            out.redirect = call.on_error
            break
    return out


# --- host cassettes -------------------------------------------------------------------------------

INCLUDE_LINE = re.compile(r"^(\s*)([^:]+:\s*)!include\s+(.+?)\s*$")
RECORD_MODES = ("", "none", "new_episodes")


class CassetteError(Exception):
    """A cassette kitsoki would refuse to load (its run stops)."""


@dataclass
class Episode:
    id: str
    match: dict[str, Any]
    response: Envelope
    delay: str = ""
    replay: str = ""
    played: bool = False


@dataclass
class Cassette:
    """A `kind: host_cassette` file (kitsoki's internal/testrunner/cassette.go): canned host results
    matched by handler, phase, schema name and args."""

    path: Path
    episodes: list[Episode]
    record_mode: str = ""
    phase_from: re.Pattern | None = None

    def phase(self, state: str) -> str:
        if self.phase_from is not None:
            found = self.phase_from.search(state)
            return found.group(1) if found and found.lastindex else ""
        return state.split(".", 1)[0]

    def handlers(self) -> list[str]:
        seen: list[str] = []
        for episode in self.episodes:
            name = episode.match.get("handler")
            if isinstance(name, str) and name and name not in seen:
                seen.append(name)
        return seen

    def unplayed(self) -> list[str]:
        return [episode.id for episode in self.episodes if not episode.played]


def _resolve_includes(text: str, base: Path) -> str:
    """kitsoki's `key: !include file` line rewrite: a JSON file inlined compact, anything else as a string."""
    out = []
    for line in text.split("\n"):
        match = INCLUDE_LINE.match(line)
        if match is None:
            out.append(line)
            continue
        target = match.group(3).strip()
        if Path(target).is_absolute():
            raise CassetteError(f"!include {go_quote(target)}: absolute paths are not allowed")
        path = (base / target).resolve()
        if not path.is_relative_to(base.resolve()):
            raise CassetteError(f"!include {go_quote(target)}: path resolves outside the cassette directory")
        try:
            raw = read_regular(path, CASSETTE_MAX_BYTES, what="cassette include").decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CassetteError(f"!include {go_quote(str(path))}: {exc}") from None
        if path.suffix.lower() == ".json":
            try:
                inlined = json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False)
            except ValueError as exc:
                raise CassetteError(f"!include {go_quote(str(path))}: parse JSON: {exc}") from None
        else:
            inlined = json.dumps(raw, ensure_ascii=False)
        out.append(match.group(1) + match.group(2) + inlined)
    return "\n".join(out)


CASSETTE_MAX_BYTES = 8 << 20


def load_cassette(path: Path) -> Cassette:
    """Read a host cassette as kitsoki's LoadCassette does; CassetteError says why it is refused."""
    from core.flows.yaml12 import Yaml12Loader

    try:
        text = read_regular(path, CASSETTE_MAX_BYTES, what="host cassette").decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"cassette: read {go_quote(str(path))}: {exc}") from None
    try:
        data = yaml.load(_resolve_includes(text, path.parent), Loader=Yaml12Loader)
    except yaml.YAMLError as exc:
        raise CassetteError(f"cassette: parse {go_quote(str(path))}: {exc}") from None
    data = data if isinstance(data, dict) else {}
    if data.get("kind") != "host_cassette":
        raise CassetteError(f'cassette: {go_quote(str(path))}: kind must be "host_cassette", got '
                            f'{go_quote(str(data.get("kind") or ""))}')
    mode = str(data.get("record_mode") or "")
    if mode not in RECORD_MODES:
        raise CassetteError(f"cassette: {go_quote(str(path))}: record_mode {go_quote(mode)} is not supported; "
                            'valid values are "none" or "new_episodes"')
    phase_from = None
    if data.get("phase_from"):
        try:
            phase_from = re.compile(str(data["phase_from"]))
        except re.error as exc:
            raise CassetteError(f"cassette: {go_quote(str(path))}: phase_from regex: {exc}") from None
    episodes = []
    for raw in data.get("episodes") or []:
        if not isinstance(raw, dict):
            continue
        # An episode's `agent:` block only feeds kitsoki's trace (agent.call events), never the result.
        response = raw.get("response") if isinstance(raw.get("response"), dict) else {}
        match = raw.get("match") if isinstance(raw.get("match"), dict) else {}
        episodes.append(Episode(id=str(raw.get("id") or ""), match=match, response=_envelope(response),
                                delay=str(raw.get("delay") or ""), replay=str(raw.get("replay") or "")))
    return Cassette(path=path, episodes=episodes, record_mode=mode, phase_from=phase_from)


def _match_value(got: Any, want: Any) -> bool:
    from core.flows.values import go_json

    return got == want if type(got) is type(want) and not isinstance(got, (dict, list)) else go_json(got) == go_json(want)


class CassetteHandler:
    """One handler name served from a cassette (kitsoki's cassette dispatcher, replay only)."""

    def __init__(self, cassette: Cassette, name: str, state_of) -> None:
        self.cassette = cassette
        self.name = name
        self.state_of = state_of

    def answer(self, args: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        state = self.state_of()
        phase = self.cassette.phase(state)
        schema = args.get("schema")
        schema_name = Path(schema).name if isinstance(schema, str) and schema else ""
        for episode in self.cassette.episodes:
            if episode.played and episode.replay != "any":
                continue
            if all(_match_value({"handler": self.name, "phase": phase, "schema_name": schema_name}.get(key)
                                if key in ("handler", "phase", "schema_name") else args.get(key), want)
                   for key, want in episode.match.items()):
                episode.played = True
                if episode.delay:
                    from core.flows.clock import parse_duration

                    try:
                        if parse_duration(episode.delay) > 0:
                            raise Unsupported(f"host_cassette episode {episode.id} delay {go_quote(episode.delay)} "
                                              "(kitsoki's fake clock blocks it until advanced)")
                    except DurationError:
                        pass
                if episode.response.infra_error:
                    raise InfraError(episode.response.infra_error)
                return copy.deepcopy(episode.response.data), episode.response.error
        if self.cassette.record_mode == "new_episodes":
            raise Unsupported(f"host_cassette record_mode new_episodes (recording a missing episode for {self.name})")
        ids = " ".join(episode.id for episode in self.cassette.episodes)
        raise InfraError(f"cassette miss: no episode matched handler={go_quote(self.name)} args={go_value(args)}; "
                         f"available episodes: [{ids}]")
