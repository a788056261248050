"""Read kitsoki flow fixtures (`flows/*.yaml`) into models, refusing what we do not run.

A fixture file holds one or more YAML documents separated by `---` (kitsoki's
`internal/testrunner/flows.go` `FlowFixture` / `FlowTurn`). It is read safely: the file is
capped at 1 MiB and composed with the same bounded scanner and alias budget as the config
loader, so a hostile file costs at most about a second before it is refused.

Fail closed: every key the built-in runner does not implement (kitsoki's own, like
`host_handlers` or `expect_events`, or one nobody knows) makes that fixture fail with
`not supported by the built-in runner: <key>`; it is never skipped, never green.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

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

FIXTURE_KEYS = ("test_kind", "app", "initial_state", "initial_world", "turns", "expect_terminal",
                "expect_no_errors", "expect_world_final")
IGNORED_FIXTURE_KEYS = ("description", "name")
TURN_KEYS = ("intent", "input", "expect_state", "expect_not_state", "expect_state_in", "expect_world")
IGNORED_TURN_KEYS = ("display_input",)
INTENT_KEYS = ("name", "slots")


def unsupported(what: str) -> str:
    return f"{UNSUPPORTED}: {what}"


class FlowIntent(BaseModel):
    name: str
    slots: dict[str, Any] = Field(default_factory=dict)


class FlowTurn(BaseModel):
    intent: FlowIntent | None = None
    input: str | None = None
    expect_state: str = ""
    expect_not_state: str = ""
    expect_state_in: list[str] = Field(default_factory=list)
    expect_world: dict[str, Any] = Field(default_factory=dict)


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
    problems: list[str] = Field(default_factory=list)


class FixtureFile(BaseModel):
    """A fixture file: its documents, or the one problem that kept it from being read."""

    path: Path
    fixtures: list[FlowFixture] = Field(default_factory=list)
    problem: str | None = None


def load_fixture_file(path: Path) -> FixtureFile:
    """Read every document of a fixture file; never raises for what the file contains."""
    path = Path(path)
    try:
        documents = _compose_all(path, FLOW_LIMITS)
    except _FileProblem as problem:
        return FixtureFile(path=path, problem=f"{path.name}:{problem.line}:{problem.column}: {problem.message}")
    except _ValueProblems as problems:
        return FixtureFile(path=path, problem="; ".join(
            f"{path.name}:{issue.line}:{issue.column}: {issue.key + ': ' if issue.key else ''}{issue.message}"
            for issue in problems.issues))
    fixtures = [_read_fixture(path, index, document) for index, document in enumerate(documents)]
    return FixtureFile(path=path, fixtures=fixtures)


# --- reading ----------------------------------------------------------------------------------


def _compose_all(path: Path, limits: YamlLimits) -> list[_Value]:
    """The file's non-empty documents as located values, under the limits (whole file)."""
    text = read_limited(path, limits)

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


def _read_fixture(path: Path, index: int, document: _Value) -> FlowFixture:
    fixture = FlowFixture(file=path, index=index, line=document.at.line)
    problems = fixture.problems
    if document.kind != "map":
        problems.append(f"document {index + 1} (line {document.at.line}) must be a mapping "
                        f"(test_kind, app, turns, ...), got {_kind(_plain(document))}")
        return fixture
    data: dict[str, Any] = {key: _plain(value) for key, value in document.data.items()}

    kind = data.get("test_kind")
    if kind != "flow":
        shown = "nothing" if kind is None else f'"{kind}"'
        problems.append(f'test_kind must be "flow", got {shown} (kitsoki skips such a document; '
                        "the built-in runner refuses it)")
    for key in data:
        if key not in FIXTURE_KEYS and key not in IGNORED_FIXTURE_KEYS:
            problems.append(unsupported(key))

    fixture.name = str(data.get("name") or "")
    fixture.app = _string(data, "app", problems)
    fixture.initial_state = _string(data, "initial_state", problems)
    fixture.initial_world = _mapping(data, "initial_world", problems)
    fixture.expect_world_final = _mapping(data, "expect_world_final", problems)
    fixture.expect_terminal = _boolean(data, "expect_terminal", problems)
    fixture.expect_no_errors = _boolean(data, "expect_no_errors", problems)

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
        if key not in TURN_KEYS and key not in IGNORED_TURN_KEYS:
            problems.append(unsupported(key))
    result = FlowTurn()
    has_intent = turn.get("intent") is not None
    has_input = turn.get("input") not in (None, "")
    if has_intent == has_input:
        problems.append(f"{where} (turn {number}) must set exactly one of intent: {{name, slots}} or input: \"<text>\"")
    intent = turn.get("intent")
    if isinstance(intent, dict):
        for key in intent:
            if key not in INTENT_KEYS:
                problems.append(unsupported(f"intent.{key}"))
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
    for key in ("expect_state", "expect_not_state"):
        value = _string(turn, key, problems, where)
        setattr(result, key, value or "")
    state_in = turn.get("expect_state_in")
    if state_in is not None:
        if isinstance(state_in, list) and all(isinstance(item, str) for item in state_in):
            result.expect_state_in = list(state_in)
        else:
            problems.append(f"{where}.expect_state_in must be a list of state names, got {_kind(state_in)}")
    result.expect_world = _mapping(turn, "expect_world", problems, where)
    return result


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
