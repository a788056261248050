"""One parse per file per content: kitsoki's YAML files read through libyaml (PyYAML's C parser).

libyaml parses; this module builds the tree from its events, so nothing recursive runs on input
we do not trust (libyaml's own composer recurses in C and crashes on `[[[[...` 100k deep) and
every limit acts while the file is read: nesting depth, values after alias expansion (an alias
costs the size of its anchor, so an alias bomb is refused, never expanded), and the file's size
(read through core.safeio: regular files only, never blocking). Scalars resolve as YAML 1.2's core
schema (kitsoki's Go decoders read `on:` as a key, not as true).

Two trees come out of the same events:
- `located(...)`: plain Python data (`LMap` / `LSeq` / scalars) where each mapping and list
  knows its file and the line:column of every key and item; what the story loader folds.
- `values(...)`: `_Value` trees with each scalar's tag and source text (the config reader's
  yaml.v3 semantics need them; flow fixtures use them too).

`ParseCache` keeps parsed files keyed by (path, size, mtime_ns, inode), checked again by content
when the file changed within the last two seconds (a write in the same clock tick keeps its
mtime); it is shared by everything in the process that reads kitsoki files (proposer, validator,
apply gate, flow runner, sidecar). An overlay (path -> bytes) stands in for files on disk, which is
how a staged draft is validated without copying the workspace.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml import events as ev

from core.kitsoki.yamlread import (
    _BOOL,
    _FLOAT,
    _INT,
    _MAP,
    _MERGE,
    _NULL,
    _SEQ,
    _STR,
    _TAG,
    CONFIG_LIMITS,
    ConfigIssue,
    YamlLimits,
    _FileProblem,
    _Mark,
    _Value,
    _ValueProblems,
)
from core.safeio import UnsafeFile, read_regular

__all__ = ["LMap", "LSeq", "ParseCache", "PARSE_CACHE", "located", "values", "resolve_scalar"]


class LMap(dict):
    """A YAML mapping: a dict that also knows its file, where it starts, and where each key is."""

    __slots__ = ("file", "line", "column", "marks", "kline", "kcol")

    def __init__(self, *args: Any, file: str = "", line: int = 0, column: int = 0) -> None:
        super().__init__(*args)
        self.file, self.line, self.column = file, line, column
        self.kline = self.kcol = 0
        """Where the key naming this mapping is (0 when it is a list item or the document)."""
        self.marks: dict[str, tuple[int, int, int, int]] = {}
        """key -> (key line, key column, value line, value column), 1-based."""

    def key_at(self, key: str) -> tuple[str, int, int]:
        mark = self.marks.get(key)
        return (self.file, mark[0], mark[1]) if mark else (self.file, self.line, self.column)

    def value_at(self, key: str) -> tuple[str, int, int]:
        mark = self.marks.get(key)
        return (self.file, mark[2], mark[3]) if mark else (self.file, self.line, self.column)

    @property
    def at(self) -> tuple[str, int, int]:
        """Where this mapping is named (its key), else where it starts."""
        return (self.file, self.kline, self.kcol) if self.kline else (self.file, self.line, self.column)

    def like(self, data: Any = ()) -> LMap:
        """A new mapping with this one's location (and key locations) and `data`."""
        out = LMap(data, file=self.file, line=self.line, column=self.column)
        out.marks, out.kline, out.kcol = self.marks, self.kline, self.kcol
        return out


class LSeq(list):
    """A YAML sequence: a list that knows its file, where it starts and where each item is."""

    __slots__ = ("file", "line", "column", "marks", "kline", "kcol")

    def __init__(self, *args: Any, file: str = "", line: int = 0, column: int = 0) -> None:
        super().__init__(*args)
        self.file, self.line, self.column = file, line, column
        self.kline = self.kcol = 0
        self.marks: list[tuple[int, int]] = []

    def item_at(self, index: int) -> tuple[str, int, int]:
        if 0 <= index < len(self.marks):
            return (self.file, *self.marks[index])
        return (self.file, self.line, self.column)

    @property
    def at(self) -> tuple[str, int, int]:
        return (self.file, self.kline, self.kcol) if self.kline else (self.file, self.line, self.column)

    def like(self, data: Any = ()) -> LSeq:
        out = LSeq(data, file=self.file, line=self.line, column=self.column)
        out.marks, out.kline, out.kcol = self.marks, self.kline, self.kcol
        return out


