"""The syntax of kitsoki's expression language: expr-lang (github.com/expr-lang/expr v1.17), one grammar.

One lark LALR grammar, built on first use, parses a `when:` guard or a `{{ }}` interpolation into a
located tree of plain tuples `(kind, (line, column), ...)`. It covers expr-lang's syntax, not only what
the flow runner evaluates: the loader must refuse exactly the programs kitsoki refuses, so a program
that parses in expr-lang parses here too (pipes, slices, `..`, `?:`, `if {} else {}`, `let`, map
literals, predicates, comments), and what kitsoki forbids is judged afterwards (core.expr.check).
Operator precedence and associativity are expr-lang's (parser/operator): `??` binds tightest, `!` and
`not` take a multiplicative operand (`!a * b` is `!(a * b)`), `-` a power operand, `a < b < c` is
`a < b && b < c`, `**` is right-associative. A parenthesized expression keeps a `paren` node, since
expr-lang tells `(a ?? b) > c` from `a ?? b > c`.

A syntax error is `ExprSyntaxError`, worded as expr-lang words it (`unexpected token Operator(":")
(1:16)`), its line and column inside the expression.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOTS = frozenset({"slots", "world", "event", "run", "args", "menu", "item", "proposal", "inbox",
                   "workspace", "result"})
"""kitsoki's allowedRoots (internal/expr): a member chain must start at one of these."""
ALLOWED_BUILTINS = frozenset({"len", "trim", "upper", "lower", "split", "join", "hasPrefix", "hasSuffix", "now",
                              "int", "float", "string", "abs", "round", "type", "get", "keys", "min", "max"})
"""kitsoki's allowedBuiltins: every other expr-lang builtin is refused at load."""
ALLOWED_FUNCTIONS = frozenset({"available", "blocked", "blocked_reason", "intent_status"})
"""The view helpers kitsoki binds on its Env (the only user functions it admits)."""
PREDICATES = {"all": 1, "none": 1, "any": 1, "one": 1, "filter": 1, "map": 1, "count": 1, "sum": 1, "find": 1,
              "findIndex": 1, "findLast": 1, "findLastIndex": 1, "groupBy": 1, "sortBy": 1, "reduce": 1}
"""expr-lang's builtins whose second argument is a predicate (a closure over `#`)."""
EXPR_LANG_BUILTINS = frozenset({
    *ALLOWED_BUILTINS, *PREDICATES, "toJSON", "fromJSON", "toBase64", "fromBase64", "toPairs", "fromPairs",
    "repeat", "indexOf", "lastIndexOf", "trimPrefix", "trimSuffix", "ceil", "floor", "mean", "median", "bitand",
    "bitor", "bitxor", "bitnand", "bitnot", "bitshl", "bitshr", "bitushr", "duration", "date", "timezone",
    "first", "last", "take", "values", "reverse", "uniq", "concat", "flatten", "sort", "splitAfter", "replace"})
"""Names expr-lang parses as builtins (builtin.Index): a call to any other name is a user function."""

