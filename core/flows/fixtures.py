"""Read kitsoki flow fixtures (`flows/*.yaml`) into models, refusing what we do not run.

A fixture file holds one or more YAML documents separated by `---` (kitsoki's
`internal/testrunner/flows.go` `FlowFixture` / `FlowTurn`). It is read safely: capped at 1 MiB;
a file without anchors, aliases or tags goes through libyaml, any other through the bounded
scanner and alias budget of the config loader, so a hostile file costs at most about a second
before it is refused.

As kitsoki decodes them: a document whose `test_kind` is not `flow` (a cassette, a disabled
flow) is skipped unreported, and a key that is not one of kitsoki's fixture or turn keys is
dropped. Fail closed on the rest: a key of kitsoki's the built-in runner does not implement
(`recording`, `expect_inbox`, `starlark_*_cassette`, ...) makes that flow fail with
`not supported by the built-in runner: <key>`; it is never skipped, never green.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode as RuamelMapping
from ruamel.yaml.nodes import ScalarNode as RuamelScalar
from ruamel.yaml.nodes import SequenceNode as RuamelSequence
from ruamel.yaml.resolver import VersionedResolver

from core.flows.values import copy_value
from core.flows.yaml12 import Yaml12Loader as _Yaml12Loader
from core.kitsoki.config import (
    YamlLimits,
    read_limited,
    _BoundedScanner,
    _FileProblem,
    _plain,
    _TreeBuilder,
    _Value,
    _ValueProblems,
)

UNSUPPORTED = "not supported by the built-in runner"
"""Prefix of every failure that means "the built-in runner cannot judge this" (fail closed)."""

FLOW_LIMITS = YamlLimits(max_bytes=1 << 20, max_values=50_000, max_depth=64, max_tokens=100_000,
                         what="flow fixtures")

KITSOKI_FIXTURE_KEYS = (
    "test_kind", "app", "recording", "initial_state", "initial_world", "turns", "mode", "host_handlers",
    "host_cassette", "strict_cassette_coverage", "starlark_http_cassette", "starlark_inspect_cassette",
    "host_bindings", "use_orchestrator", "expect_terminal", "expect_events_count_atleast",
    "expect_events_count_atmost", "expect_no_errors", "expect_world_final", "expect_files",
    "expect_no_host_calls")
"""Every key of kitsoki's FlowFixture; any other key is dropped by its non-strict decoder, so here too."""
FIXTURE_KEYS = ("test_kind", "app", "initial_state", "initial_world", "turns", "expect_terminal",
                "expect_no_errors", "expect_world_final", "host_handlers", "host_bindings", "use_orchestrator",
                "mode", "expect_no_host_calls", "strict_cassette_coverage", "host_cassette", "recording",
                "starlark_http_cassette", "starlark_inspect_cassette")
"""The keys the built-in runner implements (the rest of kitsoki's are refused by name)."""
KITSOKI_TURN_KEYS = (
    "intent", "input", "display_input", "world_override", "advance_clock", "expect_inbox", "expect_jobs",
    "expect_state", "expect_not_state", "expect_state_in", "expect_slots", "expect_world", "expect_world_full",
    "expect_world_unchanged", "expect_events", "expect_events_exact", "expect_error", "expect_view_matches",
    "expect_no_view", "expect_host_calls", "expect_no_host_calls")
TURN_KEYS = ("intent", "input", "display_input", "world_override", "advance_clock", "expect_inbox", "expect_jobs",
             "expect_state",
             "expect_not_state", "expect_state_in", "expect_slots", "expect_world", "expect_world_full",
             "expect_world_unchanged", "expect_events", "expect_error", "expect_view_matches",
             "expect_host_calls", "expect_no_host_calls")
EVENT_KINDS = ("harness.called", "harness.dispatched", "harness.returned", "machine.transition")
"""Event kinds whose payloads the runner records as kitsoki does (`expect_events` on others is refused)."""


def unsupported(what: str) -> str:
    return f"{UNSUPPORTED}: {what}"


class FlowIntent(BaseModel):
    name: str
    slots: dict[str, Any] = Field(default_factory=dict)


class ExpectHostCall(BaseModel):
    handler: str
    args: dict[str, Any] = Field(default_factory=dict)
    times: int | None = None


