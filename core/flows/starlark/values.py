"""Starlark values as go.starlark.net (kitsoki's interpreter) defines them.

Python carries the scalars (None, bool, int, float, str) and tuples; lists and dicts are wrapped
(`List`, `Dict`) for what Starlark adds: freezing, the iteration guard, `True != 1`. Strings are
Python `str`, but Starlark's are UTF-8 bytes: lengths, indexes and slices count bytes
(`byte_len`, byte offsets), and an operation whose byte result Python cannot say exactly
declines. Two kinds of error: `Fail` (a message kitsoki's interpreter words exactly: `fail()`,
host errors) and `EvalError` (any other runtime error, whose Go wording the runner does not
claim: the flow is declined rather than judged on it).
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any, Callable


class EvalError(Exception):
    """A Starlark runtime error whose exact text kitsoki's interpreter may word differently."""


class Fail(Exception):
    """A Starlark error whose text is exactly kitsoki's (fail(), ctx errors)."""


class Unsure(Exception):
    """A construct the interpreter does not claim to evaluate as go.starlark.net does."""


class List:
    __slots__ = ("items", "frozen", "iterating")

    def __init__(self, items: list | None = None) -> None:
        self.items = list(items or [])
        self.frozen = False
        self.iterating = 0

    def check_mutable(self, what: str) -> None:
        if self.frozen:
            raise EvalError(f"cannot {what} frozen list")
        if self.iterating:
            raise EvalError(f"cannot {what} list during iteration")


class Dict:
    """Insertion-ordered, keyed by `hash_key` so that True and 1 stay apart (as in Starlark)."""

    __slots__ = ("table", "frozen", "iterating")

    def __init__(self) -> None:
        self.table: dict[Any, tuple[Any, Any]] = {}
        self.frozen = False
        self.iterating = 0

    def check_mutable(self, what: str) -> None:
        if self.frozen:
            raise EvalError(f"cannot {what} frozen hash table")
        if self.iterating:
            raise EvalError(f"cannot {what} hash table during iteration")

    def get(self, key: Any) -> tuple[bool, Any]:
        entry = self.table.get(hash_key(key))
        return (False, None) if entry is None else (True, entry[1])

    def set(self, key: Any, value: Any) -> None:
        self.check_mutable("insert into")
        k = hash_key(key)
        if k in self.table:
            self.table[k] = (self.table[k][0], value)
        else:
            self.table[k] = (key, value)

    def keys(self) -> list:
        return [key for key, _ in self.table.values()]

    def items(self) -> list[tuple[Any, Any]]:
        return list(self.table.values())


class Function:
    __slots__ = ("name", "node", "defaults", "closure", "module")

    def __init__(self, name: str, node: Any, defaults: list, closure: Any, module: Any) -> None:
        self.name, self.node, self.defaults, self.closure, self.module = name, node, defaults, closure, module


class Builtin:
    __slots__ = ("name", "fn", "recv")

    def __init__(self, name: str, fn: Callable, recv: Any = None) -> None:
        self.name, self.fn, self.recv = name, fn, recv


class Object:
    """A host value with attributes (kitsoki's ctx, ctx.world, ctx.http, an http response)."""

    type_name = "object"

    def attr(self, name: str) -> Any:
        raise EvalError(f"{self.type_name} has no .{name} field or method")

    def attr_names(self) -> list[str]:
        return []

    def truth(self) -> bool:
        return True

    def text(self) -> str:
        return self.type_name


class Struct(Object):
    """starlarkstruct.Struct: fixed attributes."""

    type_name = "struct"

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def attr(self, name: str) -> Any:
        if name in self.fields:
            return self.fields[name]
        raise EvalError(f"struct has no .{name} attribute")

    def attr_names(self) -> list[str]:
        return sorted(self.fields)

    def text(self) -> str:
        raise Unsure("printing a struct")


class Range:
    __slots__ = ("start", "stop", "step")

    def __init__(self, start: int, stop: int, step: int) -> None:
        self.start, self.stop, self.step = start, stop, step

    def values(self) -> range:
        return range(self.start, self.stop, self.step)


_BOOL = object()


def hash_key(value: Any) -> Any:
    """The dict key of a Starlark value; unhashable values are an error."""
    if isinstance(value, bool):
        return (_BOOL, value)
    if value is None or isinstance(value, (int, float, str)):
        if isinstance(value, float) and math.isnan(value):
            raise Unsure("a NaN dict key")
        return value
    if isinstance(value, tuple):
        return tuple(hash_key(item) for item in value)
    raise EvalError(f"unhashable type: {type_name(value)}")