GRAMMAR = r"""
?start: seq
?seq: top
    | top (SEMI top)+ SEMI?                        -> seq
    | top SEMI                                     -> seq
?top: ternary
    | LET NAME "=" top SEMI seq                    -> let
    | if_expr
if_expr: IF top LBRACE seq RBRACE ELSE (if_expr | LBRACE seq RBRACE)
?ternary: pipe
        | pipe QMARK top COLON top                 -> cond
        | pipe QMARK COLON top                     -> elvis
?pipe: or_expr
     | pipe PIPE NAME LPAR [args] RPAR             -> pipe
     | pipe binop or_expr                          -> after_pipe
!binop: OR | AND | CMP | IN | STRINGOP | ADDOP | MULOP | POWOP | COALESCE | RANGE
?or_expr: and_expr
        | or_expr OR and_expr                      -> binary
?and_expr: cmp
         | and_expr AND cmp                        -> binary
?cmp: range_expr
    | cmp CMP range_expr                           -> binary
    | cmp IN range_expr                            -> binary
    | cmp STRINGOP range_expr                      -> binary
    | cmp NOT IN range_expr                        -> not_binary
    | cmp NOT STRINGOP range_expr                  -> not_binary
?range_expr: add
           | add RANGE add                         -> binary
?add: mul
    | add ADDOP mul                                -> binary
?mul: unary
    | mul MULOP unary                              -> binary
?unary: pow
      | prefixed
?prefixed: BANG mul                                -> unary
         | NOT mul                                 -> unary
         | ADDOP pow                               -> unary
?pow: coalesce
    | coalesce POWOP unary                         -> binary
?coalesce: postfix
         | coalesce COALESCE postfix               -> binary
         | coalesce COALESCE prefixed              -> binary
?postfix: atom
        | postfix DOT prop                         -> member
        | postfix OPTDOT prop                      -> opt_member
        | postfix DOT prop LPAR [args] RPAR        -> method
        | postfix OPTDOT prop LPAR [args] RPAR     -> method
        | postfix LSQB top RSQB                    -> index
        | postfix OPTDOT LSQB top RSQB             -> opt_index
        | postfix LSQB [top] COLON [top] RSQB      -> slice
        | NAME LPAR [args] RPAR                    -> call
args: top ("," top)* ","?
!prop: NAME | OR | AND | IN | NOT | STRINGOP | LET | IF | ELSE | TRUE | FALSE | NIL
?atom: NUMBER                                      -> number
     | STRING                                      -> string
     | BYTES                                       -> bytes
     | TRUE                                        -> true
     | FALSE                                       -> false
     | NIL                                         -> nil
     | NAME                                        -> name
     | POINTER                                     -> pointer
     | DOT prop                                    -> pointer_member
     | LPAR seq RPAR                               -> paren
     | LSQB [top ("," top)* ","?] RSQB             -> array
     | LBRACE [pair ("," pair)* ","?] RBRACE       -> map
pair: (NAME | STRING | NUMBER) COLON top
    | LPAR top RPAR COLON top

SEMI: ";"
LET.2: /let(?![\w$])/
IF.2: /if(?![\w$])/
ELSE.2: /else(?![\w$])/
QMARK: "?"
COLON: ":"
PIPE: "|"
OR.2: /\|\||or(?![\w$])/
AND.2: /&&|and(?![\w$])/
BANG: "!"
NOT.2: /not(?![\w$])/
IN.2: /in(?![\w$])/
TRUE.2: /true(?![\w$])/
FALSE.2: /false(?![\w$])/
NIL.2: /nil(?![\w$])/
CMP: "==" | "!=" | "<=" | ">=" | "<" | ">"
STRINGOP.2: /(?:contains|startsWith|endsWith|matches)(?![\w$])/
RANGE: ".."
ADDOP: "+" | "-"
MULOP: "*" | "/" | "%"
POWOP: "**" | "^"
COALESCE: "??"
DOT: "."
OPTDOT: "?."
LPAR: "("
RPAR: ")"
LSQB: "["
RSQB: "]"
LBRACE: "{"
RBRACE: "}"
POINTER: /#[^\W\d]?[\w$]*/
NAME: /(?:[^\W\d]|\$)[\w$]*/
NUMBER: /(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(\d[\d_]*)?\.\d[\d_]*([eE][+-]?[\d_]+)?|\d[\d_]*([eE][+-]?[\d_]+)?)[\w$]*/
STRING: /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/
BYTES: /[bB](?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')/
%import common.WS
%ignore WS
%ignore /\/\/[^\n]*/
%ignore /\/\*(?:.|\n)*?\*\//
"""


class ExprSyntaxError(ValueError):
    """expr-lang would not parse this program: `reason` in its words, at `line`:`column` of the source."""

    def __init__(self, reason: str, line: int = 0, column: int = 0) -> None:
        super().__init__(f"{reason} ({line}:{column})" if line else reason)
        self.reason, self.line, self.column = reason, line, column


ORDERING = frozenset({"<", ">", "<=", ">="})
_COMPARISONS = frozenset({"==", "!=", "in", "matches", "contains", "startsWith", "endsWith"})
PRECEDENCE = {"|": 0, "or": 10, "||": 10, "and": 15, "&&": 15, **{op: 20 for op in ORDERING | _COMPARISONS},
              "..": 25, "+": 30, "-": 30, "*": 60, "/": 60, "%": 60, "**": 100, "^": 100, "??": 500}
"""expr-lang's binary operators (parser/operator)."""
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'",
            '"': '"'}
_HEX = {"x": 2, "u": 4, "U": 8}
_MAX_INT = 2**63 - 1


