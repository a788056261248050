"""A Starlark interpreter that evaluates kitsoki's glue scripts as go.starlark.net does.

kitsoki's `host.starlark.run` runs a story's `.star` script in go.starlark.net with only `json` and
`math` predeclared (internal/host/starlark/run.go). The flow runner evaluates the same scripts here:
the file is held to Starlark's grammar and resolver (interp), values and operators follow the Go
implementation (values, ops), and the built-ins are the Go library's (library, stdlib). Whatever the runner
cannot claim to evaluate exactly as Go does raises `Unsure`, so the flow is declined, not judged.
"""

from core.flows.starlark.interp import Module
from core.flows.starlark.library import UNIVERSE
from core.flows.starlark.stdlib import JSON, MATH
from core.flows.starlark.values import Builtin, Dict, EvalError, Fail, List, Object, Struct, Unsure

__all__ = ["Builtin", "Dict", "EvalError", "Fail", "List", "Module", "Object", "Struct", "Unsure", "load"]


def load(source: str, filename: str) -> Module:
    """Execute a script as kitsoki's sandbox does (json and math predeclared) and freeze it."""
    return Module(source, filename, {"json": JSON, "math": MATH}, UNIVERSE)