class ExpectEvent(BaseModel):
    kind: str
    from_: str = ""
    to: str = ""
    effect: dict[str, Any] = Field(default_factory=dict)

    def shown(self) -> str:
        """Go's %+v of kitsoki's FlowEvent."""
        from core.flows.values import go_value

        return f"{{Kind:{self.kind} From:{self.from_} To:{self.to} Effect:{go_value(self.effect) if self.effect else 'map[]'}}}"


class FlowTurn(BaseModel):
    intent: FlowIntent | None = None
    input: str | None = None
    world_override: dict[str, Any] = Field(default_factory=dict)
    advance_clock: str = ""
    expect_state: str = ""
    expect_not_state: str = ""
    expect_state_in: list[str] = Field(default_factory=list)
    expect_slots: dict[str, Any] = Field(default_factory=dict)
    expect_world: dict[str, Any] = Field(default_factory=dict)
    expect_world_full: dict[str, Any] = Field(default_factory=dict)
    expect_world_unchanged: bool = False
    expect_events: list[ExpectEvent] = Field(default_factory=list)
    expect_error: str | None = None
    """expect_error.code"""
    expect_view_matches: str = ""
    expect_host_calls: list[ExpectHostCall] = Field(default_factory=list)
    expect_no_host_calls: list[str] = Field(default_factory=list)
    expect_inbox: dict[str, Any] | None = None
    """{unread?, needs_attention?, severities?}"""
    expect_jobs: list[dict[str, Any]] = Field(default_factory=list)
    """[{namespace, status}] of jobs that end in this turn"""


class FlowFixture(BaseModel):
    """One `test_kind: flow` document. `problems` non-empty: the fixture fails unrun."""

    file: Path
    index: int = 0
    """The document's position in its file (0-based, empty documents not counted)."""
    line: int = 1
    name: str = ""
    app: str | None = None
    initial_state: str | None = None
    initial_world: dict[str, Any] = Field(default_factory=dict)
    turns: list[FlowTurn] = Field(default_factory=list)
    expect_terminal: bool = False
    expect_no_errors: bool = False
    expect_world_final: dict[str, Any] = Field(default_factory=dict)
    host_handlers: dict[str, Any] = Field(default_factory=dict)
    host_bindings: dict[str, str] = Field(default_factory=dict)
    use_orchestrator: bool | None = None
    host_cassette: str = ""
    recording: str = ""
    strict_cassette_coverage: bool = False
    starlark_http_cassette: str = ""
    starlark_inspect_cassette: str = ""
    mode: str = ""
    """`staged` stops the post-bind emit chain at decision gates (orchestrator path only)."""
    expect_no_host_calls: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    skipped: bool = False
    """Not a `test_kind: flow` document (a cassette, a disabled flow): kitsoki does not run it."""

    @property
    def orchestrated(self) -> bool:
        """kitsoki's shouldUseOrchestrator: the path split between machine-only and orchestrator."""
        if self.use_orchestrator is not None:
            return self.use_orchestrator
        return (bool(self.host_handlers) or bool(self.host_cassette) or bool(self.starlark_http_cassette)
                or any(turn.advance_clock or turn.expect_inbox is not None or turn.expect_jobs for turn in self.turns))


class FixtureFile(BaseModel):
    """A fixture file: its documents, or the one problem that kept it from being read."""

    path: Path
    fixtures: list[FlowFixture] = Field(default_factory=list)
    problem: str | None = None


def load_fixture_file(path: Path) -> FixtureFile:
    """Read every document of a fixture file; never raises for what the file contains."""
    path = Path(path)
    try:
        text = read_limited(path, FLOW_LIMITS)
    except _FileProblem:
        text = None  # the bounded reader below reports it
    try:
        documents = _remembered(text)
        if documents is None:
            documents = _fast_documents(path, text)
            if documents is None:
                documents = [(document.at.line, _plain(document))
                             for document in _compose_all(path, FLOW_LIMITS, text)]
            _remember(text, documents)
    except _FileProblem as problem:
        return FixtureFile(path=path, problem=f"{path.name}:{problem.line}:{problem.column}: {problem.message}")
    except _ValueProblems as problems:
        return FixtureFile(path=path, problem="; ".join(
            f"{path.name}:{issue.line}:{issue.column}: {issue.key + ': ' if issue.key else ''}{issue.message}"
            for issue in problems.issues))
    fixtures = [_read_fixture(path, index, line, data) for index, (line, data) in enumerate(documents)]
    return FixtureFile(path=path, fixtures=fixtures)