def unquote(text: str, at: tuple[int, int]) -> str:
    """A string literal's value by Go's unescape rules (what expr-lang's lexer accepts)."""
    if text[0] == "`":
        return text[1:-1]
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in _HEX:
            digits = body[i + 2:i + 2 + _HEX[nxt]]
            if len(digits) != _HEX[nxt] or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ExprSyntaxError("invalid char escape", *at)
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code < 0xE000:
                raise ExprSyntaxError("invalid char escape", *at)
            out.append(chr(code))
            i += 2 + _HEX[nxt]
        elif nxt in "01234567":
            digits = body[i + 1:i + 4]
            if len(digits) != 3 or any(c not in "01234567" for c in digits) or int(digits, 8) > 255:
                raise ExprSyntaxError("invalid char escape", *at)
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            raise ExprSyntaxError("invalid char escape", *at)
    return "".join(out)


_NUMBER = re.compile(r"0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(\d[\d_]*)?\.\d[\d_]*([eE][+-]?[\d_]+)?|"
                     r"\d[\d_]*([eE][+-]?[\d_]+)?")
_OPERATOR_WORDS = frozenset({"or", "and", "in", "not", "matches", "contains", "startsWith", "endsWith", "let", "if",
                             "else"})


def _identifier(token: Any) -> str:
    """A name where an operand goes; expr-lang's lexer makes its operator words operators there."""
    text = str(token)
    if text in _OPERATOR_WORDS:
        raise ExprSyntaxError(f"unexpected token Operator({_go_quote(text)})", *_pos(token))
    return text


def _pos(token: Any) -> tuple[int, int]:
    return (token.line, token.column)


def _node_pos(node: Any) -> tuple[int, int]:
    return node[1]


