"""kitsoki's compile check of an expression (internal/expr Compile / CompileBool), without running it.

kitsoki compiles every guard and templated effect value when it loads a story, and refuses the story
when one does not compile. Compiling is expr-lang's: parse, kitsoki's AST patches (`len(x)` becomes
`len(x ?? [])`), then its type checker against kitsoki's Env (`slots`, `world`, `event`, `args`, `menu`,
`result` and `state` are maps of anything, `run` is a struct of `id` and `turn`, `item` is anything, any
other bare name is undefined and so of unknown type); a guard must be able to yield a bool. Then kitsoki's
whitelist: member chains start at an allowed root, only its builtins and view helpers are called, no
predicates, `let` or map literals.

`compile_error(source, want_bool)` is None when kitsoki would compile the program, else kitsoki's
message (`expr compile "<src>": <reason> (line:col)` or `expr whitelist violation in "<src>": ...`).
The type checker follows expr-lang's rules where the types are known (literals, builtins' results, the
Env's fields) and accepts whatever an unknown type leaves open, so it never refuses a program kitsoki
compiles; some programs it lets through that expr-lang's fuller checker would refuse (calls checked by
argument type only for the string builtins, predicates' bodies, `matches` with a constant pattern).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from core.expr.syntax import ALLOWED_BUILTINS, ALLOWED_FUNCTIONS, EXPR_LANG_BUILTINS, PREDICATES, ROOTS, \
    ExprSyntaxError, parse

# A nature is (kind, Go type name): kind is one of unknown, nil, bool, int, float, string, bytes, array,
# map, struct, time, duration, func. "unknown" with go "interface {}" is an Env value of type any;
# with go "unknown" a name the Env does not declare. Both are unknown to expr-lang's checker.
ANY = ("unknown", "interface {}")
UNKNOWN = ("unknown", "unknown")
NIL = ("nil", "unknown")
BOOL, INT, FLOAT, STRING = ("bool", "bool"), ("int", "int"), ("float", "float64"), ("string", "string")
INT64 = ("int", "int64")
BYTES = ("bytes", "[]uint8")
ARRAY, STRINGS = ("array", "[]interface {}"), ("array", "[]string")
MAP = ("map", "map[string]interface {}")
RUN = ("struct", "expr.RunCtx")
TIME, DURATION = ("time", "time.Time"), ("duration", "time.Duration")
BUILTIN = ("func", "func(...interface {}) (interface {}, error)")
HELPER_BOOL, HELPER_STRING = ("func", "func(string) bool"), ("func", "func(string) string")

_ENV = {"slots": MAP, "world": MAP, "event": MAP, "args": MAP, "menu": MAP, "result": MAP, "state": MAP,
        "run": RUN, "item": ANY, "available": HELPER_BOOL, "blocked": HELPER_BOOL,
        "blocked_reason": HELPER_STRING, "intent_status": HELPER_STRING}
_RUN_FIELDS = {"id": STRING, "turn": INT64}
_LITERALS = {"int": INT, "float": FLOAT, "string": STRING, "bool": BOOL, "nil": NIL, "bytes": BYTES}
_STRING_ARGS = {"trim": (1, 2), "upper": (1, 1), "lower": (1, 1), "split": (2, 3), "hasPrefix": (2, 2),
                "hasSuffix": (2, 2)}


class _TypeError(Exception):
    def __init__(self, message: str, at: tuple[int, int]) -> None:
        super().__init__(message)
        self.message, self.at = message, at


def _unknown(n: tuple) -> bool:
    return n[0] == "unknown"


def _number(n: tuple) -> bool:
    return n[0] in ("int", "float")


def _maybe(left: tuple, right: tuple, kinds: tuple[str, ...]) -> bool:
    """expr-lang's MaybeCompatible: both unknown, or one unknown and the other of an accepted kind."""
    lu, ru = _unknown(left), _unknown(right)
    return (lu and ru) or (lu and right[0] in kinds) or (ru and left[0] in kinds)


