"""The built-in Starlark interpreter (core/flows/starlark) against go.starlark.net, kitsoki's.

tests/fixtures/starlark/go_reference.json holds Starlark programs and what go.starlark.net (the
version kitsoki pins) printed for each, run with kitsoki's sandbox options: the interpreter must
print the same for every judged program, and never answer for a declined one (Go refuses to load
it, or fails it with wording the interpreter does not claim).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.flows.starlark import EvalError, Fail, Unsure, load
from core.flows.starlark.values import to_repr

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "starlark" / "go_reference.json").read_text("utf-8"))


def run(source: str) -> str:
    module = load(source, "case.star")
    try:
        return "OK: " + to_repr(module.call(module.get("main"), [None], []))
    except Fail as exc:
        return f"RUN-ERROR: {exc}"


@pytest.mark.parametrize("name", sorted(REFERENCE["judged"]))
def test_the_interpreter_answers_as_go_starlark(name):
    source, expected = REFERENCE["judged"][name]
    assert run(source) == expected


@pytest.mark.parametrize("name", sorted(REFERENCE["declined"]))
def test_what_go_refuses_or_words_itself_is_declined(name):
    source, expected = REFERENCE["declined"][name]
    assert not expected.startswith("OK:")
    with pytest.raises((Unsure, EvalError)):
        run(source)


@pytest.mark.parametrize("source, why", [
    ('x = "a" "b"\n', "adjacent string literals"),
    ("def main(c):\n    return f'{c}'\n", "prefix f"),
    ("def main(c):\n    return 1 < 2 < 3\n", "chained comparison"),
    ("def main(c):\n    return c is None\n", "Is"),
    ("load('x.star', 'y')\n", "load()"),
    ("def main(c):\n    return {1, 2}\n", "Set"),
    ("def main(c):\n    return '\\x41'\n", "escape"),
])
def test_python_only_syntax_is_not_evaluated(source, why):
    with pytest.raises(Unsure, match=why):
        load(source, "case.star")