class _Build:
    """Callbacks run by the LALR parser as it reduces (no parse tree is built): located tuples."""

    # lark calls these with the rule's children (named terminals kept); each returns a node.
    def number(self, c):
        token = c[0]
        good = _NUMBER.match(str(token))
        if good.end() < len(str(token)):  # a letter right after the digits (expr-lang's scanNumber)
            word = str(token)[:good.end() + 1]
            raise ExprSyntaxError(f"bad number syntax: {_go_quote(word)}", token.line, token.column + len(word) - 1)
        text = str(token).replace("_", "")
        lower = text.lower()
        if lower.startswith(("0x", "0o", "0b")):
            value = int(text, 0)
        elif "." in lower or ("e" in lower):
            try:
                value = float(text)
            except ValueError:
                raise ExprSyntaxError(f"invalid float literal: strconv.ParseFloat: parsing {_go_quote(text)}: "
                                      "invalid syntax", *_pos(token)) from None
            return ("lit", _pos(token), value, "float")
        else:
            value = int(text, 10)
        if value > _MAX_INT:
            raise ExprSyntaxError("integer literal is too large", *_pos(token))
        return ("lit", _pos(token), value, "int")

    def string(self, c):
        return ("lit", _pos(c[0]), unquote(str(c[0]), _pos(c[0])), "string")

    def bytes(self, c):
        return ("lit", _pos(c[0]), unquote(str(c[0])[1:], _pos(c[0])), "bytes")

    def true(self, c):
        return ("lit", _pos(c[0]), True, "bool")

    def false(self, c):
        return ("lit", _pos(c[0]), False, "bool")

    def nil(self, c):
        return ("lit", _pos(c[0]), None, "nil")

    def name(self, c):
        return ("ident", _pos(c[0]), _identifier(c[0]))

    def pointer(self, c):
        return ("pointer", _pos(c[0]), str(c[0])[1:], "#")

    def pointer_member(self, c):
        prop = c[1]
        return ("member", _pos(prop), ("pointer", _pos(c[0]), "", "."), ("lit", _pos(prop), str(prop), "string"),
                False)

    def prop(self, c):
        return c[0]

    def paren(self, c):
        return ("paren", _pos(c[0]), c[1])

    def array(self, c):
        return ("array", _pos(c[0]), tuple(x for x in c[1:] if isinstance(x, tuple)))

    def pair(self, c):
        if len(c) == 3:
            key = c[0]
            value = str(key) if key.type != "STRING" else unquote(str(key), _pos(key))
            return ("pair", _pos(key), ("lit", _pos(key), value, "string"), c[2])
        return ("pair", _pos(c[0]), c[1], c[4])

    def map(self, c):
        return ("map", _pos(c[0]), tuple(x for x in c[1:] if isinstance(x, tuple)))

    def args(self, c):
        return ("args", tuple(x for x in c if isinstance(x, tuple)))

    def _args(self, c, start):
        return next((x[1] for x in c[start:] if isinstance(x, tuple) and x[0] == "args"), ())

    def call(self, c):
        return ("call", _pos(c[0]), _identifier(c[0]), self._args(c, 2))

    def pipe(self, c):
        return ("call", _pos(c[2]), str(c[2]), (c[0], *self._args(c, 4)))

    def after_pipe(self, c):
        """`x | f() op rest`: expr-lang keeps the piped call as the left operand of whatever follows, at
        each operator's own precedence; the grammar parsed `rest` whole, so it is re-associated here."""
        return self._reassociate(c[0], c[1].children[0], c[2])

    def _reassociate(self, left, token, right):
        op = str(token)
        if right[0] == "binary" and len(right) == 5 and right[2] not in ORDERING | {"&&"} | _COMPARISONS \
                and (PRECEDENCE[right[2]] < PRECEDENCE[op] or (PRECEDENCE[right[2]] == PRECEDENCE[op]
                                                               and op not in ("**", "^"))):
            inner = self._reassociate(left, token, right[3])
            return ("binary", right[1], right[2], inner, right[4])
        if right[0] == "binary" and right[2] == "&&" and op not in ("||", "or", "&&", "and") and \
                len(right) == 5 and PRECEDENCE["&&"] < PRECEDENCE[op]:
            inner = self._reassociate(left, token, right[3])
            return ("binary", right[1], "&&", inner, right[4])
        if right[0] == "binary" and right[2] in ORDERING | _COMPARISONS and PRECEDENCE[op] > 20:
            inner = self._reassociate(left, token, right[3])
            return ("binary", right[1], right[2], inner, right[4])
        return self._binary(left, token, right)

    def member(self, c):
        prop = c[2]
        return ("member", _pos(prop), c[0], ("lit", _pos(prop), str(prop), "string"), False)

    def opt_member(self, c):
        prop = c[2]
        return ("member", _pos(prop), c[0], ("lit", _pos(prop), str(prop), "string"), True)

    def method(self, c):
        prop = c[2]
        callee = ("member", _pos(prop), c[0], ("lit", _pos(prop), str(prop), "string"), c[1].type == "OPTDOT")
        return ("method", _pos(prop), callee, self._args(c, 4))

    def index(self, c):
        return ("member", _pos(c[1]), c[0], c[2], False)

    def opt_index(self, c):
        return ("member", _pos(c[2]), c[0], c[3], True)

    def slice(self, c):
        parts = c[2:-1]
        colon = next(i for i, x in enumerate(parts) if not isinstance(x, tuple))
        low = parts[0] if colon == 1 else None
        high = parts[colon + 1] if colon + 1 < len(parts) else None
        return ("slice", _pos(c[1]), c[0], low, high)

    def unary(self, c):
        op = str(c[0])
        return ("unary", _pos(c[0]), "not" if op == "not" else op, c[1])

    def binary(self, c):
        return self._binary(c[0], c[1], c[2])

    def not_binary(self, c):
        inner = self._binary(c[0], c[2], c[3])
        return ("unary", _pos(c[1]), "not", inner)

    def _binary(self, left, token, right):
        op, at = str(token), _pos(token)
        if op != "??" and left[0] == "binary" and left[2] == "??":
            raise ExprSyntaxError(f"Operator ({op}) and coalesce expressions (??) cannot be mixed. Wrap either by "
                                  "parentheses.", *at)
        if op in ORDERING and left[0] == "binary" and left[2] in ORDERING:
            # expr-lang's parseComparison: `a < b < c` is `a < b && b < c`
            return ("binary", at, "&&", left, ("binary", at, op, left[4], right))
        return ("binary", at, op, left, right)

    def cond(self, c):
        return ("cond", _pos(c[1]), c[0], c[2], c[4])

    def elvis(self, c):
        return ("cond", _pos(c[1]), c[0], c[0], c[3])

    def if_expr(self, c):
        nodes = [x for x in c if isinstance(x, tuple)]
        return ("cond", _pos(c[0]), nodes[0], nodes[1], nodes[2])

    def let(self, c):
        return ("let", _pos(c[1]), str(c[1]), c[2], c[4])

    def seq(self, c):
        items = tuple(x for x in c if isinstance(x, tuple))
        return items[0] if len(items) == 1 else ("seq", _node_pos(items[0]), items)


_PARSER: Any = None
_OPTIONS = {"parser": "lalr", "lexer": "basic", "maybe_placeholders": False}
"""A context-free lexer, as expr-lang's: its operator words are operators wherever they stand."""
TABLES_FILE = Path(__file__).with_name("grammar_tables.json")
"""The parse tables lark computes from GRAMMAR, generated beside this module as JSON (`python -m
core.expr.syntax` writes them; tests/test_expr.py fails when they are stale): loading them takes a tenth of
the time building them does."""


