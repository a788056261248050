"""The `json` and `math` modules kitsoki's sandbox predeclares (go.starlark.net lib/json, lib/math)."""

from __future__ import annotations

import json
import math
from typing import Any

from core.flows.starlark import ops
from core.flows.starlark.library import _declined, _string
from core.flows.starlark.values import Builtin, Dict, EvalError, List, Object, Range, Unsure, float_text, type_name


class ModuleValue(Object):
    type_name = "module"

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        self.name, self.members = name, members

    def attr(self, name: str) -> Any:
        if name in self.members:
            return self.members[name]
        raise EvalError(f"module has no .{name} field or method")

    def attr_names(self) -> list[str]:
        return sorted(self.members)

    def text(self) -> str:
        return f'<module "{self.name}">'


def _json_quote(text: str) -> str:
    if all(" " <= c <= "~" for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if any(c in "<>&\u2028\u2029\x7f" or (c < " " and c not in "\n\r\t") for c in text):
        raise Unsure("json.encode of a string Go's encoding/json escapes specially")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


def _json_encode(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if ops.is_int(value):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            raise EvalError(f"cannot encode non-finite float {float_text(value)}")
        return float_text(value)
    if isinstance(value, str):
        return _json_quote(value)
    if isinstance(value, Dict):
        items = value.items()
        for key, _ in items:
            if not isinstance(key, str):
                raise EvalError(f"dict has {type_name(key)} key, want string")
        items.sort(key=lambda item: item[0].encode("utf-8"))
        return "{" + ",".join(f"{_json_quote(k)}:{_json_encode(v)}" for k, v in items) + "}"
    if isinstance(value, (List, tuple, Range)):
        return "[" + ",".join(_json_encode(item) for item in ops.elements(value)) + "]"
    raise Unsure(f"json.encode of a {type_name(value)}")


def _json_encode_builtin(args: list, kwargs: list) -> str:
    if kwargs or len(args) != 1:
        raise EvalError("encode: got wrong arguments")
    return _json_encode(args[0])


def _to_starlark(value: Any) -> Any:
    if isinstance(value, dict):
        out = Dict()
        for key, item in value.items():
            out.set(key, _to_starlark(item))
        return out
    if isinstance(value, list):
        return List([_to_starlark(item) for item in value])
    return value


def _reject_constant(name: str) -> Any:
    raise Unsure(f"json.decode of {name}")


def _json_decode(args: list, kwargs: list) -> Any:
    if kwargs or len(args) != 1:
        raise Unsure("json.decode with a default")
    text = _string("decode", args[0], "x")
    try:
        return _to_starlark(json.loads(text, parse_constant=_reject_constant))
    except (ValueError, RecursionError):
        raise Unsure("json.decode of text Go's decoder words its error for") from None


JSON = ModuleValue("json", {"encode": Builtin("encode", _json_encode_builtin),
                            "decode": Builtin("decode", _json_decode),
                            "indent": Builtin("indent", _declined("json.indent")),
                            "encode_indent": Builtin("encode_indent", _declined("json.encode_indent"))})


def _number(name: str, value: Any) -> float:
    if ops.is_int(value) or isinstance(value, float):
        return float(value)
    raise EvalError(f"{name}: got {type_name(value)}, want float or int")


def _unary(name: str, fn) -> Builtin:
    def call(args: list, kwargs: list) -> float:
        if kwargs or len(args) != 1:
            raise EvalError(f"{name}: got {len(args)} arguments, want 1")
        try:
            return fn(_number(name, args[0]))
        except (ValueError, OverflowError):
            raise Unsure(f"math.{name} outside its domain") from None
    return Builtin(name, call)


def _rounding(name: str, fn) -> Builtin:
    def call(args: list, kwargs: list) -> int:
        if kwargs or len(args) != 1:
            raise EvalError(f"{name}: got {len(args)} arguments, want 1")
        value = args[0]
        if ops.is_int(value):
            return value
        if isinstance(value, float):
            if math.isinf(value) or math.isnan(value):
                raise EvalError(f"cannot convert float {'NaN' if math.isnan(value) else 'infinity'} to integer")
            return int(fn(value))
        raise EvalError(f"got {type_name(value)}, want float or int")
    return Builtin(name, call)


def _go_round(value: float) -> float:
    """Go's math.Round: half away from zero."""
    return math.copysign(math.floor(abs(value) + 0.5), value) if math.isfinite(value) else value


MATH = ModuleValue("math", {
    "floor": _rounding("floor", math.floor), "ceil": _rounding("ceil", math.ceil),
    "fabs": _unary("fabs", abs), "round": _unary("round", _go_round), "sqrt": _unary("sqrt", math.sqrt),
    "exp": _unary("exp", math.exp), "pi": math.pi, "e": math.e,
    "pow": Builtin("pow", _declined("math.pow")), "log": Builtin("log", _declined("math.log")),
})
