"""kitsoki's expression language (expr-lang with kitsoki's whitelist) for guards and templates.

`when:` guards, `{{ }}` in effect values, `bind:` templates, `with:` arguments and `emit_intent`
names are expr-lang programs evaluated against `world`, `slots`, `result` and `item`
(internal/expr/expr.go over github.com/expr-lang/expr v1.17). They are parsed by core.expr (the one
grammar the loader checks stories with) and this module evaluates the tree; nothing is ever `eval`'d.

Semantics follow expr-lang where the stories depend on them: a missing map key is nil, a member
of nil is an error (`cannot fetch x from <nil>`) unless reached through `?.`, `??` takes the
right side when the left is nil (a member of nil on its left is still an error), `len()` of nil
is 0 (kitsoki's patch), `/` is always a float, `&&`/`||` short-circuit on bools only, `==` compares numbers by value and
everything else by type and value. Anything outside the grammar or the whitelist raises
`ExprUnsupported` (the flow is reported as not supported); a program that parses but cannot be
evaluated against this world raises `ExprError` (kitsoki's machine would return an error).

The `{{ }}` template engine (`render`, `render_value`) is kitsoki's own small one (parsed by
core.expr.templates): literal text, `{{ expr }}`, `{{ if }}/{{ else }}/{{ end }}` and `{{ range }}` with
`.field` meaning the item.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any

from core.expr.syntax import ALLOWED_BUILTINS, ROOTS, ExprSyntaxError, parse
from core.expr.templates import TemplateError, parse_template, range_dots, single_expression
from core.flows.values import GoInt, go_json, go_type, go_value

BUILTINS = ALLOWED_BUILTINS - {"now"}
"""kitsoki's allowedBuiltins, less `now` (the fake clock is not exposed to expressions here)."""


class ExprUnsupported(Exception):
    """The source uses something this implementation does not parse or evaluate."""


class ExprError(Exception):
    """The program parses but fails against this environment (expr-lang would fault)."""


_OPS = {"or": "or", "||": "or", "and": "and", "&&": "and", "in": "in", "??": "??", "**": "**", "^": "**"}


def _runnable(node: tuple) -> tuple:
    """core.expr's located tree -> the evaluator's tuples; ExprUnsupported for what it does not run."""
    kind = node[0]
    if kind == "lit":
        if node[3] == "bytes":
            raise ExprUnsupported("bytes literal")
        return ("lit", node[2])
    if kind == "ident":
        return ("root", node[2])  # an undeclared bare name is nil (AllowUndefinedVariables)
    if kind == "paren":
        return _runnable(node[2])
    if kind == "member":
        base = node[2]
        if base[0] == "ident" and base[2] not in ROOTS:
            raise ExprUnsupported(f"member access on {base[2]} (kitsoki allows only {', '.join(sorted(ROOTS))})")
        return ("member", _runnable(base), _runnable(node[3]), node[4])
    if kind == "call":
        if node[2] not in BUILTINS:
            raise ExprUnsupported(f"function {node[2]}()")
        return ("call", node[2], tuple(_runnable(arg) for arg in node[3]))
    if kind == "unary":
        op = {"!": "not", "not": "not", "-": "neg", "+": "pos"}[node[2]]
        return (op, _runnable(node[3]))
    if kind == "binary":
        op = node[2]
        left, right = _runnable(node[3]), _runnable(node[4])
        if op in _OPS:
            mapped = _OPS[op]
            return ("arith", "**", left, right) if mapped == "**" else (mapped, left, right)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return ("cmp", op, left, right)
        if op in ("contains", "startsWith", "endsWith"):
            return ("strop", op, left, right)
        if op in ("+", "-", "*", "/", "%"):
            return ("arith", op, left, right)
        raise ExprUnsupported(f"operator {op}")
    if kind == "cond":
        return ("cond", _runnable(node[2]), _runnable(node[3]), _runnable(node[4]))
    if kind == "array":
        return ("array", tuple(_runnable(item) for item in node[2]))
    raise ExprUnsupported({"method": "method call", "slice": "slice", "map": "map literal", "let": "let",
                           "seq": "expression sequence", "pointer": "predicate"}.get(kind, kind))