def _assignable(n: tuple, to: tuple) -> bool:
    if n[0] == "nil":
        return to[0] in ("unknown", "map", "array", "func", "bytes") and to != UNKNOWN
    if n[0] == "unknown" or to[0] == "unknown":
        return to == ANY and n != UNKNOWN
    return n[1] == to[1]


def _comparable(left: tuple, right: tuple) -> bool:
    return (_unknown(left) or _unknown(right) or left[0] == "nil" or right[0] == "nil"
            or (_number(left) and _number(right)) or (left[0] == right[0] == "array")
            or (left[0] == right[0] and left[0] in ("time", "duration")) or _assignable(left, right))


def _promote(left: tuple, right: tuple) -> tuple:
    if _unknown(left) or _unknown(right):
        return UNKNOWN
    return FLOAT if "float" in (left[0], right[0]) else INT


class _Checker:
    def __init__(self) -> None:
        self.scopes: list[dict[str, tuple]] = []

    def fail(self, message: str, at: tuple[int, int]) -> tuple:
        raise _TypeError(message, at)

    def visit(self, node: tuple) -> tuple:
        return getattr(self, "v_" + node[0])(node)

    def v_lit(self, node: tuple) -> tuple:
        return _LITERALS[node[3]]

    def v_ident(self, node: tuple) -> tuple:
        for scope in reversed(self.scopes):
            if node[2] in scope:
                return scope[node[2]]
        if node[2] in EXPR_LANG_BUILTINS:
            return BUILTIN  # a builtin named without a call is the function itself
        return _ENV.get(node[2], UNKNOWN)

    def v_pointer(self, node: tuple) -> tuple:
        return UNKNOWN

    def v_paren(self, node: tuple) -> tuple:
        return self.visit(node[2])

    def v_seq(self, node: tuple) -> tuple:
        result = UNKNOWN
        for item in node[2]:
            result = self.visit(item)
        return result

    def v_let(self, node: tuple) -> tuple:
        value = self.visit(node[3])
        self.scopes.append({node[2]: value})
        try:
            return self.visit(node[4])
        finally:
            self.scopes.pop()

    def v_array(self, node: tuple) -> tuple:
        for item in node[2]:
            self.visit(item)
        return ARRAY

    def v_map(self, node: tuple) -> tuple:
        for pair in node[2]:
            self.visit(pair[2])
            self.visit(pair[3])
        return ("map", "map[string]interface {}")

    def v_cond(self, node: tuple) -> tuple:
        test = self.visit(node[2])
        if not (test[0] == "bool" or _unknown(test)):
            self.fail(f"non-bool expression (type {test[1]}) used as condition", node[2][1])
        yes, no = self.visit(node[3]), self.visit(node[4])
        if yes[0] == "nil" and no[0] != "nil":
            return no
        if no[0] == "nil" and yes[0] != "nil":
            return yes
        return yes if _assignable(yes, no) else UNKNOWN

    def v_unary(self, node: tuple) -> tuple:
        operand = self.visit(node[3])
        op = node[2]
        if op in ("!", "not"):
            if operand[0] == "bool" or _unknown(operand):
                return BOOL
        elif _number(operand):
            return operand
        elif _unknown(operand):
            return UNKNOWN
        return self.fail(f"invalid operation: {op} (mismatched type {operand[1]})", node[1])

    def v_binary(self, node: tuple) -> tuple:
        op, at = node[2], node[1]
        left, right = self.visit(node[3]), self.visit(node[4])
        if op in ("==", "!="):
            if _comparable(left, right):
                return BOOL
        elif op in ("or", "||", "and", "&&"):
            if (left[0] == right[0] == "bool") or _maybe(left, right, ("bool",)):
                return BOOL
        elif op in ("<", ">", "<=", ">="):
            if (_number(left) and _number(right)) or (left[0] == right[0] and left[0] in ("string", "time",
                                                                                           "duration")):
                return BOOL
            if _maybe(left, right, ("int", "float", "string", "time", "duration")):
                return BOOL
        elif op == "-":
            if _number(left) and _number(right):
                return _promote(left, right)
            if left[0] == right[0] == "time":
                return DURATION
            if left[0] == "time" and right[0] == "duration":
                return TIME
            if left[0] == right[0] == "duration":
                return DURATION
            if _maybe(left, right, ("int", "float", "time", "duration")):
                return UNKNOWN
        elif op == "*":
            if _number(left) and _number(right):
                return _promote(left, right)
            if "duration" in (left[0], right[0]) and {left[0], right[0]} <= {"int", "float", "duration"}:
                return DURATION
            if _maybe(left, right, ("int", "float", "duration")):
                return UNKNOWN
        elif op in ("/", "**", "^"):
            if (_number(left) and _number(right)) or _maybe(left, right, ("int", "float")):
                return FLOAT
        elif op == "%":
            if left[0] == right[0] == "int":
                if node[4][0] == "lit" and node[4][2] == 0 and node[3][0] == "lit":
                    self.fail("integer divide by zero", at)
                return INT
            if _maybe(left, right, ("int",)):
                return INT
        elif op == "+":
            if _number(left) and _number(right):
                return _promote(left, right)
            if left[0] == right[0] == "string":
                return STRING
            if {left[0], right[0]} == {"time", "duration"}:
                return TIME
            if left[0] == right[0] == "duration":
                return DURATION
            if _maybe(left, right, ("int", "float", "string", "time", "duration")):
                return UNKNOWN
        elif op == "in":
            if right[0] == "struct" and (left[0] == "string" or _unknown(left)):
                return BOOL
            if right[0] == "map":
                if not _unknown(left) and not _assignable(left, STRING):
                    self.fail(f"cannot use {left[1]} as type string in map key", at)
                return BOOL
            if right[0] == "array":
                return BOOL  # elements are interface {}: anything compares
            if _unknown(left) and right[0] in ("string", "array", "map"):
                return BOOL
            if _unknown(right):
                return BOOL
        elif op in ("matches", "contains", "startsWith", "endsWith"):
            if op == "matches" and node[4][0] == "lit" and node[4][3] == "string":
                try:
                    re.compile(node[4][2])
                except re.error:
                    pass  # Go's RE2 and Python's re differ; leave the pattern to kitsoki
            if (left[0] == right[0] == "string") or (op == "matches" and left[0] == "bytes" and right[0] == "string"):
                return BOOL
            if _maybe(left, right, ("string",)):
                return BOOL
        elif op == "..":
            if (left[0] == right[0] == "int") or _maybe(left, right, ("int",)):
                return ARRAY
        elif op == "??":
            if left[0] == "nil" and right[0] != "nil":
                return right
            if right[0] == "nil" and left[0] != "nil":
                return left
            if left[0] == right[0] == "nil":
                return NIL
            return left if _assignable(right, left) else UNKNOWN
        return self.fail(f"invalid operation: {op} (mismatched types {left[1]} and {right[1]})", at)

    def v_member(self, node: tuple) -> tuple:
        base_node, prop_node = node[2], node[3]
        base = self.visit(base_node)
        prop = self.visit(prop_node)
        if _unknown(base):
            return UNKNOWN
        name = prop_node[2] if prop_node[0] == "lit" and prop_node[3] == "string" else None
        if name is not None and base[0] == "nil":
            return self.fail(f"type nil has no field {name}", node[1])
        if base[0] == "map":
            if not _assignable(prop, STRING) and not _unknown(prop):
                return self.fail(f"cannot use {prop[1]} to get an element from {base[1]}", prop_node[1])
            return ANY
        if base[0] == "array":
            if prop[0] != "int" and not _unknown(prop):
                return self.fail(f"array elements can only be selected using an integer (got {prop[1]})",
                                 prop_node[1])
            return ("unknown", "interface {}") if base[1] == "[]interface {}" else \
                (("string", "string") if base[1] == "[]string" else INT)
        if base == RUN and name is not None:
            if name in _RUN_FIELDS:
                return _RUN_FIELDS[name]
            return self.fail(f"type expr.RunCtx has no field {name}", node[1])
        if name is not None:
            return self.fail(f"type {base[1]} has no field {name}", node[1])
        return self.fail(f"type {base[1]}[{prop[1]}] is undefined", node[1])

    def v_slice(self, node: tuple) -> tuple:
        base = self.visit(node[2])
        if _unknown(base):
            return UNKNOWN
        if base[0] not in ("string", "array"):
            return self.fail(f"cannot slice {base[1]}", node[1])
        for bound in (node[3], node[4]):
            if bound is not None:
                kind = self.visit(bound)
                if kind[0] != "int" and not _unknown(kind):
                    return self.fail(f"non-integer slice index {kind[1]}", bound[1])
        return base

    def v_method(self, node: tuple) -> tuple:
        callee = node[2]
        base = self.visit(callee[2])
        for arg in node[3]:
            self.visit(arg)
        if _unknown(base):
            return UNKNOWN
        name = callee[3][2]
        if base[0] == "nil":
            return self.fail(f"type nil has no field {name}", callee[1])
        if base[0] in ("map", "array"):
            return UNKNOWN  # a map's element; calling it is refused by the whitelist
        if base[0] in ("time", "duration"):
            return UNKNOWN  # Go methods (`now().Year()`), refused by the whitelist as user calls
        return self.fail(f"type {base[1]} has no method {name}", callee[1])

    def v_call(self, node: tuple) -> tuple:
        name, args, at = node[2], node[3], node[1]
        if name in EXPR_LANG_BUILTINS and not any(name in scope for scope in self.scopes):
            return self.builtin(name, args, at)
        kinds = [self.visit(arg) for arg in args]
        callee = self.v_ident(("ident", at, name))
        if callee[0] == "func":
            if len(kinds) != 1:
                word = "not enough" if len(kinds) < 1 else "too many"
                return self.fail(f"{word} arguments to call {name}", at)
            if not (_unknown(kinds[0]) or kinds[0][0] == "string"):
                return self.fail(f"cannot use {kinds[0][1]} as argument (type string) to call {name} ", args[0][1])
            return BOOL if callee == HELPER_BOOL else STRING
        if _unknown(callee):
            return UNKNOWN
        if callee[0] == "nil":
            return self.fail(f"{name} is nil; cannot call nil as function", at)
        return self.fail(f"{callee[1]} is not callable", at)

    def builtin(self, name: str, args: tuple, at: tuple[int, int]) -> tuple:
        if name in PREDICATES:
            self.scopes.append({"#": UNKNOWN})
            try:
                for arg in args:
                    self.visit(arg)
            finally:
                self.scopes.pop()
            return UNKNOWN
        if name == "len":
            if len(args) != 1:
                return self.fail(f"invalid number of arguments (expected 1, got {len(args)})", at)
            self.visit(args[0])  # kitsoki wraps the argument in `?? []`: any type passes
            return INT
        kinds = [self.visit(arg) for arg in args]
        if name in _STRING_ARGS:
            least, most = _STRING_ARGS[name]
            if len(kinds) < least:
                return self.fail(f"not enough arguments to call {name}", at)
            if len(kinds) > most:
                return self.fail(f"too many arguments to call {name}", at)
            for index, (arg, kind) in enumerate(zip(args, kinds)):
                wanted = "int" if name == "split" and index == 2 else "string"
                if not (_unknown(kind) or kind[0] == wanted):
                    return self.fail(f"cannot use {kind[1]} as argument (type {wanted}) to call {name} ", arg[1])
            return STRINGS if name == "split" else BOOL if name in ("hasPrefix", "hasSuffix") else STRING
        if name in ("int", "float", "abs", "round"):
            if len(kinds) != 1:
                return self.fail(f"invalid number of arguments (expected 1, got {len(kinds)})", at)
            kind = kinds[0]
            accepted = ("int", "float", "string") if name in ("int", "float") else ("int", "float")
            if not (_unknown(kind) or kind[0] in accepted):
                shown = "%!s(<nil>)" if kind[0] == "nil" else kind[1]
                return self.fail(f"invalid argument for {name} (type {shown})", at)
            if name == "abs":
                return kind if _number(kind) else UNKNOWN
            return INT if name == "int" else FLOAT
        if name in ("string", "type"):
            if len(kinds) != 1:
                word = "not enough" if not kinds else "too many"
                return self.fail(f"{word} arguments to call {name}", at)
            return STRING
        if name == "keys":
            if len(kinds) != 1:
                return self.fail(f"invalid number of arguments (expected 1, got {len(kinds)})", at)
            if not (_unknown(kinds[0]) or kinds[0][0] == "map"):
                return self.fail(f"cannot get keys from {kinds[0][1]}", at)
            return ARRAY
        if name == "now":
            return TIME
        if name == "date":
            return TIME
        if name == "duration":
            return DURATION
        if name == "join":
            return STRING
        return UNKNOWN


