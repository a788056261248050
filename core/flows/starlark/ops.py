"""Starlark's operators as go.starlark.net evaluates them (eval.go Binary/Unary/Compare, interpolate).

Where Python and Starlark part ways this module follows Starlark: `True != 1`, values of
different types are never equal and cannot be ordered (ints and floats excepted), strings are
not iterable, `/` always divides to a float, `%` formats with Starlark's conversions only.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from core.flows.starlark.values import (
    Dict,
    EvalError,
    List,
    Range,
    Unsure,
    byte_index,
    byte_len,
    from_bytes,
    float_text,
    to_repr,
    truth,
    type_name,
)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return is_int(value) or isinstance(value, float)


def equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if type(a) is not type(b):
        return False
    if a is None or isinstance(a, str):
        return a == b
    if isinstance(a, tuple):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if isinstance(a, List):
        return a is b or (len(a.items) == len(b.items) and all(equal(x, y) for x, y in zip(a.items, b.items)))
    if isinstance(a, Dict):
        if a is b:
            return True
        if len(a.table) != len(b.table):
            return False
        for key, value in a.items():
            found, other = b.get(key)
            if not found or not equal(value, other):
                return False
        return True
    if isinstance(a, Range):
        return list(a.values()) == list(b.values())
    return a is b


def _order(a: Any, b: Any) -> int:
    if is_number(a) and is_number(b):
        if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
            raise Unsure("ordering NaN")
        return (a > b) - (a < b)
    if type(a) is not type(b):
        raise EvalError(f"unsupported comparison {type_name(a)} < {type_name(b)}")
    if isinstance(a, str):
        x, y = a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
        return (x > y) - (x < y)
    if isinstance(a, bool):
        return (a > b) - (a < b)
    if isinstance(a, (tuple, List)):
        xs, ys = (a, b) if isinstance(a, tuple) else (a.items, b.items)
        for x, y in zip(xs, ys):
            if not equal(x, y):
                return _order(x, y)
        return (len(xs) > len(ys)) - (len(xs) < len(ys))
    raise EvalError(f"{type_name(a)} < {type_name(b)} not implemented")


def compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return equal(a, b)
    if op == "!=":
        return not equal(a, b)
    cmp = _order(a, b)
    return {"<": cmp < 0, "<=": cmp <= 0, ">": cmp > 0, ">=": cmp >= 0}[op]


def contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        if not isinstance(item, str):
            raise EvalError(f"'in <string>' requires string as left operand, not {type_name(item)}")
        return item in container
    if isinstance(container, Dict):
        return container.get(item)[0]
    if isinstance(container, (List, tuple)):
        items = container.items if isinstance(container, List) else container
        return any(equal(item, x) for x in items)
    if isinstance(container, Range):
        return is_int(item) and item in container.values()
    raise EvalError(f"unknown binary op: {type_name(item)} in {type_name(container)}")


def iterate(value: Any) -> Iterator[Any]:
    """A for-loop over a value; lists and dicts refuse mutation while it runs."""
    if isinstance(value, List):
        value.iterating += 1
        try:
            yield from list(value.items)
        finally:
            value.iterating -= 1
    elif isinstance(value, Dict):
        value.iterating += 1
        try:
            yield from value.keys()
        finally:
            value.iterating -= 1
    elif isinstance(value, tuple):
        yield from value
    elif isinstance(value, Range):
        yield from value.values()
    else:
        raise EvalError(f"{type_name(value)} value is not iterable")


def elements(value: Any) -> list[Any]:
    """The elements of an iterable (a list, tuple, dict's keys, range)."""
    return list(iterate(value))


def length(value: Any) -> int:
    if isinstance(value, str):
        return byte_len(value)
    if isinstance(value, List):
        return len(value.items)
    if isinstance(value, (tuple,)):
        return len(value)
    if isinstance(value, Dict):
        return len(value.table)
    if isinstance(value, Range):
        return len(value.values())
    raise EvalError(f"len: value of type {type_name(value)} has no len")


def _arith(op: str, a: Any, b: Any) -> Any:
    if op == "/":
        if float(b) == 0.0:
            raise EvalError("floating-point division by zero")
        return float(a) / float(b)
    if is_int(a) and is_int(b):
        if op in ("//", "%") and b == 0:
            raise EvalError("integer division by zero" if op == "//" else "integer modulo by zero")
        if op in ("<<", ">>"):
            return _shift(op, a, b)
        operations = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "//": lambda: a // b,
                      "%": lambda: a % b, "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b}
        if op in operations:
            return operations[op]()
        raise EvalError(f"unknown binary op: int {op} int")
    if op not in ("+", "-", "*", "//", "%"):
        raise EvalError(f"unknown binary op: {type_name(a)} {op} {type_name(b)}")
    x, y = float(a), float(b)
    if op in ("//", "%") and y == 0.0:
        raise EvalError("floating-point division by zero" if op == "//" else "floating-point modulo by zero")
    if op == "//":
        return float(math.floor(x / y))
    if op == "%":
        z = math.fmod(x, y)
        return z + y if z != 0 and (z < 0) != (y < 0) else z
    return {"+": x + y, "-": x - y, "*": x * y}[op]


def _shift(op: str, a: int, b: int) -> int:
    if b < 0:
        raise EvalError(f"negative shift count: {b}")
    if b >= 512:
        raise EvalError(f"shift count too large: {b}")
    return a << b if op == "<<" else a >> b


def binary(op: str, a: Any, b: Any) -> Any:
    if op == "%" and isinstance(a, str):
        return interpolate(a, b)
    if is_number(a) and is_number(b):
        return _arith(op, a, b)
    if op == "+":
        if isinstance(a, str) and isinstance(b, str):
            return a + b
        if isinstance(a, List) and isinstance(b, List):
            return List(a.items + b.items)
        if isinstance(a, tuple) and isinstance(b, tuple):
            return a + b
    if op == "*":
        if is_int(b) and isinstance(a, (str, List, tuple)):
            a, b = b, a
        if is_int(a) and isinstance(b, (str, List, tuple)):
            count = max(0, a)
            if isinstance(b, str):
                return b * count
            if isinstance(b, List):
                return List(b.items * count)
            return b * count
    if op == "|" and isinstance(a, Dict) and isinstance(b, Dict):
        out = Dict()
        for key, value in a.items() + b.items():
            out.set(key, value)
        return out
    if op == "in":
        return contains(b, a)
    if op == "not in":
        return not contains(b, a)
    raise EvalError(f"unknown binary op: {type_name(a)} {op} {type_name(b)}")


def unary(op: str, value: Any) -> Any:
    if op == "not":
        return not truth(value)
    if is_number(value):
        if op == "-":
            return -value
        if op == "+":
            return value
        if op == "~" and is_int(value):
            return ~value
    raise EvalError(f"unknown unary op: {op}{type_name(value)}")


def index(value: Any, key: Any) -> Any:
    if isinstance(value, Dict):
        found, item = value.get(key)
        if not found:
            raise EvalError(f"key {to_repr(key)} not in dict")
        return item
    if isinstance(value, (List, tuple, str, Range)):
        if not is_int(key):
            raise EvalError(f"{type_name(value)} index: got {type_name(key)}, want int")
        size = length(value)
        position = key + size if key < 0 else key
        if not 0 <= position < size:
            raise EvalError(f"index {key} out of range: index {key} out of range [{-size}:{size}]")
        if isinstance(value, str):
            return byte_index(value, position)
        if isinstance(value, List):
            return value.items[position]
        if isinstance(value, Range):
            return value.values()[position]
        return value[position]
    raise EvalError(f"unhandled index operation {type_name(value)}[{type_name(key)}]")


def slice_of(value: Any, start: Any, stop: Any, step: Any) -> Any:
    if not isinstance(value, (List, tuple, str, Range)):
        raise EvalError(f"invalid slice operand {type_name(value)}")
    for part in (start, stop, step):
        if part is not None and not is_int(part):
            raise EvalError(f"invalid slice index: got {type_name(part)}, want int")
    if step == 0:
        raise EvalError("zero is not a valid slice step")
    bounds = slice(start, stop, step)
    if isinstance(value, str):
        return value[bounds] if value.isascii() else from_bytes(value.encode("utf-8")[bounds])
    if isinstance(value, List):
        return List(value.items[bounds])
    if isinstance(value, Range):
        picked = value.values()[bounds]
        return Range(picked.start, picked.stop, picked.step)
    return value[bounds]


def interpolate(template: str, arg: Any) -> str:
    """The `%` operator on a string (eval.go interpolate)."""
    args = list(arg) if isinstance(arg, tuple) else [arg]
    out: list[str] = []
    used = 0
    rest = template
    while True:
        at = rest.find("%")
        if at < 0:
            out.append(rest)
            break
        out.append(rest[:at])
        rest = rest[at + 1:]
        if rest.startswith("%"):
            out.append("%")
            rest = rest[1:]
            continue
        if rest.startswith("("):
            close = rest.find(")")
            if close < 0:
                raise EvalError("incomplete format key")
            if not isinstance(arg, Dict):
                raise EvalError("format requires a mapping")
            found, value = arg.get(rest[1:close])
            if not found:
                raise EvalError(f"key not found: {rest[1:close]}")
            rest = rest[close + 1:]
        else:
            if used >= len(args):
                raise EvalError("not enough arguments for format string")
            value = args[used]
        if not rest:
            raise EvalError("incomplete format")
        conv, rest = rest[0], rest[1:]
        if conv in "sr":
            out.append(value if conv == "s" and isinstance(value, str) else to_repr(value))
        elif conv in "dioxX":
            number = _number_to_int(value, conv)
            out.append({"d": str(number), "i": str(number), "o": format(number, "o"), "x": format(number, "x"),
                        "X": format(number, "X")}[conv])
        elif conv in "efgEFG":
            if isinstance(value, bool) or not (is_int(value) or isinstance(value, float)):
                raise EvalError(f"%{conv} format requires float, not {type_name(value)}")
            if conv in "GF":
                raise Unsure(f"%{conv}")
            out.append(float_text(float(value), conv))
        elif conv == "c":
            if is_int(value) and 0 <= value <= 0x10FFFF:
                out.append(chr(value))
            elif isinstance(value, str) and len(value) == 1:
                out.append(value)
            else:
                raise EvalError("%c format requires int or single-character string")
        else:
            raise EvalError(f"unknown conversion %{conv}")
        used += 1
    if used < len(args) and not isinstance(arg, Dict):
        raise EvalError("too many arguments for format string")
    return "".join(out)


def _number_to_int(value: Any, conv: str) -> int:
    if is_int(value):
        return value
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            raise EvalError(f"%{conv} format requires integer")
        return int(value)  # truncation toward zero (finiteFloatToInt)
    raise EvalError(f"%{conv} format requires integer: cannot convert {type_name(value)} to int")