# --- reading ----------------------------------------------------------------------------------


_READ: dict[str, list[tuple[int, Any]]] = {}
"""Documents already read, by the file's whole text (content-addressed): a process that runs the same
fixtures again (a gate on every accept, the server's previews, a benchmark's rounds) parses each text
once. Handed out as copies, so a run never sees another's changes."""
_READ_LIMIT = 4096


def _remembered(text: str | None) -> list[tuple[int, Any]] | None:
    found = _READ.get(text) if text is not None else None
    return None if found is None else copy_value(found)


def _remember(text: str | None, documents: list[tuple[int, Any]]) -> None:
    if text is None:
        return
    if len(_READ) >= _READ_LIMIT:
        _READ.clear()
    _READ[text] = copy_value(documents)


_ANCHOR_OR_ALIAS = re.compile(r"(?:^|[\s\[{,:-])[&*][^\s,\]}]")


def _fast_documents(path: Path, text: str | None = None) -> list[tuple[int, Any]] | None:
    """The documents as (line, plain value) through libyaml, for the common file with no anchors,
    aliases or tags (nothing for an alias budget to guard); None sends the file to the bounded
    reader, which also gives the precise error of a file that does not parse."""
    if text is None:
        try:
            text = read_limited(path, FLOW_LIMITS)
        except _FileProblem:
            return None
    if _ANCHOR_OR_ALIAS.search(text) or "!" in text:
        return None
    try:
        loader = _Yaml12Loader(text)  # refuses a nesting deeper than the C composer can take
    except yaml.YAMLError:
        return None
    documents: list[tuple[int, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None or (node.tag.endswith(":null") and not getattr(node, "value", "")):
                continue
            documents.append((node.start_mark.line + 1, loader.construct_document(node)))
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return None
    finally:
        loader.dispose()
    return documents


def _compose_all(path: Path, limits: YamlLimits, text: str | None = None) -> list[_Value]:
    """The file's non-empty documents as located values, under the limits (whole file)."""
    if text is None:
        text = read_limited(path, limits)
    documents = _libyaml_located(path, text, limits)
    if documents is not None:
        return documents

    yaml = YAML(typ="safe", pure=True)
    yaml.Scanner = type("_FlowScanner", (_BoundedScanner,), {"limits": limits})
    builder = _TreeBuilder(str(path), yaml, limits)  # one alias budget for the whole file
    documents: list[_Value] = []
    try:
        for node in yaml.compose_all(text):
            if node is None or (node.tag.endswith(":null") and not getattr(node, "value", "")):
                continue  # an empty document, as kitsoki skips it
            documents.append(builder.build(node, "", 0))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if problem not in (limits.too_deep, limits.too_many_tokens):
            problem = f"YAML syntax error: {problem}"
        raise _FileProblem(mark.line + 1 if mark else 1, mark.column + 1 if mark else 1, problem) from None
    except RecursionError:
        raise _FileProblem(1, 1, limits.too_deep) from None
    except (YAMLError, ValueError, TypeError, IndexError) as exc:
        raise _FileProblem(1, 1, f"YAML syntax error: {exc}") from None
    if builder.issues:
        raise _ValueProblems(builder.issues)
    return documents


class _Ruamel12Loader(yaml.CSafeLoader):
    """libyaml's parser and composer resolving plain scalars with ruamel's YAML 1.2 table, so its nodes
    get the tags the bounded ruamel reader gives them."""


_Ruamel12Loader.yaml_implicit_resolvers = {
    first: list(resolvers) for first, resolvers in VersionedResolver(version=(1, 2)).versioned_resolver.items()}
_FAST_DEPTH = 32
"""A document nested deeper than this (after aliases) is left to the bounded reader, whose limits decide it."""


def _libyaml_located(path: Path, text: str, limits: YamlLimits) -> list[_Value] | None:
    """What the bounded ruamel reader makes of a file (the same located values, keys as their source
    text, ruamel's YAML 1.2 scalars, the same alias budget), with libyaml doing the scanning and
    composing that cost the pure-Python reader seconds. None (the bounded reader then decides, with its
    precise error) for anything out of the ordinary: a problem of any kind, a tag, a file long enough
    for the token cap to matter, nesting near the depth cap."""
    if 2 * len(text) + 2 >= limits.max_tokens:
        return None  # the token cap can only bite past this (each token the scanner fetches reads a character)
    loader = _Ruamel12Loader(text)
    try:
        nodes = []
        while loader.check_node():
            node = loader.get_node()
            if node is None or (node.tag.endswith(":null") and not getattr(node, "value", "")):
                continue  # an empty document, as kitsoki skips it
            nodes.append(node)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return None
    finally:
        loader.dispose()
    converted: dict[int, Any] = {}
    reader = YAML(typ="safe", pure=True)
    builder = _TreeBuilder(str(path), reader, limits)  # one alias budget for the whole file, as the reader's
    documents = []
    try:
        for node in nodes:
            if _depth(node, {}) > _FAST_DEPTH:
                return None
            documents.append(builder.build(_as_ruamel(node, converted), "", 0))
    except (_FileProblem, RecursionError, YAMLError, ValueError, TypeError, IndexError):
        return None
    return None if builder.issues else documents


def _depth(node: Any, seen: dict[int, int]) -> int:
    """How deep `node` nests once its aliases are expanded (shared nodes measured once)."""
    known = seen.get(id(node))
    if known is not None:
        return known
    seen[id(node)] = _FAST_DEPTH + 1  # an alias cycle is as deep as it gets
    if isinstance(node, yaml.SequenceNode):
        depth = 1 + max((_depth(item, seen) for item in node.value), default=0)
    elif isinstance(node, yaml.MappingNode):
        depth = 1 + max((_depth(value, seen) for _key, value in node.value), default=0)
    else:
        depth = 0
    seen[id(node)] = depth
    return depth


class _Scalar(RuamelScalar):
    """ruamel's node with its tag as a plain string: converting a Tag object on every read cost more
    than libyaml's whole parse."""

    tag = None

    def __init__(self, tag: str, value: Any, start_mark: Any, end_mark: Any, style: Any = None) -> None:
        self.tag, self.value, self.start_mark, self.end_mark, self.style = tag, value, start_mark, end_mark, style
        self.comment = self.anchor = None


class _Sequence(RuamelSequence):
    tag = None

    def __init__(self, tag: str, value: list, start_mark: Any, end_mark: Any, flow_style: Any = None) -> None:
        self.tag, self.value, self.start_mark, self.end_mark = tag, value, start_mark, end_mark
        self.flow_style, self.comment, self.anchor = flow_style, None, None


class _Mapping(RuamelMapping):
    tag = None

    def __init__(self, tag: str, value: list, start_mark: Any, end_mark: Any, flow_style: Any = None) -> None:
        self.tag, self.value, self.start_mark, self.end_mark = tag, value, start_mark, end_mark
        self.flow_style, self.comment, self.anchor, self.merge = flow_style, None, None, None


def _as_ruamel(node: Any, converted: dict[int, Any]) -> Any:
    """A PyYAML node graph as ruamel nodes; a node an alias repeats stays one shared node."""
    done = converted.get(id(node))
    if done is not None:
        return done
    if isinstance(node, yaml.ScalarNode):
        out = _Scalar(node.tag, node.value, node.start_mark, node.end_mark, style=node.style)
    elif isinstance(node, yaml.SequenceNode):
        out = _Sequence(node.tag, [], node.start_mark, node.end_mark, flow_style=node.flow_style)
        converted[id(node)] = out
        out.value.extend(_as_ruamel(item, converted) for item in node.value)
    else:
        out = _Mapping(node.tag, [], node.start_mark, node.end_mark, flow_style=node.flow_style)
        converted[id(node)] = out
        out.value.extend((_as_ruamel(key, converted), _as_ruamel(value, converted)) for key, value in node.value)
    converted[id(node)] = out
    return out


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def _read_fixture(path: Path, index: int, line: int, data: Any) -> FlowFixture:
    fixture = FlowFixture(file=path, index=index, line=line)
    problems = fixture.problems
    if not isinstance(data, dict):
        problems.append(f"document {index + 1} (line {line}) must be a mapping "
                        f"(test_kind, app, turns, ...), got {_kind(data)}")
        return fixture
    data = {str(key): value for key, value in data.items()}

    if data.get("test_kind") != "flow":
        fixture.skipped = True  # kitsoki runs only `test_kind: flow` documents and skips the rest unreported
        return fixture
    for key in data:
        if key in KITSOKI_FIXTURE_KEYS and key not in FIXTURE_KEYS and data[key] not in (None, "", [], {}):
            problems.append(unsupported(key))
    mode = data.get("mode")
    if mode not in (None, "", "one-shot", "staged"):
        problems.append(f'mode must be "staged" or "one-shot", got {_kind(mode) if not isinstance(mode, str) else mode}')
    elif mode == "staged":
        fixture.mode = mode

    fixture.name = str(data.get("name") or "")
    fixture.app = _string(data, "app", problems)
    fixture.initial_state = _string(data, "initial_state", problems)
    fixture.initial_world = _mapping(data, "initial_world", problems)
    fixture.expect_world_final = _mapping(data, "expect_world_final", problems)
    fixture.expect_terminal = _boolean(data, "expect_terminal", problems)
    fixture.expect_no_errors = _boolean(data, "expect_no_errors", problems)
    fixture.host_handlers = _mapping(data, "host_handlers", problems)
    fixture.host_bindings = {str(k): str(v) for k, v in _mapping(data, "host_bindings", problems).items()}
    if data.get("use_orchestrator") is not None:
        fixture.use_orchestrator = _boolean(data, "use_orchestrator", problems)
    fixture.expect_no_host_calls = _strings(data, "expect_no_host_calls", problems)
    fixture.host_cassette = _string(data, "host_cassette", problems) or ""
    fixture.starlark_http_cassette = _string(data, "starlark_http_cassette", problems) or ""
    fixture.starlark_inspect_cassette = _string(data, "starlark_inspect_cassette", problems) or ""
    fixture.recording = _string(data, "recording", problems) or ""
    fixture.strict_cassette_coverage = _boolean(data, "strict_cassette_coverage", problems)

    turns = data.get("turns")
    if turns is not None and not isinstance(turns, list):
        problems.append(f"turns must be a list of turns, got {_kind(turns)}")
    for number, turn in enumerate(turns if isinstance(turns, list) else [], start=1):
        fixture.turns.append(_read_turn(number, turn, problems))
    return fixture


def _read_turn(number: int, turn: Any, problems: list[str]) -> FlowTurn:
    where = f"turns[{number - 1}]"
    if not isinstance(turn, dict):
        problems.append(f"{where} (turn {number}) must be a mapping with intent: or input:, got {_kind(turn)}")
        return FlowTurn()
    for key in turn:
        if key in KITSOKI_TURN_KEYS and key not in TURN_KEYS and turn[key] not in (None, "", [], {}, False):
            problems.append(unsupported(key))
    result = FlowTurn()
    has_intent = turn.get("intent") is not None
    has_input = turn.get("input") not in (None, "")
    clock = turn.get("advance_clock")
    if isinstance(clock, str) and clock:
        result.advance_clock = clock
    elif clock not in (None, ""):
        problems.append(f"{where}.advance_clock must be a duration string, got {_kind(clock)}")
    if has_intent and has_input:
        problems.append(f"{where} (turn {number}) must set exactly one of intent: {{name, slots}} or input: \"<text>\"")
    elif not has_intent and not has_input and not result.advance_clock:
        problems.append(f"{where} (turn {number}) requires one of intent:, input:, or advance_clock")
    intent = turn.get("intent")
    if isinstance(intent, dict):
        name, slots = intent.get("name"), intent.get("slots")
        if not isinstance(name, str) or not name:
            problems.append(f"{where}.intent.name must be an intent name, got {_kind(name)}")
        elif slots is not None and not isinstance(slots, dict):
            problems.append(f"{where}.intent.slots must be a mapping of slot values, got {_kind(slots)}")
        else:
            result.intent = FlowIntent(name=name, slots=dict(slots or {}))
    elif intent is not None:
        problems.append(f"{where}.intent must be a mapping {{name, slots}}, got {_kind(intent)}")
    if has_input:
        if isinstance(turn["input"], str):
            result.input = turn["input"]
        else:
            problems.append(f"{where}.input must be a string, got {_kind(turn['input'])}")
    for key in ("expect_state", "expect_not_state", "expect_view_matches"):
        value = _string(turn, key, problems, where)
        setattr(result, key, value or "")
    result.expect_state_in = _strings(turn, "expect_state_in", problems, where)
    for key in ("expect_world", "expect_world_full", "expect_slots", "world_override"):
        setattr(result, key, _mapping(turn, key, problems, where))
    result.expect_world_unchanged = _boolean(turn, "expect_world_unchanged", problems)
    result.expect_no_host_calls = _strings(turn, "expect_no_host_calls", problems, where)
    expected_jobs = turn.get("expect_jobs")
    if isinstance(expected_jobs, list) and all(isinstance(job, dict) for job in expected_jobs):
        result.expect_jobs = list(expected_jobs)
    elif expected_jobs is not None:
        problems.append(f"{where}.expect_jobs must be a list of {{namespace, status}}")
    inbox = turn.get("expect_inbox")
    if isinstance(inbox, dict):
        result.expect_inbox = inbox
    elif inbox is not None:
        problems.append(f"{where}.expect_inbox must be a mapping {{unread, needs_attention, severities}}")
    error = turn.get("expect_error")
    if isinstance(error, dict):
        for key in ("allowed_contains", "missing_slots"):
            if error.get(key):
                problems.append(unsupported(f"expect_error.{key}"))
        result.expect_error = str(error.get("code") or "")
    elif error is not None:
        problems.append(f"{where}.expect_error must be a mapping {{code, ...}}, got {_kind(error)}")
    calls = turn.get("expect_host_calls")
    if isinstance(calls, list):
        for index, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("handler"), str):
                problems.append(f"{where}.expect_host_calls[{index}] must be a mapping with handler:")
                continue
            args, times = call.get("args"), call.get("times")
            if args is not None and not isinstance(args, dict):
                problems.append(f"{where}.expect_host_calls[{index}].args must be a mapping")
                continue
            if times is not None and (not isinstance(times, int) or isinstance(times, bool)):
                problems.append(f"{where}.expect_host_calls[{index}].times must be a whole number")
                continue
            result.expect_host_calls.append(ExpectHostCall(handler=call["handler"], args=dict(args or {}), times=times))
    elif calls is not None:
        problems.append(f"{where}.expect_host_calls must be a list")
    events = turn.get("expect_events")
    if isinstance(events, list):
        for index, event in enumerate(events):
            if not isinstance(event, dict) or not isinstance(event.get("kind"), str):
                problems.append(f"{where}.expect_events[{index}] must be a mapping with kind:")
                continue
            if event["kind"] not in EVENT_KINDS:
                problems.append(unsupported(f"expect_events kind {event['kind']}"))
                continue
            effect = event.get("effect")
            result.expect_events.append(ExpectEvent(kind=event["kind"], from_=str(event.get("from") or ""),
                                                    to=str(event.get("to") or ""),
                                                    effect=effect if isinstance(effect, dict) else {}))
    elif events is not None:
        problems.append(f"{where}.expect_events must be a list")
    return result


def _strings(data: dict[str, Any], key: str, problems: list[str], where: str = "") -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    problems.append(f"{where + '.' if where else ''}{key} must be a list of names, got {_kind(value)}")
    return []


def _string(data: dict[str, Any], key: str, problems: list[str], where: str = "") -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"{where + '.' if where else ''}{key} must be a string, got {_kind(value)}")
    return None


def _mapping(data: dict[str, Any], key: str, problems: list[str], where: str = "") -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    problems.append(f"{where + '.' if where else ''}{key} must be a mapping, got {_kind(value)}")
    return {}


def _boolean(data: dict[str, Any], key: str, problems: list[str]) -> bool:
    value = data.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    problems.append(f"{key} must be true or false, got {_kind(value)}")
    return False
