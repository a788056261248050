"""kitsoki's expression language, shared by the loader (compile check) and the flow runner (evaluation).

The expected messages are what kitsoki's own compiler (internal/expr Compile / CompileBool over
expr-lang v1.17.8, at 1f4abf0e) answered for the same sources; the loader's story-level cases are in
tests/kitsoki_rules.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lark import Lark

from core.expr.check import compile_error
from core.expr.syntax import GRAMMAR, TABLES_FILE, _OPTIONS, _Build, _grammar_key, _parser
from core.expr.templates import template_error
from core.flows.expressions import ExprUnsupported, eval_any, eval_bool
from core.kitsoki.story import WorkspaceError, load_story


def test_the_generated_parse_tables_match_the_grammar():
    tables = json.loads(TABLES_FILE.read_text())
    assert tables["key"] == _grammar_key(), "stale: run `python -m core.expr.syntax` to regenerate them"
    loaded, built = _parser(), Lark(GRAMMAR, **_OPTIONS, transformer=_Build())
    for source in ("world.x ?? 1", "a < b < c", "x | upper() == 'A' && b", "let x = 1; x", "f(.a > 1)", "{a: 1}",
                   "!a * b ** -c", "if a { b } else { c }", "x[1:] ?: y", "a not in [1, 2,]"):
        assert loaded.parse(source) == built.parse(source)


@pytest.mark.parametrize("source, want_bool, message", [
    # what kitsoki compiles
    ("world.x", True, None), ("world.x ?? false", True, None), ("(world.x ?? 0) > 1", True, None),
    ("len(1) > 0", True, None), ("1 < 2 < 3", True, None), ("world.x | upper() == 'A'", True, None),
    ("world.x not contains 'a'", True, None), ("world.x[1:2] == 'a'", True, None), ("1..3 == [1, 2, 3]", True, None),
    ("world.x ?: true", True, None), ("if world.x { true } else { false }", True, None),
    ("world.x /* c */ == 1 // end", True, None), ("world.in == 1", True, None), ("foo == 1", True, None),
    ("available('x')", True, None), ("now()", False, None), ("world.x ? true : 'no'", True, None),
    # what it refuses, in its words
    ("nil", True, 'expr compile "nil": expected bool, but got unknown'),
    ("world.x ? 1 : 2", True, 'expr compile "world.x ? 1 : 2": expected bool, but got int'),
    ("world.x ?? world.y || true", True, 'expr compile "world.x ?? world.y || true": Operator (||) and coalesce '
                                         "expressions (??) cannot be mixed. Wrap either by parentheses. (1:20)"),
    ("world.a && 1", True, 'expr compile "world.a && 1": invalid operation: && (mismatched types interface {} and '
                           "int) (1:9)"),
    ('"a" + 1', False, 'expr compile "\\"a\\" + 1": invalid operation: + (mismatched types string and int) (1:5)'),
    ("run.foo == 1", True, 'expr compile "run.foo == 1": type expr.RunCtx has no field foo (1:5)'),
    ("upper(1) == 'A'", True, "expr compile \"upper(1) == 'A'\": cannot use int as argument (type string) to call "
                              "upper  (1:7)"),
    ("1 % 0 > 1", True, 'expr compile "1 % 0 > 1": integer divide by zero (1:3)'),
    ("keys(1) == []", True, 'expr compile "keys(1) == []": cannot get keys from int (1:1)'),
    ("world[1] == 1", True, 'expr compile "world[1] == 1": cannot use int to get an element from '
                            "map[string]interface {} (1:7)"),
    ("world.x == 'a\\q'", True, "expr compile \"world.x == 'a\\\\q'\": invalid char escape (1:12)"),
    ("world.x @ 1", True, "expr compile \"world.x @ 1\": unrecognized character: U+0040 '@' (1:9)"),
    ("world.x ==", True, 'expr compile "world.x ==": unexpected token EOF (1:10)'),
    ("world.x | 1", True, 'expr compile "world.x | 1": unexpected token Number("1") (1:11)'),
    ("foo() == 1", True, 'expr whitelist violation in "foo() == 1": forbidden user-defined function call "foo" '
                         "(only built-in functions are allowed)"),
    ("now().Year()", False, 'expr whitelist violation in "now().Year()": forbidden user-defined function call '
                            '"now().Year" (only built-in functions are allowed)'),
    ("all(world.xs, # > 0)", True, 'expr whitelist violation in "all(world.xs, # > 0)": lambda/predicate '
                                   'expressions are not allowed; forbidden built-in function "all"'),
    ("let x = 1; x > 0", True, 'expr whitelist violation in "let x = 1; x > 0": variable declarations (let) are '
                               "not allowed"),
    ("{a: 1}", False, 'expr whitelist violation in "{a: 1}": map literal expressions are not allowed'),
    ("$env.x == 1", True, 'expr whitelist violation in "$env.x == 1": member access on forbidden root "$env" '
                          "(allowed: slots, world, event, run, args)"),
])
def test_the_compile_check_answers_as_kitsokis_compiler(source, want_bool, message):
    assert compile_error(source, want_bool) == message


def test_a_verdict_shared_by_programs_of_one_shape_keeps_each_ones_message():
    assert compile_error("world.a__x ?? 0 > 1", True) == compile_error("world.a__x ?? 0 > 1", True)
    assert "world.b__y ?? 0 > 1" in compile_error("world.b__y ?? 0 > 1", True)
    assert compile_error("slots.n % 0 == 1", True) is None  # only literal operands are folded
    assert compile_error("1 % 0 == 1", True) is not None and compile_error("1 % 2 == 1", True) is None


@pytest.mark.parametrize("template, message", [
    ("plain text", None), ("{{ a }}X{{ b }}", None), ("{{ range world.l }}{{ .name }}{{ end }}", None),
    ("{{ if world.x }}a", "template: missing 'end' for if block"),
    ("{{ if world.x }}a{{ else }}b{{ else }}c{{ end }}", 'template: expected \'end\', got "else"'),
    ("{{ end }}", "template: unexpected 'end'"), ("{{ world.x", "template: unclosed {{ block"),
    ("{{ if len(world.x) }}a{{ end }}", 'expr compile "len(world.x)": expected bool, but got int'),
])
def test_templates_are_checked_as_kitsokis_validate_template(template, message):
    assert template_error(template) == message


def test_a_refused_expression_is_reported_at_its_file_line_and_column(tmp_path):
    app = tmp_path / "app.yaml"
    app.write_text("app: { id: t }\nroot: a\nintents:\n  go: { examples: [go] }\nstates:\n  a:\n    on:\n      go:\n"
                   "        - when: world.x ?? 0 > 1\n          target: a\n")
    with pytest.raises(WorkspaceError) as caught:
        load_story(app, env={})
    [issue] = caught.value.issues
    assert (issue.file, issue.line, issue.column) == (str(app), 9, 17)
    assert issue.message.startswith('state "a" intent "go" transition[0]: guard when "world.x ?? 0 > 1": expr compile')


def test_the_runner_evaluates_pipes_and_chained_comparisons_as_expr_lang_does():
    env = {"world": {"x": "a", "n": 2, "m": -3}}
    assert eval_bool('world.x | upper() == "A" && 1 < world.n < 3', env) is True
    assert eval_any("world.m | abs() ** 2 ** 0", env) == 3.0  # (abs(m)) ** (2 ** 0)
    assert eval_any("world.m | abs() + 1 * 2", env) == 5


def test_the_runner_still_refuses_what_it_cannot_run_exactly():
    for source in ("world.l[1:]", "{a: 1}.a", "1..3", "world.x matches 'a'"):
        with pytest.raises(ExprUnsupported):
            eval_any(source, {"world": {"l": [1, 2], "x": "a"}})


def test_the_grammar_tables_are_package_data():
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert '"core.expr" = ["grammar_tables.json"]' in pyproject