def type_name(value: Any) -> str:
    if value is None:
        return "NoneType"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, List):
        return "list"
    if isinstance(value, tuple):
        return "tuple"
    if isinstance(value, Dict):
        return "dict"
    if isinstance(value, Function):
        return "function"
    if isinstance(value, Builtin):
        return "builtin_function_or_method"
    if isinstance(value, Range):
        return "range"
    if isinstance(value, Object):
        return value.type_name
    raise Unsure(f"a value of Python type {type(value).__name__}")


def truth(value: Any) -> bool:
    if isinstance(value, (List,)):
        return bool(value.items)
    if isinstance(value, Dict):
        return bool(value.table)
    if isinstance(value, Range):
        return len(value.values()) > 0
    if isinstance(value, Object):
        return value.truth()
    if isinstance(value, (Function, Builtin)):
        return True
    return bool(value)


# --- strings as UTF-8 bytes ---------------------------------------------------------------------


def byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def from_bytes(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unsure("a string slice that cuts a UTF-8 sequence") from None


def byte_index(text: str, index: int) -> str:
    if text.isascii():
        return text[index]
    return from_bytes(text.encode("utf-8")[index:index + 1])


def byte_offset(text: str, char_offset: int) -> int:
    return char_offset if text.isascii() else len(text[:char_offset].encode("utf-8"))


def char_offset(text: str, byte_offset_: int) -> int:
    if text.isascii():
        return byte_offset_
    return len(from_bytes(text.encode("utf-8")[:byte_offset_]))


# --- str() and repr() -------------------------------------------------------------------------


def _printable(char: str) -> bool:
    """Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols, and the ASCII space."""
    if char == " ":
        return True
    return unicodedata.category(char)[0] in "LMNPS"


def quote(text: str) -> str:
    """syntax.Quote: Starlark's repr of a string (double quotes, Go escapes)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif _printable(char):
            out.append(char)
        elif char in "\a\b\f\n\r\t\v":
            out.append({"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t",
                        "\v": r"\v"}[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def float_text(value: float, conv: str = "g") -> str:
    """Float.format: %g is Go's shortest repr, always with a '.' or an exponent."""
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "nan"
    if conv == "g":
        from core.flows.values import go_float

        text = go_float(value) if value != 0 else ("-0" if math.copysign(1, value) < 0 else "0")
        if "e" not in text and "." not in text:
            text += ".0"
        return text
    if conv in "fF":
        return f"{value:.6f}"
    if conv in "eE":
        mantissa, exponent = f"{value:.6e}".split("e")
        sign, digits = exponent[0], exponent[1:].lstrip("0")
        return f"{mantissa}{'e' if conv == 'e' else 'E'}{sign}{digits.zfill(2)}"
    raise Unsure(f"%{conv} of a float")


def to_str(value: Any) -> str:
    """str(x): a string is itself; everything else is its repr."""
    return value if isinstance(value, str) else to_repr(value)


def to_repr(value: Any, seen: tuple = ()) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, List):
        if value in seen:
            return "[...]"
        return "[" + ", ".join(to_repr(item, seen + (value,)) for item in value.items) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(to_repr(item, seen) for item in value)
        return "(" + inner + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, Dict):
        if value in seen:
            return "{...}"
        return "{" + ", ".join(f"{to_repr(k, seen)}: {to_repr(v, seen + (value,))}" for k, v in value.items()) + "}"
    if isinstance(value, Function):
        return f"<function {value.name}>"
    if isinstance(value, Builtin):
        if value.recv is not None:
            return f"<built-in method {value.name} of {type_name(value.recv)} value>"
        return f"<built-in function {value.name}>"
    if isinstance(value, Range):
        if value.step == 1:
            return f"range({value.start}, {value.stop})"
        return f"range({value.start}, {value.stop}, {value.step})"
    if isinstance(value, Object):
        return value.text()
    raise Unsure(f"printing a {type(value).__name__}")


def freeze(value: Any) -> None:
    if isinstance(value, List):
        if not value.frozen:
            value.frozen = True
            for item in value.items:
                freeze(item)
    elif isinstance(value, Dict):
        if not value.frozen:
            value.frozen = True
            for key, item in value.items():
                freeze(key)
                freeze(item)
    elif isinstance(value, tuple):
        for item in value:
            freeze(item)
    elif isinstance(value, Function):
        for item in value.defaults:
            freeze(item)
