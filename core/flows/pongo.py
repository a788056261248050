"""kitsoki's view templates: the pongo2 (Django-like) subset its stories use, rendered as pongo2 does.

kitsoki renders every view string through pongo2 v6 with autoescape off (internal/render):
`{{ expr|filter:arg }}`, `{% if/elif/else %}`, `{% for x in xs %}` / `{% for k, v in m %}` with
`forloop` and `{% empty %}`, `{% comment %}`, `{# #}`, and, with the story's `views/` folder,
`{% extends %}` / `{% block %}` / `{% include %}`. Before parsing, kitsoki rewrites `a ?? b`
inside a tag into `a|default:b`.

Values print as pongo2 prints them: nil as nothing, floats with six decimals (`%f`), booleans
`True`/`False`, a list or map as Go's reflect text (`<[]interface {} Value>`).
Comparisons follow pongo2: `<`/`>` compare numbers (strings read as numbers), `==` compares
integers by value and anything else by type and value; truthiness is non-zero, non-empty.
A tag, filter or construct outside the subset raises PongoUnsupported; the runner then declines
to judge the view rather than guess.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from core.flows.wrap import wordwrap


class PongoUnsupported(Exception):
    """A template construct the built-in renderer does not implement."""


class PongoError(Exception):
    """A template pongo2 would refuse to parse or execute."""


# --- values -------------------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return _is_int(v) or isinstance(v, float)


def to_str(v: Any) -> str:
    """pongo2's Value.String()."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, str):
        return v
    if _is_int(v):
        return str(int(v))
    if isinstance(v, float):
        if math.isinf(v):
            return "+Inf" if v > 0 else "-Inf"
        if math.isnan(v):
            return "NaN"
        return f"{v:f}"
    if isinstance(v, list):
        return "<[]interface {} Value>"  # pongo2 falls back to Go's reflect text
    if isinstance(v, dict):
        return "<map[string]interface {} Value>"
    raise PongoUnsupported(f"printing a {type(v).__name__} value")


def truthy(v: Any) -> bool:
    """pongo2's Value.IsTrue()."""
    if v is None:
        return False
    if isinstance(v, bool):
        return v
    if _is_number(v):
        return v != 0
    if isinstance(v, (str, list, dict)):
        return len(v) > 0
    return False


def to_int(v: Any) -> int:
    """pongo2's Value.Integer()."""
    if isinstance(v, bool) or v is None:
        return 0
    if _is_int(v):
        return int(v)
    if isinstance(v, float):
        return int(v) if math.isfinite(v) else 0
    if isinstance(v, str):
        try:
            return int(float(v)) if re.fullmatch(r"\s*[-+]?\d+(\.\d*)?\s*", v) else 0
        except ValueError:
            return 0
    return 0


def to_float(v: Any) -> float:
    if isinstance(v, bool) or v is None:
        return 0.0
    if _is_number(v):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return 0.0
    return 0.0


def _length(v: Any) -> int:
    return len(v) if isinstance(v, (str, list, dict)) else 0


def _equal(a: Any, b: Any) -> bool:
    if _is_int(a) and _is_int(b):
        return int(a) == int(b)
    if type(a) is not type(b):
        return False
    return a == b


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, dict):
        return isinstance(item, (str, int)) and not isinstance(item, bool) and item in container
    if isinstance(container, str):
        return to_str(item) in container
    if isinstance(container, list):
        return any(_equal(x, item) for x in container)
    return False


# --- filters ------------------------------------------------------------------------------------


def _floatformat(v: Any, arg: Any) -> Any:
    val = to_float(v)
    decimals = -1 if arg is None else to_int(arg)
    trim = not _is_number(arg)
    if decimals <= 0:
        decimals, trim = -decimals, True
    if trim and float(int(val)) == val:
        return to_int(v) if not isinstance(v, str) else int(val)
    return f"{val:.{decimals}f}"


def _slice(v: Any, arg: Any) -> Any:
    parts = to_str(arg).split(":")
    if len(parts) != 2:
        raise PongoError("Slice string must have the format 'from:to'")
    if not isinstance(v, (list, str)):
        return v
    size = len(v)
    start = to_int(parts[0]) if parts[0] else 0
    end = to_int(parts[1]) if parts[1] else size
    if start < 0:
        start = max(size + start, 0)
    if end < 0:
        end = max(size + end, 0)
    start, end = min(start, size), min(end, size)
    if start > end:
        start = end
    return v[start:end]