@lru_cache(maxsize=8192)
def compile_expr(source: str) -> tuple:
    """The program tree of an expression; ExprUnsupported when it is outside what this runner runs."""
    if not source.strip():
        raise ExprUnsupported("empty expression")
    try:
        return _runnable(parse(source.strip()))
    except ExprSyntaxError as exc:
        raise ExprUnsupported(f"expression {json.dumps(source)} ({exc})") from None
    except RecursionError:
        raise ExprUnsupported(f"expression {json.dumps(source)} (nested too deeply)") from None


# --- evaluation -------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _tname(value: Any) -> str:
    return go_type(value)


def equal(a: Any, b: Any) -> bool:
    """expr-lang's runtime.Equal: numbers by value, otherwise same type and deep equality."""
    if _number(a) and _number(b):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if type(a) is not type(b):
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    return a == b


def _fetch(base: Any, key: Any, optional: bool) -> Any:
    if base is None:
        if optional:
            return None
        raise ExprError(f"cannot fetch {key} from <nil>")
    if isinstance(base, dict):
        return base.get(key if isinstance(key, str) else str(key) if key is not None else "")
    if isinstance(base, (list, str)):
        if not _number(key):
            raise ExprError(f"cannot fetch {key} from {_tname(base)}")
        index = int(key)
        if index < 0:
            index += len(base)
        if not 0 <= index < len(base):
            raise ExprError(f"index out of range: {index} (array length is {len(base)})")
        item = base[index]
        return item if isinstance(base, list) else ord(item)
    raise ExprError(f"cannot fetch {key} from {_tname(base)}")


def _truth(value: Any, op: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ExprError(f"interface conversion: interface {{}} is {_tname(value)}, not bool ({op})")


def _arith(op: str, a: Any, b: Any) -> Any:
    if op == "+" and isinstance(a, str) and isinstance(b, str):
        return a + b
    if op == "+" and isinstance(a, list) and isinstance(b, list):
        return a + b
    if not (_number(a) and _number(b)):
        raise ExprError(f"invalid operation: {_tname(a)} {op} {_tname(b)}")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            return math.inf if a > 0 else -math.inf if a < 0 else math.nan
        return float(a) / float(b)
    if op == "%":
        if not (isinstance(a, int) and isinstance(b, int)):
            raise ExprError(f"invalid operation: {_tname(a)} % {_tname(b)}")
        if b == 0:
            raise ExprError("integer divide by zero")
        return int(math.fmod(a, b))
    return float(a) ** float(b)


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return equal(a, b)
    if op == "!=":
        return not equal(a, b)
    if not ((_number(a) and _number(b)) or (isinstance(a, str) and isinstance(b, str))):
        raise ExprError(f"invalid operation: {_tname(a)} {op} {_tname(b)}")
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, dict):
        return item in container if isinstance(item, str) else False
    if isinstance(container, list):
        return any(equal(item, x) for x in container)
    if container is None:
        return False
    raise ExprError(f"operator in not defined on {_tname(container)}")


to_string = go_value
"""fmt's %v, which expr-lang's string() gives (core.flows.values.go_value)."""