def _grammar_key() -> str:
    import lark

    return hashlib.sha256(f"{lark.__version__}\n{sorted(_OPTIONS.items())}\n{GRAMMAR}".encode()).hexdigest()


def tables_text() -> str:
    """The text of grammar_tables.json for this GRAMMAR and this lark."""
    from lark import Lark
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    data, memo = Lark(GRAMMAR, **_OPTIONS).memo_serialize([TerminalDef, Rule])
    return json.dumps({"key": _grammar_key(), "data": data, "memo": memo}, separators=(",", ":"), sort_keys=True)


def _int_keys(mapping: dict) -> dict:
    """JSON turned the tables' integer keys (states, memo ids) into strings: turn them back."""
    return {int(k): v for k, v in mapping.items()} if mapping and all(k.isdigit() for k in mapping) else mapping


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        from lark import Lark  # imported on first use: a load with no expression never pays for it

        try:
            tables = json.loads(TABLES_FILE.read_text(), object_hook=_int_keys)
            if tables.get("key") == _grammar_key():
                _PARSER = Lark._load_from_dict(tables["data"], tables["memo"], transformer=_Build())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            _PARSER = None
        if _PARSER is None:  # stale or missing tables: build them (slower, the same parser)
            _PARSER = Lark(GRAMMAR, **_OPTIONS, transformer=_Build())
    return _PARSER


_KINDS = {"NAME": "Identifier", "TRUE": "Identifier", "FALSE": "Identifier", "NIL": "Identifier",
          "NUMBER": "Number", "STRING": "String", "BYTES": "Bytes", "LPAR": "Bracket", "RPAR": "Bracket",
          "LSQB": "Bracket", "RSQB": "Bracket", "LBRACE": "Bracket", "RBRACE": "Bracket"}


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _end(source: str) -> tuple[int, int]:
    lines = source.split("\n")
    return (len(lines), len(lines[-1]))


def _syntax_error(source: str, exc: Exception) -> ExprSyntaxError:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    if isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            if source.rstrip().endswith("."):
                return ExprSyntaxError("unexpected end of expression", *_end(source))
            return ExprSyntaxError("unexpected token EOF", *_end(source)) if source.strip() else \
                ExprSyntaxError("unexpected token EOF", *((1, len(source)) if source else (0, 0)))
        before = source[:token.start_pos].rstrip()
        if before.endswith("."):  # expr-lang reads the next token as the property, then says so
            return ExprSyntaxError("expected name", token.line, token.column + len(str(token)))
        kind = _KINDS.get(token.type, "Operator")
        value = str(token)
        if token.type == "STRING":
            value = unquote(value, _pos(token))
        elif token.type == "POINTER":
            value = "#"
        shown = f"{kind}({_go_quote(value)})" if value else kind
        return ExprSyntaxError(f"unexpected token {shown}", *_pos(token))
    if isinstance(exc, UnexpectedCharacters):
        char = source[exc.pos_in_stream] if exc.pos_in_stream < len(source) else ""
        if char in "\"'`":
            line, column = _end(source)
            return ExprSyntaxError("literal not terminated", line, column + 1)
        if char and char in "&=*!<>|,;%+-^:?/.#":
            return ExprSyntaxError(f"unexpected token Operator({_go_quote(char)})", exc.line, exc.column)
        return ExprSyntaxError(f"unrecognized character: U+{ord(char):04X} '{char}'", exc.line, exc.column)
    if isinstance(exc, UnexpectedEOF):
        return ExprSyntaxError("unexpected token EOF", *_end(source))
    return ExprSyntaxError(f"invalid syntax ({type(exc).__name__})")


@lru_cache(maxsize=16384)
def parse(source: str) -> tuple:
    """The located tree of one expr-lang program; ExprSyntaxError where expr-lang's parser stops."""
    from lark.exceptions import LarkError, VisitError

    if not source.strip():
        raise ExprSyntaxError("unexpected token EOF", *((1, len(source)) if source else (0, 0)))
    try:
        return _parser().parse(source)
    except ExprSyntaxError:
        raise
    except VisitError as exc:
        if isinstance(exc.orig_exc, ExprSyntaxError):
            raise exc.orig_exc from None
        raise
    except LarkError as exc:
        raise _syntax_error(source, exc) from None


if __name__ == "__main__":
    TABLES_FILE.write_text(tables_text())