def _yesno(v: Any, arg: Any) -> str:
    choices = ["yes", "no", "maybe"]
    text = to_str(arg)
    if text:
        custom = text.split(",")
        if not 2 <= len(custom) <= 3:
            raise PongoError("yesno takes 2 or 3 options")
        choices[: len(custom)] = custom
        if len(custom) == 2:
            choices[2] = custom[1]
    if v is None:
        return choices[2]
    return choices[0] if truthy(v) else choices[1]


def _col(v: Any, arg: Any, right: bool) -> str:
    width = max(to_int(arg), 0)
    text = to_str(v)
    if len(text) >= width:
        return text[:width]
    pad = " " * (width - len(text))
    return pad + text if right else text + pad


_LLM_MARKS = ("\u2063\u2061\u2061\u2063", "\u2063\u2062\u2062\u2063")
"""kitsoki's invisible sentinels around model-written text (internal/render/sourcecolor)."""


def _truncatechars(v: Any, arg: Any) -> str:
    """kitsoki's truncatechars (sourcecolor.Truncate): n runes, the last three as `...`."""
    text, limit = to_str(v), max(to_int(arg), 0)
    if any(mark in text for mark in _LLM_MARKS):
        raise PongoUnsupported("truncatechars over text with kitsoki's model-text sentinels")
    if len(text) <= limit:
        return text
    return text[: limit - 3] + "..." if limit >= 3 else text[:limit]


_VERB = re.compile(r"%([-+ 0#]*)(\d*)(?:\.(\d+))?([dsvfq])")


def _stringformat(v: Any, arg: Any) -> str:
    """fmt.Sprintf(arg, value) for one plain verb (%d %s %v %f %q with flags, width, precision)."""
    spec = to_str(arg)
    verbs = list(re.finditer(r"%.", spec))
    match = _VERB.fullmatch(spec) if len(verbs) == 1 else None
    if match is None:
        raise PongoUnsupported(f"stringformat {spec!r}")
    flags, width, precision, verb = match.groups()
    if verb == "d" and not _is_int(v):
        raise PongoUnsupported(f"stringformat %d of a {type(v).__name__}")
    if verb == "f" and not _is_number(v):
        raise PongoUnsupported(f"stringformat %f of a {type(v).__name__}")
    if verb in "sv" and not isinstance(v, str) and not _is_int(v):
        raise PongoUnsupported(f"stringformat %{verb} of a {type(v).__name__}")
    if verb == "q":
        if not isinstance(v, str):
            raise PongoUnsupported("stringformat %q of a non-string")
        import json

        body = json.dumps(v, ensure_ascii=False)
    elif verb == "f":
        body = f"{float(v):.{precision or 6}f}"
    else:
        body = str(int(v)) if _is_int(v) else v
    if width:
        body = body.ljust(int(width)) if "-" in flags else body.rjust(int(width), "0" if "0" in flags and verb in "df" else " ")
    return body


FILTERS: dict[str, Callable[[Any, Any], Any]] = {
    "default": lambda v, a: v if truthy(v) else a,
    "default_if_none": lambda v, a: a if v is None else v,
    "length": lambda v, a: _length(v),
    "upper": lambda v, a: to_str(v).upper(),
    "lower": lambda v, a: to_str(v).lower(),
    "join": lambda v, a: to_str(a).join(to_str(x) for x in v) if isinstance(v, list) else v,
    "floatformat": _floatformat,
    "slice": _slice,
    "yesno": _yesno,
    "col": lambda v, a: _col(v, a, False),
    "rcol": lambda v, a: _col(v, a, True),
    "wordwrap": lambda v, a: wordwrap(to_str(v), to_int(a)) if to_int(a) > 0 else v,
    "first": lambda v, a: (v[0] if v else "") if isinstance(v, (list, str)) else "",
    "last": lambda v, a: (v[-1] if v else "") if isinstance(v, (list, str)) else "",
    "safe": lambda v, a: v,
    "escape": lambda v, a: v,
    "add": lambda v, a: (to_int(v) + to_int(a)) if _is_int(v) and _is_int(a) else to_str(v) + to_str(a),
    "reverse": lambda v, a: v[::-1] if isinstance(v, (list, str)) else v,
    "capfirst": lambda v, a: to_str(v)[:1].upper() + to_str(v)[1:],
    "title": lambda v, a: to_str(v).title(),
    "stringformat": lambda v, a: _stringformat(v, a),
}
TRUNCATE_FILTERS = {"truncatechars"}