_STRICT_VIOLATIONS = {"map": "map literal expressions are not allowed",
                      "let": "variable declarations (let) are not allowed"}


def _violations(node: Any, predicate_args: bool = False) -> tuple[list[str], list[str]]:
    """kitsoki's two whitelist visitors, in expr-lang's walk order (children before their node)."""
    calls: list[str] = []
    roots: list[str] = []

    def walk(n: Any, in_predicate_arg: bool = False) -> None:
        if not isinstance(n, tuple) or not n or not isinstance(n[0], str):
            return
        kind = n[0]
        if kind == "call":
            name, args = n[2], n[3]
            for index, arg in enumerate(args):
                walk(arg, name in PREDICATES and index == 1)
            if in_predicate_arg:
                calls.append("lambda/predicate expressions are not allowed")
            if name in EXPR_LANG_BUILTINS:
                if name not in ALLOWED_BUILTINS:
                    calls.append(f'forbidden built-in function "{name}"')
            elif name not in ALLOWED_FUNCTIONS:
                calls.append(f'forbidden user-defined function call "{name}" (only built-in functions are allowed)')
            return
        if kind == "method":
            walk(n[2])
            for arg in n[3]:
                walk(arg)
            if in_predicate_arg:
                calls.append("lambda/predicate expressions are not allowed")
            calls.append(f'forbidden user-defined function call "{_callee_text(n[2])}" (only built-in functions '
                         "are allowed)")
            return
        if kind == "member":
            walk(n[2])
            walk(n[3])
            root = _root_of(n[2])
            if root and root not in ROOTS and root not in ("true", "false", "nil"):
                roots.append(f'member access on forbidden root "{root}" (allowed: slots, world, event, run, args)')
        elif kind == "pair":
            walk(n[2])
            walk(n[3])
        else:
            for child in n[2:]:
                if isinstance(child, tuple):
                    if child and isinstance(child[0], tuple):
                        for item in child:
                            walk(item)
                    else:
                        walk(child)
        if in_predicate_arg:
            calls.append("lambda/predicate expressions are not allowed")
        if kind in _STRICT_VIOLATIONS:
            calls.append(_STRICT_VIOLATIONS[kind])

    walk(node)
    return calls, roots