def _call(fn: str, args: list[Any]) -> Any:
    def need(n: int) -> None:
        if len(args) != n:
            raise ExprError(f"invalid number of arguments for {fn} (expected {n}, got {len(args)})")

    def text(value: Any) -> str:
        if not isinstance(value, str):
            raise ExprError(f"interface conversion: interface {{}} is {_tname(value)}, not string")
        return value

    if fn == "len":
        need(1)
        value = args[0]
        if value is None:
            return 0
        if isinstance(value, (str, list, dict)):
            return len(value)
        raise ExprError(f"invalid argument for len (type {_tname(value)})")
    if fn in ("trim", "upper", "lower"):
        value = text(args[0])
        if fn == "upper":
            return value.upper()
        if fn == "lower":
            return value.lower()
        return value.strip(args[1]) if len(args) > 1 else value.strip(" \t\n\r\v\f")
    if fn == "split":
        value, sep = text(args[0]), text(args[1])
        if sep == "":
            return list(value)
        parts = value.split(sep) if len(args) < 3 else value.split(sep, int(args[2]) - 1)
        return parts
    if fn == "join":
        items, sep = args[0], (text(args[1]) if len(args) > 1 else "")
        if not isinstance(items, list):
            raise ExprError(f"cannot join {_tname(items)}")
        return sep.join(text(item) for item in items)
    if fn == "hasPrefix":
        need(2)
        return text(args[0]).startswith(text(args[1]))
    if fn == "hasSuffix":
        need(2)
        return text(args[0]).endswith(text(args[1]))
    if fn == "int":
        need(1)
        value = args[0]
        if isinstance(value, bool) or value is None:
            raise ExprError(f"invalid operation: int({_tname(value)})")
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise ExprError(f"invalid operation: int({value})") from None
        raise ExprError(f"invalid operation: int({_tname(value)})")
    if fn == "float":
        need(1)
        value = args[0]
        if _number(value):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise ExprError(f"invalid operation: float({value})") from None
        raise ExprError(f"invalid operation: float({_tname(value)})")
    if fn == "string":
        need(1)
        return to_string(args[0])
    if fn == "abs":
        need(1)
        if not _number(args[0]):
            raise ExprError(f"invalid argument for abs (type {_tname(args[0])})")
        return abs(args[0])
    if fn == "round":
        need(1)
        if not _number(args[0]):
            raise ExprError(f"invalid argument for round (type {_tname(args[0])})")
        value = float(args[0])
        return float(math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5))
    if fn == "type":
        need(1)
        value = args[0]
        return ("nil" if value is None else "bool" if isinstance(value, bool) else "int" if isinstance(value, int)
                else "float" if isinstance(value, float) else "string" if isinstance(value, str)
                else "array" if isinstance(value, list) else "map")
    if fn == "get":
        need(2)
        base, key = args
        try:
            return _fetch(base, key, True)
        except ExprError:
            return None
    if fn == "keys":
        need(1)
        if not isinstance(args[0], dict):
            raise ExprError(f"cannot get keys from {_tname(args[0])}")
        return list(args[0].keys())
    if fn in ("min", "max"):
        items = args[0] if len(args) == 1 and isinstance(args[0], list) else args
        if not items or not all(_number(x) for x in items):
            raise ExprError(f"invalid argument for {fn}")
        return min(items) if fn == "min" else max(items)
    raise ExprUnsupported(f"function {fn}()")


def _go_int(value: Any) -> Any:
    return GoInt(value) if isinstance(value, int) and not isinstance(value, bool) else value


def evaluate(tree: tuple, env: dict[str, Any]) -> Any:
    op = tree[0]
    if op == "lit":
        return tree[1]
    if op == "root":
        if tree[1] not in ROOTS:
            return None
        value = env.get(tree[1])
        # Every root but `item` is a typed map in kitsoki's Env: absent, it reads as empty.
        return {} if value is None and tree[1] != "item" else value
    if op == "member":
        base = evaluate(tree[1], env)
        return _fetch(base, evaluate(tree[2], env), tree[3])
    if op == "??":
        left = evaluate(tree[1], env)
        return evaluate(tree[2], env) if left is None else left
    if op == "and":
        if not _truth(evaluate(tree[1], env), "&&"):
            return False
        return evaluate(tree[2], env)
    if op == "or":
        if _truth(evaluate(tree[1], env), "||"):
            return True
        return evaluate(tree[2], env)
    if op == "not":
        return not _truth(evaluate(tree[1], env), "!")
    if op == "cmp":
        return _compare(tree[1], evaluate(tree[2], env), evaluate(tree[3], env))
    if op == "in":
        return _contains(evaluate(tree[2], env), evaluate(tree[1], env))
    if op == "strop":
        left, right = evaluate(tree[2], env), evaluate(tree[3], env)
        if not (isinstance(left, str) and isinstance(right, str)):
            raise ExprError(f"invalid operation: {_tname(left)} {tree[1]} {_tname(right)}")
        return {"contains": right in left, "startsWith": left.startswith(right),
                "endsWith": left.endswith(right)}[tree[1]]
    if op == "arith":
        return _go_int(_arith(tree[1], evaluate(tree[2], env), evaluate(tree[3], env)))
    if op == "neg":
        value = evaluate(tree[1], env)
        if not _number(value):
            raise ExprError(f"invalid operation: -{_tname(value)}")
        return -value
    if op == "pos":
        value = evaluate(tree[1], env)
        if not _number(value):
            raise ExprError(f"invalid operation: +{_tname(value)}")
        return value
    if op == "cond":
        return evaluate(tree[2] if _truth(evaluate(tree[1], env), "?:") else tree[3], env)
    if op == "array":
        return [evaluate(item, env) for item in tree[1]]
    if op == "call":
        return _go_int(_call(tree[1], [evaluate(arg, env) for arg in tree[2]]))
    raise ExprUnsupported(f"operation {op}")