# --- lexing and parsing -------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>\d+\.\d+|\d+)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>==|!=|<>|<=|>=|&&|\|\||[<>+\-*/%^|:.,()\[\]!])
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
""", re.VERBOSE)

_UNESCAPE = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}


def _tokens(source: str) -> list[tuple[str, Any]]:
    out, pos = [], 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            raise PongoUnsupported(f"expression {source.strip()!r}")
        pos = match.end()
        kind, text = match.lastgroup, match.group()
        if kind == "ws":
            continue
        if kind == "num":
            out.append(("lit", float(text) if "." in text else int(text)))
        elif kind == "str":
            body = text[1:-1]
            out.append(("lit", re.sub(r"\\(.)", lambda m: _UNESCAPE.get(m.group(1), "\\" + m.group(1)), body)))
        elif kind == "name" and text in ("true", "True"):
            out.append(("lit", True))
        elif kind == "name" and text in ("false", "False"):
            out.append(("lit", False))
        elif kind == "name" and text in ("nil", "None"):
            out.append(("lit", None))
        elif kind == "name" and text in ("and", "or", "not", "in"):
            out.append(("op", {"and": "&&", "or": "||", "not": "!"}.get(text, text)))
        else:
            out.append((kind, text))
    return out


class _Expr:
    """pongo2's expression grammar: or > and > not > relational > additive > term > power > factor."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.toks = _tokens(source)
        self.i = 0

    def peek(self) -> tuple[str, Any] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, Any]:
        tok = self.peek()
        if tok is None:
            raise PongoError(f"unexpected end of expression {self.source!r}")
        self.i += 1
        return tok

    def accept(self, *ops: str) -> str | None:
        tok = self.peek()
        if tok is not None and tok[0] == "op" and tok[1] in ops:
            self.i += 1
            return tok[1]
        return None

    def parse(self) -> tuple:
        node = self.or_()
        if self.peek() is not None:
            raise PongoError(f"unexpected {self.peek()[1]!r} in {self.source!r}")
        return node

    def or_(self) -> tuple:
        node = self.and_()
        while self.accept("||"):
            node = ("or", node, self.and_())
        return node

    def and_(self) -> tuple:
        node = self.not_()
        while self.accept("&&"):
            node = ("and", node, self.not_())
        return node

    def not_(self) -> tuple:
        if self.accept("!"):
            return ("not", self.not_())
        return self.rel()

    def rel(self) -> tuple:
        node = self.add()
        op = self.accept("==", "!=", "<>", "<", ">", "<=", ">=", "in")
        if op:
            node = ("rel", op, node, self.add())
        return node

    def add(self) -> tuple:
        negative = bool(self.accept("-"))
        if not negative:
            self.accept("+")
        node = self.term()
        if negative:
            node = ("neg", node)
        while True:
            op = self.accept("+", "-")
            if not op:
                return node
            node = ("arith", op, node, self.term())

    def term(self) -> tuple:
        node = self.power()
        while True:
            op = self.accept("*", "/", "%")
            if not op:
                return node
            node = ("arith", op, node, self.power())

    def power(self) -> tuple:
        node = self.factor()
        while self.accept("^"):
            node = ("arith", "^", node, self.factor())
        return node

    def factor(self) -> tuple:
        if self.accept("("):
            node = self.or_()
            if not self.accept(")"):
                raise PongoError(f"missing ) in {self.source!r}")
            return self.filters(node)
        kind, value = self.take()
        if kind == "lit":
            return self.filters(("lit", value))
        if kind != "name":
            raise PongoError(f"unexpected {value!r} in {self.source!r}")
        node: tuple = ("var", value)
        while True:
            if self.accept("."):
                kind, part = self.take()
                if kind == "lit" and _is_int(part):
                    node = ("get", node, ("lit", part), "int")
                elif kind == "name":
                    node = ("get", node, ("lit", part), "ident")
                else:
                    raise PongoError(f"bad attribute in {self.source!r}")
            elif self.accept("["):
                key = self.or_()
                if not self.accept("]"):
                    raise PongoError(f"missing ] in {self.source!r}")
                node = ("get", node, key, "subscript")
            elif self.accept("("):
                args = []
                if not self.accept(")"):
                    args.append(self.or_())
                    while self.accept(","):
                        args.append(self.or_())
                    if not self.accept(")"):
                        raise PongoError(f"missing ) in {self.source!r}")
                node = ("call", node, tuple(args))
            else:
                break
        return self.filters(node)

    def filters(self, node: tuple) -> tuple:
        while self.accept("|"):
            kind, name = self.take()
            if kind != "name":
                raise PongoError(f"bad filter in {self.source!r}")
            if name not in FILTERS and name not in TRUNCATE_FILTERS:
                raise PongoUnsupported(f"filter {name}")
            arg = None
            if self.accept(":"):
                arg = self.factor_plain()
            node = ("filter", name, node, arg)
        return node

    def factor_plain(self) -> tuple:
        kind, value = self.take()
        if kind == "lit":
            return ("lit", value)
        if kind == "name":
            node: tuple = ("var", value)
            while self.accept("."):
                kind, part = self.take()
                node = ("get", node, ("lit", part), "int" if kind == "lit" and _is_int(part) else "ident")
            return node
        raise PongoError(f"bad filter argument in {self.source!r}")