def _root_of(node: tuple) -> str:
    while node[0] in ("member", "paren"):
        node = node[2]
    return node[2] if node[0] == "ident" else ""


def _callee_text(member: tuple) -> str:
    """How expr-lang prints a method callee (`world.x.y`, `now().Year`)."""
    def text(n: tuple) -> str:
        if n[0] == "ident":
            return n[2]
        if n[0] == "member":
            prop = n[3]
            if prop[0] == "lit" and prop[3] == "string":
                return f"{text(n[2])}.{prop[2]}"
            return f"{text(n[2])}[{text(prop)}]"
        if n[0] == "call":
            return f"{n[2]}({', '.join(text(a) for a in n[3])})"
        if n[0] == "lit":
            return json.dumps(n[2]) if n[3] == "string" else str(n[2]).lower() if n[3] == "bool" else \
                "nil" if n[3] == "nil" else str(n[2])
        if n[0] == "paren":
            return text(n[2])
        return "..."
    return text(member)


def _guard_problem(result: tuple) -> str | None:
    """CompileBool's expectation: a bool, or a type that may hold one."""
    if result[0] in ("bool", "unknown"):
        return None
    return f"expected bool, but got {result[1]}"


def _uses_pointer(node: Any) -> tuple | None:
    """A `#` or leading-dot pointer outside a predicate argument (expr-lang does not parse one there)."""
    if not isinstance(node, tuple) or not node or not isinstance(node[0], str):
        return None
    if node[0] == "pointer":
        return node
    if node[0] == "call" and node[2] in PREDICATES:
        for index, arg in enumerate(node[3]):
            if index != 1:
                found = _uses_pointer(arg)
                if found:
                    return found
        return None
    for child in node[2:]:
        if isinstance(child, tuple):
            items = child if child and isinstance(child[0], tuple) else (child,)
            for item in items:
                found = _uses_pointer(item)
                if found:
                    return found
    return None


