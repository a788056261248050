"""Argument bounds, checked before any mutation: every operation's arguments as one JSON object.

- the whole object <= 24 KiB of UTF-8 JSON;
- each string <= 4,096 JSON bytes (its JSON encoding, quotes and escapes included), except `goal`
  and `assignment` (10,000 each), the assignment also <= 8,192 bytes of UTF-8 unescaped;
- no NUL anywhere (keys or values);
- a workdir is an absolute, normalized path.
"""

from __future__ import annotations

import functools
import inspect
import os
from pathlib import Path

import orjson

from core.runs.errors import BoundsError

MAX_ARGS_BYTES = 24 * 1024
MAX_STRING_JSON_BYTES = 4096
LONG_FIELDS = {"goal": 10_000, "assignment": 10_000}
MAX_ASSIGNMENT_BYTES = 8192


def _plain(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return None  # callables, source settings: not user arguments


def _strings(value, key: str | None, out: list) -> None:
    if isinstance(value, str):
        out.append((key, value))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append((None, k))
            _strings(v, k, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, key, out)


def check_args(args: dict) -> None:
    """Raise BoundsError when `args` breaks a bound; nothing has been touched yet."""
    args = _plain(args)
    try:
        encoded = orjson.dumps(args)
    except TypeError as exc:  # pragma: no cover - _plain leaves only JSON types
        raise BoundsError(f"arguments are not JSON: {exc}") from None
    if len(encoded) > MAX_ARGS_BYTES:
        raise BoundsError(f"arguments are {len(encoded)} bytes of JSON; at most {MAX_ARGS_BYTES}",
                          limit=MAX_ARGS_BYTES, size=len(encoded))
    found: list[tuple[str | None, str]] = []
    _strings(args, None, found)
    for key, text in found:
        name = key or "a key"
        if "\x00" in text:
            raise BoundsError(f"{name}: contains a NUL character", field=key)
        limit = LONG_FIELDS.get(key or "", MAX_STRING_JSON_BYTES)
        size = len(orjson.dumps(text))
        if size > limit:
            raise BoundsError(f"{name}: {size} JSON bytes; at most {limit}", field=key, limit=limit, size=size)
        if key == "assignment" and len(text.encode()) > MAX_ASSIGNMENT_BYTES:
            raise BoundsError(f"assignment: {len(text.encode())} bytes of UTF-8; at most {MAX_ASSIGNMENT_BYTES}",
                              field=key, limit=MAX_ASSIGNMENT_BYTES)
    workdir = args.get("workdir") if isinstance(args, dict) else None
    if workdir is not None:
        check_workdir(workdir)


def check_workdir(workdir: str) -> None:
    if not isinstance(workdir, str) or not workdir:
        raise BoundsError("workdir: a path is required", field="workdir")
    if not os.path.isabs(workdir):
        raise BoundsError(f"workdir: {workdir!r} is not absolute", field="workdir")
    if os.path.normpath(workdir) != workdir or workdir.startswith("//"):
        raise BoundsError(f"workdir: {workdir!r} is not normalized (write {os.path.normpath(workdir)!r})",
                          field="workdir")


def bounded(fn):
    """Check the bound arguments of `fn` (by name) before it runs."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        check_args({k: v for k, v in bound.arguments.items() if not callable(v)})
        return fn(*args, **kwargs)

    return wrapper