def _get(base: Any, key: Any, how: str) -> Any:
    """pongo2's variable resolution, one part: nil stays nil; `.name` reads a map (or forloop's
    fields) and is an error on anything else; `.0` and `[i]` index a list (past the end is nil),
    `.0` on a map and either on a scalar are errors; `[key]` reads a map."""
    if base is None:
        return None
    if isinstance(base, str) and how != "ident":
        raise PongoUnsupported("indexing a string (pongo2 yields a byte)")
    if how == "ident":
        if isinstance(base, dict):
            return base.get(key)
        raise PongoError(f"can't access a field by name on type {_go_kind(base)}")
    if isinstance(base, list):
        if not _is_int(key):
            raise PongoUnsupported(f"indexing a list with {key!r}")
        return base[key] if 0 <= key < len(base) else None
    if isinstance(base, dict) and how == "subscript":
        return base.get(key) if isinstance(key, str) else None
    raise PongoError(f"can't access an index on type {_go_kind(base)}")


def _go_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "slice"
    return "map" if isinstance(value, dict) else type(value).__name__


def evaluate(node: tuple, ctx: dict[str, Any]) -> Any:
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "var":
        return ctx.get(node[1])
    if op == "get":
        return _get(evaluate(node[1], ctx), evaluate(node[2], ctx), node[3])
    if op == "call":
        fn = evaluate(node[1], ctx)
        if not callable(fn):
            raise PongoUnsupported("calling a value that is not a function")
        return fn(*[evaluate(a, ctx) for a in node[2]])
    if op == "filter":
        value = evaluate(node[2], ctx)
        arg = evaluate(node[3], ctx) if node[3] is not None else None
        if node[1] == "truncatechars":
            return _truncatechars(value, arg)
        return FILTERS[node[1]](value, arg)
    if op == "not":
        return not truthy(evaluate(node[1], ctx))
    if op == "and":
        return truthy(evaluate(node[1], ctx)) and truthy(evaluate(node[2], ctx))
    if op == "or":
        return truthy(evaluate(node[1], ctx)) or truthy(evaluate(node[2], ctx))
    if op == "neg":
        value = evaluate(node[1], ctx)
        if not _is_number(value):
            raise PongoError("Negative sign on a non-number expression")
        return -value
    if op == "rel":
        a, b = evaluate(node[2], ctx), evaluate(node[3], ctx)
        rel = node[1]
        if rel == "==":
            return _equal(a, b)
        if rel in ("!=", "<>"):
            return not _equal(a, b)
        if rel == "in":
            return _contains(b, a)
        if isinstance(a, float) or isinstance(b, float):
            x, y = to_float(a), to_float(b)
        else:
            x, y = to_int(a), to_int(b)
        return {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[rel]
    if op == "arith":
        a, b = evaluate(node[2], ctx), evaluate(node[3], ctx)
        sym = node[1]
        if sym == "+" and (isinstance(a, str) or isinstance(b, str)):
            return to_str(a) + to_str(b)
        if sym == "^":
            return math.pow(to_float(a), to_float(b))
        if sym in "+-*/" and (isinstance(a, float) or isinstance(b, float)):
            x, y = to_float(a), to_float(b)
            if sym == "/" and y == 0:
                return math.inf if x > 0 else -math.inf if x < 0 else math.nan
            return {"+": x + y, "-": x - y, "*": x * y, "/": x / y if y else 0.0}[sym]
        x, y = to_int(a), to_int(b)
        if sym in "/%" and y == 0:
            raise PongoError("integer divide by zero")
        if sym == "/":
            return int(x / y)
        if sym == "%":
            return int(math.fmod(x, y))
        return {"+": x + y, "-": x - y, "*": x * y}[sym]
    raise PongoUnsupported(f"operation {op}")


@lru_cache(maxsize=4096)
def compile_expression(source: str) -> tuple:
    return _Expr(source).parse()


# --- templates ----------------------------------------------------------------------------------

_TAG = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}|\{#.*?#\}", re.S)


def coalesce(source: str) -> str:
    """kitsoki's preprocessCoalesce: `a ?? b` inside a tag becomes `a|default:b`."""
    if "??" not in source:
        return source

    def rewrite(match: re.Match) -> str:
        whole = match.group(0)
        if whole.startswith("{#"):
            return whole
        open_, close = whole[:2], whole[-2:]
        body = whole[2:-2]
        out, i = [], 0
        while i < len(body):
            char = body[i]
            if char in "\"'":
                end = i + 1
                while end < len(body) and body[end] != char:
                    end += 2 if body[end] == "\\" else 1
                out.append(body[i:end + 1])
                i = end + 1
                continue
            if body.startswith("??", i):
                while out and out[-1] in (" ", "\t"):
                    out.pop()
                out.append("|default:")
                i += 2
                while i < len(body) and body[i] in " \t":
                    i += 1
                continue
            out.append(char)
            i += 1
        return open_ + "".join(out) + close

    return _TAG.sub(rewrite, source)


def _parse(source: str) -> list:
    """Nodes: ("text", s) | ("out", expr) | ("if", [(cond, body)...], else) | ("for", ...) |
    ("block", name, body) | ("extends", name) | ("include", name)."""
    pos, stack = 0, [("root", [], None)]
    for match in _TAG.finditer(source):
        if match.start() > pos:
            stack[-1][1].append(("text", source[pos:match.start()]))
        pos = match.end()
        whole = match.group(0)
        if whole.startswith("{#"):
            continue
        if match.group(1) is not None:
            stack[-1][1].append(("out", compile_expression(match.group(1).strip())))
            continue
        tag = match.group(2).strip()
        word, _, rest = tag.partition(" ")
        rest = rest.strip()
        top = stack[-1]
        if top[0] == "comment":
            if word == "endcomment":
                stack.pop()
            continue
        if word == "comment":
            stack.append(("comment", [], None))
        elif word == "if":
            node = ["if", [(compile_expression(rest), [])], None]
            top[1].append(node)
            stack.append(("if", node[1][0][1], node))
        elif word in ("elif", "else", "empty") and top[0] in ("if", "for"):
            node = top[2]
            stack.pop()
            if word == "elif" and top[0] == "if":
                node[1].append((compile_expression(rest), []))
                stack.append(("if", node[1][-1][1], node))
            elif word == "else" and top[0] == "if":
                node[2] = []
                stack.append(("if", node[2], node))
            elif word == "empty" and top[0] == "for":
                node[4] = []
                stack.append(("for", node[4], node))
            else:
                raise PongoError(f"unexpected {{% {word} %}}")
        elif word == "endif" and top[0] == "if":
            stack.pop()
        elif word == "for":
            match_for = re.fullmatch(r"(\w+)(?:\s*,\s*(\w+))?\s+in\s+(.+?)(\s+reversed)?", rest)
            if match_for is None:
                raise PongoUnsupported(f"for tag {rest!r}")
            node = ["for", (match_for.group(1), match_for.group(2)), compile_expression(match_for.group(3)), [],
                    None, bool(match_for.group(4))]
            top[1].append(node)
            stack.append(("for", node[3], node))
        elif word == "endfor" and top[0] == "for":
            stack.pop()
        elif word == "block":
            node = ["block", rest, []]
            top[1].append(node)
            stack.append(("block", node[2], node))
        elif word == "endblock" and top[0] == "block":
            stack.pop()
        elif word == "extends":
            top[1].append(("extends", compile_expression(rest)))
        elif word == "include":
            if " " in rest.strip():
                raise PongoUnsupported(f"include with arguments {rest!r}")
            top[1].append(("include", compile_expression(rest)))
        else:
            raise PongoUnsupported(f"tag {word}")
    if len(stack) != 1:
        raise PongoError(f"unclosed {{% {stack[-1][0]} %}}")
    if pos < len(source):
        stack[0][1].append(("text", source[pos:]))
    return stack[0][1]


@lru_cache(maxsize=2048)
def parse_template(source: str) -> tuple:
    return tuple(_parse(coalesce(source)))


class TemplateSet:
    """The templates of one story's `views/` folder (kitsoki's AppRenderer)."""

    def __init__(self, views: Path | None) -> None:
        self.views = views

    def load(self, name: str) -> tuple:
        if self.views is None:
            raise PongoError(f"no app views/ directory configured (cannot load template {name!r})")
        path = (self.views / name).resolve()
        if not path.is_relative_to(self.views.resolve()) or not path.is_file():
            raise PongoError(f"template {name!r} not found in views/")
        return _file_template(str(path), path.stat().st_mtime_ns)

    def render(self, source: str, ctx: dict[str, Any]) -> str:
        if "{{" not in source and "{%" not in source:
            return source
        return self.execute(parse_template(source), ctx)

    def execute(self, nodes: tuple, ctx: dict[str, Any], blocks: dict[str, list] | None = None) -> str:
        parent = next((node for node in nodes if node[0] == "extends"), None)
        if parent is not None:
            own = {node[1]: node[2] for node in nodes if node[0] == "block"}
            merged = {**own, **(blocks or {})}
            return self.execute(self.load(to_str(evaluate(parent[1], ctx))), ctx, merged)
        out: list[str] = []
        self._run(list(nodes), ctx, out, blocks or {})
        return "".join(out)

    def _run(self, nodes: list, ctx: dict[str, Any], out: list[str], blocks: dict[str, list]) -> None:
        for node in nodes:
            kind = node[0]
            if kind == "text":
                out.append(node[1])
            elif kind == "out":
                out.append(to_str(evaluate(node[1], ctx)))
            elif kind == "if":
                for cond, body in node[1]:
                    if truthy(evaluate(cond, ctx)):
                        self._run(body, ctx, out, blocks)
                        break
                else:
                    if node[2] is not None:
                        self._run(node[2], ctx, out, blocks)
            elif kind == "for":
                self._for(node, ctx, out, blocks)
            elif kind == "block":
                self._run(blocks.get(node[1], node[2]), ctx, out, blocks)
            elif kind == "include":
                out.append(self.execute(self.load(to_str(evaluate(node[1], ctx))), ctx))

    def _for(self, node: list, ctx: dict[str, Any], out: list[str], blocks: dict[str, list]) -> None:
        (key_name, value_name), source, body, empty, reverse = node[1], node[2], node[3], node[4], node[5]
        items = evaluate(source, ctx)
        if isinstance(items, dict):
            pairs = [(k, items[k]) for k in sorted(items)]
        elif isinstance(items, list):
            pairs = list(enumerate(items))
        elif isinstance(items, str):
            pairs = list(enumerate(items))
        else:
            pairs = []
        if reverse:
            pairs.reverse()
        if not pairs:
            if empty is not None:
                self._run(empty, ctx, out, blocks)
            return
        total = len(pairs)
        for index, (key, value) in enumerate(pairs):
            inner = dict(ctx)
            if value_name is None:
                inner[key_name] = value if not isinstance(items, dict) else key
            else:
                inner[key_name], inner[value_name] = key, value
            inner["forloop"] = {"Counter": index + 1, "Counter0": index, "Revcounter": total - index,
                                "Revcounter0": total - index - 1, "First": index == 0, "Last": index == total - 1}
            self._run(body, inner, out, blocks)


@lru_cache(maxsize=256)
def _file_template(path: str, _mtime: int) -> tuple:
    return parse_template(Path(path).read_text(encoding="utf-8"))