_MAP_KEYS = re.compile(r"\b(world|slots|event|args|menu|result)\.[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_STRINGS = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_PLAIN_INTS = re.compile(r"\b[1-9][0-9]{0,17}\b(?!\.)")


@lru_cache(maxsize=16384)
def compile_error(source: str, want_bool: bool) -> str | None:
    """kitsoki's verdict on compiling `source` (CompileBool when want_bool): None, or its message.

    Which map of the Env a program reads and which key, what a plain string literal says or which
    non-zero integer it names never changes the verdict, so programs that differ only there (a story's
    guards folded under three import prefixes) are checked once."""
    shape = _MAP_KEYS.sub("world.k", source)
    if not any(mark in shape for mark in ("\\", "`", "//", "/*", "matches")):
        shape = _PLAIN_STRINGS.sub('""', shape)
        if "%" not in shape:
            shape = _PLAIN_INTS.sub("1", shape)
    if shape != source and _compile_error(shape, want_bool) is None:
        return None
    return _compile_error(source, want_bool)


@lru_cache(maxsize=16384)
def _compile_error(source: str, want_bool: bool) -> str | None:
    quoted = json.dumps(source, ensure_ascii=False)
    try:
        tree = parse(source)
    except ExprSyntaxError as exc:
        return f"expr compile {quoted}: {exc}"
    pointer = _uses_pointer(tree)
    if pointer is not None:
        char = "#" if pointer[2] or pointer[3] == "#" else "."
        return f"expr compile {quoted}: unexpected token Operator({json.dumps(char)}) ({pointer[1][0]}:{pointer[1][1]})"
    try:
        result = _Checker().visit(tree)
    except _TypeError as exc:
        return f"expr compile {quoted}: {exc.message} ({exc.at[0]}:{exc.at[1]})"
    except RecursionError:
        return f"expr compile {quoted}: expression nests too deeply"
    if want_bool:
        problem = _guard_problem(result)
        if problem:
            return f"expr compile {quoted}: {problem}"
    calls, roots = _violations(tree)
    if calls or roots:
        return f"expr whitelist violation in {quoted}: {'; '.join(calls + roots)}"
    return None