def eval_any(source: str, env: dict[str, Any]) -> Any:
    return evaluate(compile_expr(source), env)


def eval_bool(source: str, env: dict[str, Any]) -> bool:
    """A `when:` guard (kitsoki's EvalBool): a non-bool result is an error."""
    value = eval_any(source, env)
    if not isinstance(value, bool):
        raise ExprError(f"expected bool, got {_tname(value)}")
    return value


# --- kitsoki's {{ }} template engine ----------------------------------------------------------


def _template(template: str) -> tuple:
    try:
        return parse_template(template)
    except TemplateError as exc:
        raise ExprError(str(exc)) from None


def interpolate(value: Any) -> str:
    """kitsoki's anyToString: nil is empty, maps and lists are JSON, the rest %v."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return go_json(value)
    return to_string(value)


def _truthy(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if _number(value):
        return value != 0
    if isinstance(value, str):
        return value != ""
    return True


def _condition(source: str, env: dict[str, Any]) -> bool:
    if source.startswith("not "):
        source = f"!({source[4:]})"
    value = eval_any(source, env)
    return value if isinstance(value, bool) else _truthy(value)


def _exec(nodes: tuple, env: dict[str, Any], out: list[str], in_range: bool) -> None:
    fix = range_dots if in_range else (lambda s: s)
    for node in nodes:
        kind = node[0]
        if kind == "text":
            out.append(node[1])
        elif kind == "expr":
            out.append(interpolate(eval_any(fix(node[1]), env)))
        elif kind == "if":
            _exec(node[2] if _condition(fix(node[1]), env) else node[3], env, out, in_range)
        else:
            items = eval_any(fix(node[1]), env)
            if items is None:
                continue
            if not isinstance(items, list):
                raise ExprError(f"range expression yields {_tname(items)}, expected list")
            for item in items:
                _exec(node[2], {**env, "item": item}, out, True)


def render(template: str, env: dict[str, Any]) -> str:
    """kitsoki's expr.Render."""
    if "{{" not in template:
        return template
    out: list[str] = []
    _exec(_template(template), env, out, False)
    return "".join(out)


def render_value(template: str, env: dict[str, Any]) -> Any:
    """kitsoki's expr.RenderValue: one `{{ expr }}` covering the whole value keeps its type."""
    inner = single_expression(template)
    if inner is not None:
        return eval_any(inner, env)
    return render(template, env)


def resolve_value(value: Any, env: dict[str, Any]) -> Any:
    """kitsoki's resolveEffectValue: templates in strings, recursively through lists and maps."""
    if isinstance(value, str):
        return render_value(value, env) if "{{" in value else value
    if isinstance(value, list):
        return [resolve_value(item, env) for item in value]
    if isinstance(value, dict):
        return {key: resolve_value(item, env) for key, item in value.items()}
    return value
