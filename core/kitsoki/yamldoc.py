"""One YAML text as the byte-preserving editor (core.kitsoki.yamledit) reads it: located and loaded.

**Locate.** The parser's events and scanner tokens give the exact character span of every node,
of every ``:`` and every ``-`` indicator. From them `_Doc` builds a small positional tree (aliases
stay visible as aliases, unlike in a composed node graph), with the path walk, columns, indentation
step and insertion points the edits need.

**Load.** `_safe_load` is ruamel.yaml's safe loader (YAML 1.2; integers as Go's yaml.v3 reads them),
the one the editor verifies each result with; `_same` compares its data type-strictly.

**Tokenise once, in C.** Events and tokens come from libyaml (PyYAML's C parser, character offsets
like ruamel's), handed to ruamel's own composer and constructor as ruamel events, so the data is what
ruamel's safe load gives. ruamel's pure-Python scanner is used instead where the two could read a
text differently (a directive, a tab, a BOM or a YAML 1.1-only line break inside, any text libyaml
refuses: its errors are ruamel's), so a text is located and loaded the same either way
(tests/test_yamldoc.py compares the two on every YAML file of kitsoki's stories and the workspace).

Both are memoized per text (per thread): a `_Doc` is never changed after it is made, and the drafts
of one pass edit the same live file again and again.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml as pyyaml
from ruamel.yaml import YAML
from ruamel.yaml import events as ev
from ruamel.yaml import tokens as tk
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

Path = Sequence[str | int]


class EditError(ValueError):
    """An edit that cannot be made faithfully; the message names the path and why."""


_BOM = "\ufeff"
_LINE_BREAK = re.compile(r"[\r\n]")
_LOAD_ERRORS = (YAMLError, ValueError, TypeError, OverflowError, KeyError)
_MAX_DEPTH = 200
_DEFAULT_STEP = 2
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _fmt(path: Sequence[str | int]) -> str:
    if not path:
        return "<document>"
    out = ""
    for comp in path:
        if isinstance(comp, int):
            out += f"[{comp}]"
        else:
            part = comp if comp and "." not in comp and "[" not in comp else json.dumps(comp)
            out += ("." if out else "") + part
    return out


def _same(a: Any, b: Any, memo: set | None = None) -> bool:
    """Type-strict deep equality (True is not 1, 1 is not 1.0, nan equals nan), alias-safe."""
    if memo is None:
        memo = set()
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (dict, list)):
        pair = (id(a), id(b))
        if pair in memo:
            return True
        memo.add(pair)
        if len(a) != len(b):
            return False
        if isinstance(a, list):
            return all(_same(x, y, memo) for x, y in zip(a, b))
        b_keys = {k: k for k in b}
        for k, v in a.items():
            if k not in b_keys or type(b_keys[k]) is not type(k) or not _same(v, b[k], memo):
                return False
        return True
    return a == b


class _GoIntConstructor(SafeConstructor):
    """Integers as Go's yaml.v3 reads them: past 64 bits a float, else a string (never handed to
    int(), whose 4,300-digit limit would make a valid file unreadable)."""

    def construct_yaml_int(self, node):
        text = self.construct_scalar(node)
        if len(text.lstrip("+-").lstrip("0xo")) > 24:
            from core.kitsoki.parse import resolve_scalar

            return resolve_scalar(text)[1]
        return super().construct_yaml_int(node)


_GoIntConstructor.add_constructor("tag:yaml.org,2002:int", _GoIntConstructor.construct_yaml_int)


_MEMO = threading.local()
_MEMO_SIZE = 8


def _memo(kind: str) -> OrderedDict:
    table = getattr(_MEMO, kind, None)
    if table is None:
        table = OrderedDict()
        setattr(_MEMO, kind, table)
    return table


def _remember(table: OrderedDict, text: str, value: Any) -> Any:
    table[text] = value
    while len(table) > _MEMO_SIZE:
        table.popitem(last=False)
    return value


def _safe_load(text: str) -> Any:
    """The data of `text`, loaded once per text (per thread; the pure loader is slow and a draft's
    edits read back each other's results). Callers never mutate it: they deep-copy first."""
    table = _memo("data")
    if text in table:
        table.move_to_end(text)
        return table[text]
    fast = _c_events(text)
    if fast is not None:
        data = _plain_data(fast[0])
        if data is not _NOT_PLAIN:
            return _remember(table, text, data)
    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = _GoIntConstructor
    if fast is None:
        return _remember(table, text, yaml.load(text))
    return _remember(table, text, _compose(yaml, fast[0]))


_NOT_PLAIN = object()
_R12 = VersionedResolver(version=(1, 2))
_SCALARS = {_STR_TAG: None, _NULL_TAG: "construct_yaml_null", "tag:yaml.org,2002:bool": "construct_yaml_bool",
            "tag:yaml.org,2002:int": "construct_yaml_int", "tag:yaml.org,2002:float": "construct_yaml_float"}


def _plain_data(events: list) -> Any:
    """What ruamel's safe load makes of a single document with no tag, anchor, alias, merge key, complex or
    repeated key, nor a scalar other than a string, null, bool, int or float (nearly every kitsoki file),
    built straight from its events; `_NOT_PLAIN` for anything else (ruamel's composer and constructor
    load it, and refuse what they refuse)."""
    if len(events) < 4 or type(events[-2]) is not ev.DocumentEndEvent:
        return _NOT_PLAIN
    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = _GoIntConstructor
    _begin(yaml)
    constructor = yaml.constructor
    built: dict[tuple[str, str], Any] = {}
    resolved: dict[str, str] = {}
    stack: list[tuple[Any, Any]] = []  # (collection, pending mapping key or _NOT_PLAIN)
    root: Any = _NOT_PLAIN
    for e in events[2:-2]:
        kind = type(e)
        if kind is ev.ScalarEvent:
            if e.tag is not None or e.anchor is not None:
                return _NOT_PLAIN
            if e.implicit[0]:
                tag = resolved.get(e.value)
                if tag is None:  # ruamel's Tag equals its text but does not hash like it
                    tag = resolved[e.value] = str(_R12.resolve(ScalarNode, e.value, e.implicit))
            else:
                tag = _STR_TAG
            if tag not in _SCALARS:
                return _NOT_PLAIN
            method = _SCALARS[tag]
            if method is None:
                value = e.value
            else:
                found = built.get((tag, e.value), _NOT_PLAIN)
                if found is _NOT_PLAIN:
                    try:
                        found = getattr(constructor, method)(ScalarNode(tag, e.value))
                    except _LOAD_ERRORS:
                        return _NOT_PLAIN
                    built[(tag, e.value)] = found
                value = found
        elif kind is ev.MappingStartEvent or kind is ev.SequenceStartEvent:
            if e.tag is not None or e.anchor is not None or len(stack) >= _MAX_DEPTH:
                return _NOT_PLAIN
            if stack and type(stack[-1][0]) is dict and stack[-1][1] is _NOT_PLAIN:
                return _NOT_PLAIN  # a collection as a key
            stack.append(({} if kind is ev.MappingStartEvent else [], _NOT_PLAIN))
            continue
        elif kind is ev.MappingEndEvent or kind is ev.SequenceEndEvent:
            value = stack.pop()[0]
        else:
            return _NOT_PLAIN  # an alias, or a second document
        if not stack:
            root = value
            continue
        collection, key = stack[-1]
        if type(collection) is list:
            collection.append(value)
        elif key is _NOT_PLAIN:
            if kind is not ev.ScalarEvent or (e.implicit[0] and e.value == "<<"):
                return _NOT_PLAIN
            try:
                if value in collection:
                    return _NOT_PLAIN  # a repeated key: ruamel says so
            except TypeError:
                return _NOT_PLAIN
            stack[-1] = (collection, value)
        else:
            collection[key] = value
            stack[-1] = (collection, _NOT_PLAIN)
    return root


# libyaml and ruamel's YAML 1.2 scanner agree on everything but these: a directive (`%YAML 1.1` switches
# ruamel's resolver), tabs, a BOM past the start, and the line breaks only YAML 1.1 has.
_PURE_ONLY = re.compile(r"(?m)^%|[\t\ufeff\x85\u2028\u2029]")
_C_EVENT = {cls: getattr(ev, cls.__name__) for cls in (
    pyyaml.StreamStartEvent, pyyaml.StreamEndEvent, pyyaml.DocumentStartEvent, pyyaml.DocumentEndEvent,
    pyyaml.MappingStartEvent, pyyaml.MappingEndEvent, pyyaml.SequenceStartEvent, pyyaml.SequenceEndEvent,
    pyyaml.ScalarEvent, pyyaml.AliasEvent)}


def _ruamel_event(e: Any) -> Any:
    cls = _C_EVENT[type(e)]
    if cls is ev.ScalarEvent:
        return cls(e.anchor, e.tag, e.implicit, e.value, e.start_mark, e.end_mark, style=e.style or None)
    if cls in (ev.MappingStartEvent, ev.SequenceStartEvent):
        return cls(e.anchor, e.tag, e.implicit, e.start_mark, e.end_mark, flow_style=e.flow_style)
    if cls is ev.AliasEvent:
        return cls(e.anchor, e.start_mark, e.end_mark)
    if cls is ev.DocumentStartEvent:
        return cls(e.start_mark, e.end_mark, explicit=e.explicit, version=e.version, tags=e.tags)
    if cls is ev.DocumentEndEvent:
        return cls(e.start_mark, e.end_mark, explicit=e.explicit)
    return cls(e.start_mark, e.end_mark)


def _c_events(text: str) -> tuple[list, list[int], list[int]] | None:
    """(ruamel events, ends of `:` tokens, ends of `-` tokens) read by libyaml, memoized per text; None
    where ruamel's scanner must read the text (see the module docstring)."""
    table = _memo("c")
    if text in table:
        table.move_to_end(text)
        return table[text]
    out = None
    if not _PURE_ONLY.search(text):
        try:
            events = [_ruamel_event(e) for e in pyyaml.parse(text, Loader=pyyaml.CSafeLoader)]
            colons, dashes = [], []
            for t in pyyaml.scan(text, Loader=pyyaml.CSafeLoader):
                if type(t) is pyyaml.ValueToken:
                    colons.append(t.end_mark.index)
                elif type(t) is pyyaml.BlockEntryToken:
                    dashes.append(t.end_mark.index)
            out = (events, sorted(colons), sorted(dashes))
        except (pyyaml.YAMLError, ValueError, TypeError, KeyError):
            out = None  # ruamel reads it and says what is wrong in its own words
    return _remember(table, text, out)


class _Events:
    """Hands a list of events to ruamel's composer as its parser would."""

    def __init__(self, events: list) -> None:
        self.events, self.at = events, 0

    def check_event(self, *choices: Any) -> bool:
        if self.at >= len(self.events):
            return False
        return not choices or isinstance(self.events[self.at], choices)

    def peek_event(self) -> Any:
        return self.events[self.at]

    def get_event(self) -> Any:
        self.at += 1
        return self.events[self.at - 1]

    def dispose(self) -> None:
        pass


def _begin(yaml: YAML) -> None:
    """What YAML.load sets up before it reads a document."""
    from ruamel.yaml.docinfo import DocInfo, version

    yaml.doc_infos.append(DocInfo(requested_version=version(yaml.version)))
    yaml.tags = {}


def _compose(yaml: YAML, events: list) -> Any:
    """ruamel's safe load of a text, from its events (YAML.load without its reader and scanner)."""
    _begin(yaml)
    yaml._parser = _Events(events)
    return yaml.constructor.get_single_data()


def _document(text: str) -> _Doc:
    """The parsed document of `text`, made once per text (per thread): a _Doc is never changed
    after it is made, and drafts of one pass edit the same live file again and again."""
    table = _memo("docs")
    doc = table.get(text)
    if doc is not None:
        table.move_to_end(text)
        return doc
    return _remember(table, text, _Doc(text))


def _data_at(data: Any, path: Sequence[str | int]) -> Any:
    for comp in path:
        data = data[comp]
    return data


# --------------------------------------------------------------------------- positional tree


@dataclass(eq=False)
class _Node:
    kind: str  # "map" | "seq" | "scalar" | "alias"
    start: int
    end: int
    flow: bool = False
    style: str | None = None
    tag: str | None = None
    anchor: str | None = None
    text: str = ""
    implicit: Any = None
    pairs: list[tuple[_Node, _Node]] = field(default_factory=list)
    items: list[_Node] = field(default_factory=list)
    parent: _Node | None = None
    key: _Node | None = None  # for a mapping value: its key node

    @property
    def empty(self) -> bool:
        """An absent value (`key:` or `-` with nothing after): it has no span of its own."""
        return (
            self.kind == "scalar"
            and self.text == ""
            and self.style is None
            and self.tag is None
            and self.anchor is None
            and self.start == self.end
        )


class _Doc:
    """One parsed file: text without BOM, line ending, positional tree, safe-loaded data."""

    def __init__(self, original: str) -> None:
        if not isinstance(original, str):
            raise EditError(f"<document>: expected text (str), got {type(original).__name__}")
        self.bom = _BOM if original.startswith(_BOM) else ""
        self.text = text = original[len(self.bom) :]
        m = re.search(r"\r\n|\r|\n", text)
        self.lb = m.group(0) if m else "\n"
        try:
            self.data = _safe_load(text)
            fast = _c_events(text)
            if fast is not None:
                events, self.colon_ends, self.dash_ends = fast
            else:
                tokens = list(YAML(typ="rt").scan(text))
                events = list(YAML(typ="rt").parse(text))
                self.colon_ends = sorted(t.end_mark.index for t in tokens if isinstance(t, tk.ValueToken))
                self.dash_ends = sorted(t.end_mark.index for t in tokens if isinstance(t, tk.BlockEntryToken))
        except RecursionError:
            raise EditError("<document>: nested too deeply") from None
        except _LOAD_ERRORS as e:  # a constructor's ValueError too (a bad timestamp, say)
            raise EditError(f"<document>: not valid YAML: {_one_line(e)}") from None
        self.used_anchors: set[str] = set()
        self.doc_end: int | None = None
        self.version: Any = None
        self.root: _Node | None = None
        self._step: int | None = None
        it = iter(events)
        for e in it:
            if isinstance(e, ev.DocumentStartEvent):
                self.version = e.version
                self.root = self._node(next(it), it, 0)
            elif isinstance(e, ev.DocumentEndEvent) and getattr(e, "explicit", False):
                self.doc_end = e.start_mark.index
        keys = YAML(typ="safe", pure=True)  # reads key nodes the way the safe loader does
        if self.version:
            keys.version = self.version
        self._resolver = keys.resolver
        self._constructor = keys.constructor
        if self.root is not None and self.root.empty:
            self.root = None  # `---` alone: as good as an empty file

    # -- tree
    def _node(self, e: Any, it: Any, depth: int) -> _Node:
        if depth > _MAX_DEPTH:
            raise EditError("<document>: nested too deeply")
        start = e.start_mark.index
        if isinstance(e, ev.AliasEvent):
            self.used_anchors.add(e.anchor)
            return _Node("alias", start, e.end_mark.index, anchor=e.anchor)
        if isinstance(e, ev.ScalarEvent):
            return _Node("scalar", start, e.end_mark.index, style=e.style, tag=e.tag,
                         anchor=e.anchor, text=e.value, implicit=e.implicit)
        if isinstance(e, ev.SequenceStartEvent):
            n = _Node("seq", start, start, flow=bool(e.flow_style), tag=e.tag, anchor=e.anchor)
            for c in it:
                if isinstance(c, ev.SequenceEndEvent):
                    n.end = c.end_mark.index
                    break
                item = self._node(c, it, depth + 1)
                item.parent = n
                n.items.append(item)
            return n
        if isinstance(e, ev.MappingStartEvent):
            n = _Node("map", start, start, flow=bool(e.flow_style), tag=e.tag, anchor=e.anchor)
            for c in it:
                if isinstance(c, ev.MappingEndEvent):
                    n.end = c.end_mark.index
                    break
                k = self._node(c, it, depth + 1)
                v = self._node(next(it), it, depth + 1)
                k.parent = v.parent = n
                v.key = k
                n.pairs.append((k, v))
            return n
        raise EditError(f"<document>: unexpected YAML event {type(e).__name__}")

    def key_value(self, k: _Node) -> Any:
        """The Python value of a scalar key node; a unique sentinel when it has none."""
        if k.kind != "scalar":
            return _NO_KEY
        tag = k.tag
        if tag is None or tag == "!":
            if k.implicit and k.implicit[0]:
                tag = self._resolver.resolve(ScalarNode, k.text, (True, False))
            else:
                tag = _STR_TAG
        try:
            return self._constructor.construct_object(ScalarNode(tag, k.text), deep=True)
        except _LOAD_ERRORS:
            return _NO_KEY

    def lookup(self, m: _Node, comp: str | int) -> _Node | None:
        for k, v in m.pairs:
            kv = self.key_value(k)
            if type(kv) is type(comp) and kv == comp:
                return v
        return None

    def has_merge(self, m: _Node) -> bool:
        return any(
            k.kind == "scalar"
            and (k.tag == _MERGE_TAG or (k.tag is None and k.style is None and k.text == "<<"))
            for k, _ in m.pairs
        )

    # -- text positions
    def line_start(self, p: int) -> int:
        return max(self.text.rfind("\n", 0, p), self.text.rfind("\r", 0, p)) + 1

    def line_end(self, p: int) -> int:
        m = _LINE_BREAK.search(self.text, p)
        return m.start() if m else len(self.text)

    def col(self, p: int) -> int:
        return p - self.line_start(p)

    def blank_before(self, p: int) -> bool:
        """Only indentation between the start of p's line and p."""
        return self.text[self.line_start(p) : p].strip(" \t") == ""

    def insert_point(self, p: int) -> int:
        """Where `LB + new lines` go so that they follow the line whose content ends at p."""
        if p > 0 and self.text[p - 1] in "\r\n":  # content ended with its own line break
            q = p - 1
            if self.text[q] == "\n" and q > 0 and self.text[q - 1] == "\r":
                q -= 1
            return q
        return self.line_end(p)

    def colon_end(self, v: _Node) -> int:
        """Index just after the `:` that introduces mapping value v."""
        i = bisect.bisect_right(self.colon_ends, v.start) - 1
        if i < 0 or v.key is None or self.colon_ends[i] <= v.key.end:
            raise EditError("<document>: a key without a `:` (explicit `? key`) is not supported")
        return self.colon_ends[i]

    def dash_end(self, item: _Node) -> int:
        i = bisect.bisect_right(self.dash_ends, item.start) - 1
        if i < 0:
            raise EditError("<document>: cannot locate a list item's `-`")
        return self.dash_ends[i]

    def indicator_end(self, n: _Node) -> int:
        parent = n.parent
        if parent is not None and parent.kind == "map":
            return self.colon_end(n)
        if parent is not None and parent.kind == "seq" and not parent.flow:
            return self.dash_end(n)
        raise EditError("<document>: cannot locate an empty value")

    def scalar_end(self, n: _Node) -> int:
        """End of a scalar's own text; block scalars without their trailing line breaks."""
        if n.style in ("|", ">"):
            return n.start + len(self.text[n.start : n.end].rstrip(" \t\r\n"))
        return n.end

    def content_end(self, n: _Node) -> int:
        """Index after the last character of n's content (its deepest, last value)."""
        if n.kind == "scalar":
            if n.empty:
                return self.indicator_end(n)
            if n.style in ("|", ">") and self._keeps(n):
                return n.end  # `|+`: the trailing blank lines are content
            return self.scalar_end(n)
        if n.kind == "alias" or n.flow:
            return n.end
        if n.kind == "map":
            k, v = n.pairs[-1]
            return max(self.content_end(v), k.end)
        return self.content_end(n.items[-1])

    def _keeps(self, n: _Node) -> bool:
        header = self.text[n.start : self.line_end(n.start)].split(" #")[0]
        m = re.search(r"(?:^|\s)[|>]([0-9+-]*)\s*$", header)
        return bool(m and "+" in m.group(1))

    def key_col(self, m: _Node) -> int:
        return self.col(m.pairs[0][0].start)

    def dash_col(self, s: _Node) -> int:
        return self.col(self.dash_end(s.items[0]) - 1)

    def child_col(self, v: _Node) -> int | None:
        """Column of a block collection's entries (keys or dashes)."""
        if v.kind == "map" and not v.flow and v.pairs:
            return self.key_col(v)
        if v.kind == "seq" and not v.flow and v.items:
            return self.dash_col(v)
        return None

    def own_step(self, m: _Node) -> int | None:
        """The indentation step under block mapping m (with pairs) when m itself decides it: its values'
        column, else its own offset from a block-mapping parent."""
        base = self.key_col(m)
        for _, v in m.pairs:
            c = self.child_col(v)
            if c is not None and c > base:
                return c - base
        p = m.parent
        if p is not None and p.kind == "map" and not p.flow:
            diff = base - self.key_col(p)
            if diff > 0:
                return diff
        return None

    def step(self, m: _Node | None) -> int:
        """Indentation step used under block mapping m (else in the file; else 2)."""
        if m is not None and m.kind == "map" and not m.flow and m.pairs:
            own = self.own_step(m)
            if own is not None:
                return own
        if self._step is None:
            self._step = self._find_step(self.root) or _DEFAULT_STEP
        return self._step

    def _find_step(self, n: _Node | None) -> int | None:
        stack = [n] if n is not None else []
        while stack:
            n = stack.pop(0)
            if n.kind == "map" and not n.flow and n.pairs:
                base = self.key_col(n)
                for _, v in n.pairs:
                    c = self.child_col(v)
                    if c is not None and c > base:
                        return c - base
                stack.extend(v for _, v in n.pairs)
            elif n.kind == "seq":
                stack.extend(n.items)
        return None

    # -- path walking
    def check_node(self, n: _Node | None, path: Sequence[str | int]) -> None:
        if n is None:
            return
        if n.kind == "alias":
            raise EditError(f"{_fmt(path)}: is an alias (*{n.anchor}); edits through aliases are refused")
        if n.anchor is not None and n.anchor in self.used_anchors:
            raise EditError(f"{_fmt(path)}: is anchored (&{n.anchor}) and referenced by an alias; "
                            "editing it would change the alias too")

    def check_subtree(self, n: _Node, path: Sequence[str | int]) -> None:
        stack = [n]
        while stack:
            c = stack.pop()
            if c.kind != "alias" and c.anchor is not None and c.anchor in self.used_anchors:
                raise EditError(f"{_fmt(path)}: holds anchor &{c.anchor}, which an alias refers to; "
                                "replacing it would break the alias")
            stack.extend(c.items)
            for k, v in c.pairs:
                stack += [k, v]

    def walk(self, path: Sequence[str | int]) -> tuple[_Node | None, int]:
        """(node at path[:i], i): i == len(path) when the whole path exists; otherwise the node
        is the mapping lacking key path[i], or a null/absent value (None: an empty document)."""
        node = self.root
        for i, comp in enumerate(path):
            here = path[:i]
            self.check_node(node, here)
            if node is None or _is_null(node):
                return node, i
            if node.kind == "map":
                found = self.lookup(node, comp)
                if found is None:
                    if self.has_merge(node):
                        raise EditError(f"{_fmt(path[: i + 1])}: the mapping {_fmt(here)} has a merge "
                                        "key (<<); edits there are refused")
                    if isinstance(comp, int):
                        raise EditError(f"{_fmt(here)}: is a mapping, not a list")
                    return node, i
                node = found
            elif node.kind == "seq":
                if not isinstance(comp, int):
                    raise EditError(f"{_fmt(here)}: is a list, not a mapping")
                if not -len(node.items) <= comp < len(node.items):
                    raise EditError(f"{_fmt(path[: i + 1])}: index out of range "
                                    f"(the list has {len(node.items)} items)")
                node = node.items[comp]
            else:
                what = "a mapping" if isinstance(comp, str) else "a list"
                raise EditError(f"{_fmt(here)}: is a scalar, not {what}")
        self.check_node(node, path)
        return node, len(path)


class _Sentinel:
    pass


_NO_KEY = _Sentinel()


def _is_null(n: _Node) -> bool:
    if n.kind != "scalar":
        return False
    if n.empty:
        return True
    if n.tag == _NULL_TAG:
        return True
    return n.tag is None and n.style is None and n.text in ("~", "null", "Null", "NULL")


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())
