"""Go-compatible rendering and comparison of decoded YAML/JSON values.

kitsoki prints values in failure messages with Go's `%v`, `%q` and `%T`, and compares expected
against actual by marshalling both to JSON (`deepEqualValues`). The runner's messages must be
the same bytes, so these helpers are shared by every box of the runner.
"""

from __future__ import annotations

import copy
import json
import math
from decimal import Decimal
from typing import Any


def go_quote(text: str) -> str:
    """Go's %q for ordinary strings."""
    return json.dumps(text, ensure_ascii=False)


def go_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    digits = Decimal(repr(value))
    exponent = digits.adjusted()
    if -4 <= exponent < 6:  # %v is %g with the shortest digits: e-notation below 1e-4 and from 1e6 on
        text = format(digits, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa = format(digits.scaleb(-exponent), "f").rstrip("0").rstrip(".")
    return f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"


def go_value(value: Any) -> str:
    """Go's %v of a decoded YAML/JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_value(value[key])}" for key in sorted(value, key=str)) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_value(item) for item in value) + "]"
    return str(value)


class GoInt(int):
    """An integer computed at run time, carrying the Go type kitsoki's code gives it
    (`increment` yields int64, expr-lang arithmetic int); a plain int is a decoded YAML one."""

    go: str = "int"

    def __new__(cls, value: int, go: str = "int") -> GoInt:
        made = super().__new__(cls, value)
        made.go = go
        return made

    def __reduce__(self):  # deepcopy and pickle keep the Go type
        return (GoInt, (int(self), self.go))


_SHARED = (str, int, float, bool, type(None), GoInt)


_SHARED_TYPES = frozenset(_SHARED)


def copy_value(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """copy.deepcopy for decoded YAML/JSON values (the world, slots), several times faster: dicts and
    lists are copied by hand, a container seen twice is copied once (as deepcopy does), immutable
    scalars are shared, and anything else goes through copy.deepcopy with the same memo."""
    if type(value) in _SHARED_TYPES:
        return value
    return _copy(value, {} if memo is None else memo)


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    found = memo.get(id(value), _NOT_COPIED)
    if found is not _NOT_COPIED:
        return found
    kind, shared = type(value), _SHARED_TYPES  # the world is copied several times a turn: locals, no call per leaf
    if kind is dict:
        out: Any = {}
        memo[id(value)] = out
        for key, item in value.items():
            out[key if type(key) in shared else copy.deepcopy(key, memo)] = \
                item if type(item) in shared else _copy(item, memo)
        return out
    if kind is list:
        out = []
        memo[id(value)] = out
        append = out.append
        for item in value:
            append(item if type(item) in shared else _copy(item, memo))
        return out
    return copy.deepcopy(value, memo)


_NOT_COPIED = object()


def go_type(value: Any) -> str:
    """Go's %T of a value: Go's YAML decoder gives uint64 for a non-negative integer and int64 for
    a negative one; computed integers say their own type (GoInt)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, GoInt):
        return value.go
    if isinstance(value, int):
        return "uint64" if value >= 0 else "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, (list, tuple)):
        return "[]interface {}"
    return type(value).__name__


def json_normal(value: Any) -> Any:
    """The value as JSON would carry it (whole floats become ints, keys strings)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 1e21 else value
    if isinstance(value, dict):
        return {str(key): json_normal(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_normal(item) for item in value]
    return str(value)


def deep_equal(a: Any, b: Any) -> bool:
    """kitsoki's deepEqualValues: equal when both marshal to the same JSON (so 1 == 1.0)."""
    return json.dumps(json_normal(a), sort_keys=True) == json.dumps(json_normal(b), sort_keys=True)


def go_json(value: Any) -> str:
    """encoding/json.Marshal of a value (sorted keys, no spaces, HTML-safe escapes off)."""
    return json.dumps(json_normal(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