# --- scalars: YAML 1.2 core schema -----------------------------------------------------------------

_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUES = frozenset({"true", "True", "TRUE"})
_FALSES = frozenset({"false", "False", "FALSE"})
_INT_RE = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF_RE = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN = frozenset({".nan", ".NaN", ".NAN"})
_MAYBE_TYPED = frozenset("0123456789+-.~nNtTfF")


def resolve_scalar(text: str) -> tuple[str, Any]:
    """(tag, value) of a plain scalar under YAML 1.2's core schema."""
    if text and text[0] not in _MAYBE_TYPED:
        return _STR, text
    if text in _NULLS:
        return _NULL, None
    if text in _TRUES:
        return _BOOL, True
    if text in _FALSES:
        return _BOOL, False
    if _INT_RE.fullmatch(text):
        value = _go_int(text)
        if value is not None:
            return _INT, value
        # Past 64 bits Go's yaml.v3 reads it as a float, or as a string when no float holds it.
    if _FLOAT_RE.fullmatch(text):
        value = _go_float(text)
        return (_FLOAT, value) if value is not None else (_STR, text)
    if _INF_RE.fullmatch(text):
        return _FLOAT, float("-inf") if text[0] == "-" else float("inf")
    if text in _NAN:
        return _FLOAT, float("nan")
    return _STR, text


_INT_MIN, _UINT_MAX = -(1 << 63), (1 << 64) - 1
_MAX_INT_DIGITS = {8: 22, 10: 20, 16: 16}
"""The most digits an int64/uint64 can have in each base: anything longer is not read as an int
(and never handed to int(), whose string limit would raise)."""


def _go_int(text: str) -> int | None:
    """An integer as Go's yaml.v3 reads it (int64, else uint64), or None when it holds neither."""
    base, digits = (8, text[2:]) if text.startswith("0o") else (16, text[2:]) if text.startswith("0x") else \
        (10, text.lstrip("+-"))
    if len(digits.lstrip("0")) > _MAX_INT_DIGITS[base]:
        return None
    value = int(digits, base) * (-1 if text.startswith("-") else 1)
    return value if _INT_MIN <= value <= _UINT_MAX else None


def _go_float(text: str) -> float | None:
    """A float as Go's strconv.ParseFloat reads it, or None when it is out of range (Go then keeps a string)."""
    try:
        value = float(text)
    except (ValueError, OverflowError):
        return None
    return None if value in (float("inf"), float("-inf")) else value


_EXPLICIT = {_STR, _INT, _FLOAT, _BOOL, _NULL}


def _tagged_scalar(tag: str, text: str) -> tuple[str, Any]:
    """A scalar with an explicit standard tag (`!!str 1`); raises ValueError when it cannot be read."""
    if tag == _STR:
        return _STR, text
    if tag == _NULL:
        return _NULL, None
    resolved, value = resolve_scalar(text)
    if tag == _FLOAT and resolved == _INT:
        return _FLOAT, float(value)
    if resolved != tag:
        raise ValueError(f"{text!r} is not a valid {tag.removeprefix(_TAG)}")
    return resolved, value


# --- the event walk ---------------------------------------------------------------------------------


def _problem_of(exc: yaml.YAMLError, limits: YamlLimits) -> _FileProblem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark and getattr(exc, "problem", None):
        problem += f" ({context} started at line {context_mark.line + 1}, column {context_mark.column + 1})"
    return _FileProblem(mark.line + 1 if mark else 1, mark.column + 1 if mark else 1, f"YAML syntax error: {problem}")


class _Frame:
    __slots__ = ("kind", "data", "key", "key_mark", "anchor", "size", "merges")

    def __init__(self, kind: str, data: Any, anchor: str | None) -> None:
        self.kind, self.data, self.anchor = kind, data, anchor
        self.key: Any = _NO_KEY
        self.key_mark: tuple[int, int] | None = None
        self.size = 1
        self.merges: list[Any] | None = None


_NO_KEY = object()
_MERGE_KEY = "<<"


class _Walk:
    """Builds one tree from libyaml events; `typed` chooses `_Value` nodes over plain data."""

    def __init__(self, data: bytes | str, file: str, limits: YamlLimits, typed: bool) -> None:
        self.data, self.file, self.limits, self.typed = data, file, limits, typed
        self.issues: list[ConfigIssue] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.budget = limits.max_values

    def problem(self, line: int, column: int, key: str, message: str) -> None:
        self.issues.append(ConfigIssue(file=self.file, line=line, column=column, key=key, message=message))

    def run(self) -> Any:
        loader = yaml.CSafeLoader(self.data)
        stack: list[_Frame] = []
        root: Any = _NO_KEY
        get = loader.get_event
        scalar_event, mapping_start, sequence_start = ev.ScalarEvent, ev.MappingStartEvent, ev.SequenceStartEvent
        mapping_end, sequence_end, alias_event = ev.MappingEndEvent, ev.SequenceEndEvent, ev.AliasEvent
        document_end = ev.DocumentEndEvent
        max_depth = self.limits.max_depth
        events_left = self.limits.max_tokens
        try:
            while True:
                event = get()
                if event is None:
                    break
                events_left -= 1
                if events_left < 0:
                    mark = event.start_mark
                    raise _FileProblem(mark.line + 1, mark.column + 1, self.limits.too_many_tokens)
                kind = type(event)
                if kind is scalar_event:
                    mark = event.start_mark
                    value, size = self.scalar(event, mark.line + 1, mark.column + 1, stack)
                    if event.anchor:
                        self.anchors[event.anchor] = (value, size)
                    position = (mark.line + 1, mark.column + 1)
                elif kind is mapping_start or kind is sequence_start:
                    mark = event.start_mark
                    if len(stack) > max_depth:
                        raise _FileProblem(mark.line + 1, mark.column + 1, self.limits.too_deep)
                    if event.tag not in (None, "!", _MAP if kind is mapping_start else _SEQ):
                        self.problem(mark.line + 1, mark.column + 1, self.path(stack),
                                     f"unsupported YAML tag {event.tag} on a {'mapping' if kind is mapping_start else 'list'}")
                    self.spend(1, mark)
                    if self.typed:
                        node = _Value("map" if kind is mapping_start else "seq", {} if kind is mapping_start else [],
                                      _MAP if kind is mapping_start else _SEQ, "",
                                      _Mark(self.file, mark.line + 1, mark.column + 1))
                    elif kind is mapping_start:
                        node = LMap(file=self.file, line=mark.line + 1, column=mark.column + 1)
                    else:
                        node = LSeq(file=self.file, line=mark.line + 1, column=mark.column + 1)
                    stack.append(_Frame("map" if kind is mapping_start else "seq", node, event.anchor))
                    continue
                elif kind is mapping_end or kind is sequence_end:
                    frame = stack.pop()
                    if frame.merges:
                        self.merge(frame)
                    value, size = frame.data, frame.size
                    if frame.anchor:
                        self.anchors[frame.anchor] = (value, size)
                    position = None
                    if stack:
                        self.add(stack[-1], value, size, None)
                        continue
                    root = value
                    continue
                elif kind is alias_event:
                    mark = event.start_mark
                    found = self.anchors.get(event.anchor)
                    if found is None:
                        raise _FileProblem(mark.line + 1, mark.column + 1, f"unknown alias *{event.anchor}")
                    value, size = found
                    self.spend(size, mark)
                    position = (mark.line + 1, mark.column + 1)
                elif kind is document_end:
                    break  # kitsoki's decoders read the first document of a file
                else:
                    continue
                if stack:
                    self.add(stack[-1], value, size, position)
                else:
                    root = value
        except yaml.YAMLError as exc:
            raise _problem_of(exc, self.limits) from None
        except RecursionError:  # not expected (the walk is iterative); never escape bare
            raise _FileProblem(1, 1, self.limits.too_deep) from None
        if root is _NO_KEY or root is None or (self.typed and root.kind == "scalar" and root.is_null):
            return _Value("map", {}, _MAP, "", _Mark(self.file, 1, 1)) if self.typed else \
                LMap(file=self.file, line=1, column=1)
        return root

    def spend(self, amount: int, mark: Any) -> None:
        self.budget -= amount
        if self.budget < 0:
            raise _FileProblem(mark.line + 1, mark.column + 1, (
                f"YAML expands to more than {self.limits.max_values} values; aliases (*name) that repeat large "
                "anchors are refused"))

    def path(self, stack: list[_Frame]) -> str:
        """The dotted key path of the value being read (`story_dirs[0]`)."""
        out = ""
        for frame in stack:
            if frame.kind == "map":
                if frame.key is _NO_KEY or frame.key is _BAD_KEY:
                    continue
                name = frame.key.text if isinstance(frame.key, _Value) else str(frame.key)
                out = f"{out}.{name}" if out else name
            else:
                count = len(frame.data.data) if self.typed else len(frame.data)
                out = f"{out}[{count}]"
        return out

    def scalar(self, event: Any, line: int, column: int, stack: list[_Frame]) -> tuple[Any, int]:
        self.budget -= 1
        if self.budget < 0:
            raise _FileProblem(line, column, (
                f"YAML expands to more than {self.limits.max_values} values; aliases (*name) that repeat large "
                "anchors are refused"))
        text, tag = event.value, event.tag
        if tag is None or tag == "!":
            resolved, data = resolve_scalar(text) if not event.style and tag is None else (_STR, text)
        elif tag in _EXPLICIT:
            try:
                resolved, data = _tagged_scalar(tag, text)
            except ValueError as exc:
                self.problem(line, column, self.path(stack), f"cannot read this value: {exc}")
                resolved, data = _STR, text
        else:
            self.problem(line, column, self.path(stack), f"unsupported YAML tag {tag} on a scalar")
            resolved, data = _STR, text
        is_key = bool(stack) and stack[-1].kind == "map" and stack[-1].key is _NO_KEY
        plain = not event.style and tag is None
        if self.typed:
            if is_key and plain and text == _MERGE_KEY:
                resolved = _MERGE
            return _Value("scalar", data, resolved, text, _Mark(self.file, line, column)), 1
        if is_key:  # a mapping key is its source text (a string-keyed map reads `1:` as "1")
            return _Key(text, plain), 1
        return data, 1

    def add(self, frame: _Frame, value: Any, size: int, position: tuple[int, int] | None) -> None:
        frame.size += size
        if frame.kind == "seq":
            if self.typed:
                frame.data.data.append(value)
            else:
                frame.data.append(value)
                frame.data.marks.append(position or (getattr(value, "line", 0), getattr(value, "column", 0)))
            return
        if frame.key is _NO_KEY:  # this value is a key
            if self.typed:
                if value.kind == "scalar":
                    frame.key, frame.key_mark = value, (value.at.line, value.at.column)
                    return
                line, column = value.at.line, value.at.column
            elif isinstance(value, _Key):
                frame.key, frame.key_mark = value, position
                return
            else:
                line, column = getattr(value, "line", 1), getattr(value, "column", 1)
            self.problem(line, column, "", "a key must be a plain word or string, not a list or mapping")
            frame.key, frame.key_mark = _BAD_KEY, (line, column)
            return
        key, key_mark = frame.key, frame.key_mark
        frame.key, frame.key_mark = _NO_KEY, None
        if key is _BAD_KEY:
            return
        if self.typed:
            name = key.text
            entries = frame.data.data
            if key.tag == _MERGE:
                frame.merges = (frame.merges or []) + [value]
                return
            if name in entries:
                first = entries[name].key_at
                self.problem(key_mark[0], key_mark[1], name, f'mapping key "{name}" already defined at '
                             f"[{first.line if first else '?'}:{first.column if first else '?'}] (a duplicate key)")
                return
            value.key_at = _Mark(self.file, *key_mark)
            entries[name] = value
            return
        name = str(key)
        data = frame.data
        if name == _MERGE_KEY and key.plain:
            frame.merges = (frame.merges or []) + [value]
            return
        if name in data:
            first = data.marks.get(name)
            self.problem(key_mark[0], key_mark[1], name, f'mapping key "{name}" already defined at '
                         f"[{first[0] if first else '?'}:{first[1] if first else '?'}] (a duplicate key)")
            return
        data[name] = value
        if position is None:  # a mapping or list: remember the key that names it
            value.kline, value.kcol = key_mark
        vpos = position or (getattr(value, "line", key_mark[0]), getattr(value, "column", key_mark[1]))
        data.marks[name] = (key_mark[0], key_mark[1], vpos[0], vpos[1])

    def merge(self, frame: _Frame) -> None:
        """`<<: *base` merge keys: explicit keys win, then earlier sources over later ones."""
        sources: list[Any] = []
        for value in frame.merges or []:
            if self.typed:
                parts = value.data if value.kind == "seq" else [value]
            else:
                parts = value if isinstance(value, LSeq) else [value]
            sources.extend(parts)
        for part in sources:
            if self.typed:
                if part.kind != "map":
                    self.problem(part.at.line, part.at.column, "",
                                 "a merge key (<<) must name a mapping or a list of mappings")
                    continue
                for name, child in part.data.items():
                    frame.data.data.setdefault(name, child)
                continue
            if not isinstance(part, LMap):
                self.problem(frame.data.line, frame.data.column, "",
                             "a merge key (<<) must name a mapping or a list of mappings")
                continue
            for name, child in part.items():
                if name not in frame.data:
                    frame.data[name] = child
                    frame.data.marks[name] = part.marks.get(name, (part.line, part.column, part.line, part.column))


class _Key(str):
    """A mapping key's source text; `plain` tells a bare `<<` (a merge key) from a quoted one."""

    __slots__ = ("plain",)

    def __new__(cls, text: str, plain: bool) -> _Key:
        out = super().__new__(cls, text)
        out.plain = plain
        return out


_BAD_KEY = object()


def located(data: bytes | str, file: str, limits: YamlLimits) -> Any:
    """Plain located data of the first YAML document (an empty file is an empty mapping).

    Raises _FileProblem (one position, the file cannot be read) or _ValueProblems (every problem
    of values inside an otherwise readable file)."""
    walk = _Walk(_decoded(data, limits), file, limits, typed=False)
    tree = walk.run()
    if walk.issues:
        raise _ValueProblems(walk.issues)
    return tree


def values(data: bytes | str, file: str, limits: YamlLimits) -> _Value:
    """The `_Value` tree of the first YAML document (an empty file is an empty mapping)."""
    walk = _Walk(_decoded(data, limits), file, limits, typed=True)
    tree = walk.run()
    if walk.issues:
        raise _ValueProblems(walk.issues)
    return tree


def _decoded(data: bytes | str, limits: YamlLimits) -> str:
    if isinstance(data, str):
        return data
    if len(data) > limits.max_bytes:
        raise _FileProblem(1, 1, limits.too_large(len(data)))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        raise _FileProblem(data.count(b"\n", 0, exc.start) + 1, exc.start - line_start + 1,
                           f"is not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


# --- the cache ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Signature:
    """What identifies a file's content without reading it: (size, mtime_ns, inode)."""

    size: int
    mtime_ns: int
    inode: int


def signature(path: str) -> Signature | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return Signature(info.st_size, info.st_mtime_ns, info.st_ino)


RACY_SECONDS = 2.0
"""A file changed this recently may change again within the same mtime tick: check its bytes."""


@dataclass(slots=True)
class _Entry:
    sig: Signature
    digest: int
    result: Any
    """The tree, or a _FileProblem / _ValueProblems / OSError to raise again."""
    verified_at: float
    sha256: str = ""
    """Of the bytes the tree was parsed from (what a memo across processes is checked against)."""


class ParseCache:
    """Parsed kitsoki files by path, valid while the file's (size, mtime_ns, inode) hold.

    Trees handed out are shared: callers must never mutate them (the loader copies what it
    rewrites). Thread-safe; bounded by `max_entries` (least recently used go first).
    """

    def __init__(self, max_entries: int = 4096) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._by_content: OrderedDict[tuple[str, str, int, int], Any] = OrderedDict()
        self._lock = threading.Lock()
        self.parses = 0
        """How many files were actually parsed (a benchmark and tests read it)."""

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_content.clear()

    def read(self, path: str | Path, limits: YamlLimits, *, typed: bool = False,
             overlay: dict[str, bytes] | None = None, what: str = "story file") -> Any:
        """The tree of `path` (or of its overlay bytes). Raises FileNotFoundError when it does not
        exist, _FileProblem / _ValueProblems when it cannot be read or parsed."""
        path = str(path)
        mode = "typed" if typed else "plain"
        if overlay is not None and path in overlay:
            return self._parse_bytes(path, overlay[path], limits, typed, mode)
        sig = signature(path)
        key = (mode, path)
        now = time.time()
        if sig is not None:
            with self._lock:
                entry = self._entries.get(key)
            if entry is not None and entry.sig == sig and (now - sig.mtime_ns / 1e9 > RACY_SECONDS
                                                            or now - entry.verified_at < 0.05):
                with self._lock:
                    self._entries.move_to_end(key)
                return _unwrap(entry.result)
        try:
            data = read_regular(path, limits.max_bytes, what=what)
        except FileNotFoundError:
            raise
        except UnsafeFile as exc:
            if exc.errno == errno.EFBIG and sig is not None:
                raise _FileProblem(1, 1, limits.too_large(sig.size)) from None
            raise _FileProblem(1, 1, exc.problem) from None
        sig = signature(path) or sig or Signature(len(data), 0, 0)
        digest = hash(data)
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and entry.digest == digest and entry.sig.size == len(data):
            entry.sig, entry.verified_at = sig, now
            return _unwrap(entry.result)
        result = self._parse_bytes(path, data, limits, typed, mode, wrap=True)
        with self._lock:
            self._entries[key] = _Entry(sig, digest, result, now, hashlib.sha256(data).hexdigest())
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return _unwrap(result)

    def parsed_sha256(self, path: str, sig: Signature, typed: bool = False) -> str | None:
        """The sha256 of the bytes behind `path`'s tree while its entry has signature `sig` (the one
        a load recorded when it read the file): the exact content that load parsed."""
        with self._lock:
            entry = self._entries.get(("typed" if typed else "plain", str(path)))
        return entry.sha256 if entry is not None and entry.sig == sig and entry.sha256 else None

    def _parse_bytes(self, path: str, data: bytes, limits: YamlLimits, typed: bool, mode: str,
                     wrap: bool = False) -> Any:
        content_key = (mode, path, hash(data), len(data))
        with self._lock:
            cached = self._by_content.get(content_key, _MISSING)
        if cached is _MISSING:
            self.parses += 1
            try:
                cached = (values if typed else located)(data, path, limits)
            except (_FileProblem, _ValueProblems) as exc:
                cached = _Raise(exc)
            with self._lock:
                self._by_content[content_key] = cached
                while len(self._by_content) > self.max_entries:
                    self._by_content.popitem(last=False)
        return cached if wrap else _unwrap(cached)


_MISSING = object()


class _Raise:
    __slots__ = ("exc",)

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


def _unwrap(result: Any) -> Any:
    if isinstance(result, _Raise):
        raise result.exc
    return result


PARSE_CACHE = ParseCache()
"""The process's cache: every reader of kitsoki files shares it."""


# --- the located-value readers the config loader and the flow runner use -----------------------------


def _compose_file(path: Path, limits: YamlLimits = CONFIG_LIMITS, raw: bytes | None = None) -> _Value:
    """A YAML file (or `raw`, its bytes) as a `_Value` tree, read through core.safeio and libyaml.
    Raises _FileProblem or _ValueProblems."""
    if raw is None:
        try:
            raw = read_regular(path, limits.max_bytes, what=path.name)
        except FileNotFoundError:
            raise _FileProblem(1, 1, "does not exist") from None
        except UnsafeFile as exc:
            raise _FileProblem(1, 1, exc.problem) from None
    return values(raw, str(path), limits)


def _read_document(path: Path, issues: list[ConfigIssue], overlay: dict[str, bytes] | None = None,
                   what: str = "config file", limits: YamlLimits | None = None) -> _Value | None:
    """A config-like file as a `_Value` tree (parsed once per content, through core.safeio), or
    None with the problem in `issues`: not a regular file, a dangling symlink, too large, bad YAML."""
    file = str(path)
    try:
        return PARSE_CACHE.read(os.path.abspath(file), limits or CONFIG_LIMITS, typed=True, overlay=overlay,
                                what=f"{path.name} ({what})")
    except FileNotFoundError:
        message = "does not exist"
        if os.path.islink(file):
            message = (f"is a symbolic link to {os.readlink(file)}, which does not exist; refusing to run on "
                       "defaults instead")
        issues.append(ConfigIssue(file=file, line=1, column=1, message=message))
    except _FileProblem as problem:
        issues.append(ConfigIssue(file=file, line=problem.line, column=problem.column, message=problem.message))
    except _ValueProblems as problems:
        issues.extend(problems.issues)
    return None
