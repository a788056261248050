"""Byte-preserving edits of kitsoki YAML files (`.kitsoki.yaml`, story `app.yaml`, room files).

A proposal changes a few keys of a file a person wrote; the promise is that every byte outside
the changed region stays identical: comments, key order, quoting, indentation, blank lines, line
endings (LF or CRLF), a UTF-8 BOM and a missing final newline all survive. ruamel.yaml's
round-trip *dump* cannot promise that, so it is never used to write. Instead:

1. **Locate.** The round-trip (``typ="rt"``) parser's events and scanner tokens give the exact
   character span of every node, of every ``:`` and every ``-`` indicator. From them we build a
   small positional tree (aliases stay visible as aliases, unlike in a composed node graph).
2. **Splice.** The new text is the original with one or two spans replaced; new blocks are
   rendered by hand in the file's own indentation step and line ending.
3. **Verify.** The result is loaded with the safe loader and compared, type-strictly, with the
   original data with the edit applied. Any difference raises `EditError`; a wrong document is
   never returned.

Where a new mapping entry (or list item) goes in a block collection — the insertion rule:
right after the last line of the collection's last value node (its deepest, last content line,
including an inline ``# comment`` on that line). Comment lines and blank lines that follow that
line are left *after* the new entry. So a trailing ``# end`` comment stays at the end of the file,
and a comment written above the next key (``# Root overrides`` before ``root:``) stays attached
to that key. The one consequence to know: a comment indented inside a block after its last entry
(a commented-out option, say) also stays after the new entry.

Null counts as absence: a key with an empty, ``~`` or ``null`` value can grow a mapping or a
list under it. Edits through an alias, or of a node that carries an anchor some alias refers to,
are refused, as are paths that would have to go through a merge key (``<<``).
"""

from __future__ import annotations

import bisect
import copy
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml import events as ev
from ruamel.yaml import tokens as tk
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

__all__ = ["EditError", "Path", "add_entry", "append_items", "render_scalar", "set_value"]

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


# --------------------------------------------------------------------------- rendering

_R12 = VersionedResolver(version=(1, 2))
_R11 = VersionedResolver(version=(1, 1))
_YAML11_WORDS = frozenset({
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE",
    "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
})
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_FLOW_INDICATORS = frozenset(",[]{}")
_BREAKS = frozenset("\r\n\x85\u2028\u2029")


def _printable(ch: str) -> bool:
    o = ord(ch)
    return (
        ch in "\t\n\r"
        or 0x20 <= o <= 0x7E
        or o == 0x85
        or 0xA0 <= o <= 0xD7FF
        or 0xE000 <= o <= 0xFFFD
        or 0x10000 <= o <= 0x10FFFF
    )


def _plain_ok(s: str, *, flow: bool, key: bool = False) -> bool:
    """True when `s` can be written as a plain scalar and read back as this very string.

    Values that a YAML 1.1 reader takes for a bool or number (``yes``, ``on``, ``1:20``) are
    quoted too; keys are not held to that (kitsoki's own ``on:`` key is plain everywhere)."""
    if not s or s != s.strip() or s[0] in " \t" or s[-1] in " \t":
        return False
    for ch in s:
        if ch == "\t" or ch in _BREAKS or ch == _BOM or not _printable(ch):
            return False
    if s[0] in _INDICATORS and not (s[0] == "-" and len(s) > 1 and s[1] != " "):
        return False
    if s.startswith(("---", "...")):
        return False
    if any(ch in _FLOW_INDICATORS for ch in s):
        return False
    if ": " in s or " #" in s or s.endswith(":"):
        return False
    if flow and ":" in s:
        return False
    if not key and s in _YAML11_WORDS:
        return False
    for resolver in (_R12,) if key else (_R12, _R11):
        if resolver.resolve(ScalarNode, s, (True, False)) != _STR_TAG:
            return False
    return True


def _double_quoted(s: str) -> str:
    out = []
    for ch in json.dumps(s, ensure_ascii=False):
        o = ord(ch)
        if ch in "\x85\u2028\u2029\ufeff" or not _printable(ch) or 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    return "".join(out)


def _render_float(v: float) -> str:
    if math.isnan(v):
        return ".nan"
    if math.isinf(v):
        return ".inf" if v > 0 else "-.inf"
    r = repr(v)
    if "e" in r:
        mant, exp = r.split("e")
        if "." not in mant:
            mant += ".0"
        r = f"{mant}e{exp}"
    return r


def _key(key: Any, *, flow: bool = False) -> str:
    if isinstance(key, str) and _plain_ok(key, flow=flow, key=True):
        return key
    return _scalar(key, flow=flow)


def _scalar(value: Any, *, flow: bool = False) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _render_float(value)
    if isinstance(value, str):
        return value if _plain_ok(value, flow=flow) else _double_quoted(value)
    raise EditError(f"cannot write a {type(value).__name__} as a YAML scalar")


def render_scalar(value: Any) -> str:
    """YAML text of a scalar: plain when that reads back as the same value, else a double-quoted
    JSON-style string; bools, null and numbers as YAML 1.2 (``true``, ``null``, ``1.0e+20``).

    Strings that a YAML 1.1 reader would take for something else (``yes``, ``on``, ``1:20``) are
    quoted too, as are strings with flow indicators (``pick {n}``), ``: ``, `` #``, leading or
    trailing spaces, line breaks or a leading indicator character."""
    return _scalar(value)


def _quoted_like(value: Any, style: str | None, *, flow: bool) -> str:
    """Render a replacement for a scalar written in `style`, keeping its quotes when it had some."""
    if isinstance(value, (dict, list)):
        return _flow(value)
    if isinstance(value, str):
        if style == '"':
            return _double_quoted(value)
        if style == "'" and all(_printable(c) and c not in _BREAKS and c != "\t" for c in value):
            return "'" + value.replace("'", "''") + "'"
    return _scalar(value, flow=flow)


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k, flow=True)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value, flow=True)


def _inline(value: Any, *, flow: bool) -> str:
    """One-line text of a value: a scalar, or a (small or empty) flow collection."""
    return _flow(value) if isinstance(value, (dict, list)) else _scalar(value, flow=flow)


def _is_block(value: Any) -> bool:
    """A value rendered as an indented block (non-empty collections); others fit on one line."""
    return isinstance(value, (dict, list)) and bool(value)


def _block_entry(key: Any, value: Any, col: int, step: int) -> list[str]:
    head = " " * col + _key(key) + ":"
    if _is_block(value):
        return [head, *_block_value(value, col + step, step)]
    return [f"{head} {_inline(value, flow=False)}"]


def _block_item(value: Any, col: int, step: int) -> list[str]:
    if not _is_block(value):
        return [" " * col + "- " + _inline(value, flow=False)]
    inner = _block_value(value, col + 2, step)
    inner[0] = " " * col + "- " + inner[0][col + 2 :]
    return inner


def _block_value(value: Any, col: int, step: int) -> list[str]:
    """Lines of a non-empty collection laid out at column `col` (entries, or `- ` items)."""
    lines: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            lines += _block_entry(k, v, col, step)
    else:
        for v in value:
            lines += _block_item(v, col, step)
    return lines


def _normalize(value: Any, where: str) -> Any:
    """Plain data (dict/list/str/int/float/bool/None) or EditError; tuples become lists."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not (k is None or isinstance(k, (str, bool, int, float))):
                raise EditError(f"{where}: cannot write a {type(k).__name__} mapping key")
            out[k] = _normalize(v, where)
        return out
    if isinstance(value, (list, tuple)):
        return [_normalize(v, where) for v in value]
    raise EditError(f"{where}: cannot write a {type(value).__name__} value")


# --------------------------------------------------------------------------- paths and data


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


def _check_path(path: Any, *, allow_empty: bool) -> list[str | int]:
    if isinstance(path, (str, bytes)) or not isinstance(path, Sequence):
        raise EditError(f"{path!r}: a path is a sequence of keys and list indexes")
    out = list(path)
    for i, comp in enumerate(out):
        if isinstance(comp, bool) or not isinstance(comp, (str, int)):
            raise EditError(f"{_fmt(out[:i])}: path parts are str keys or int indexes, "
                            f"not {type(comp).__name__}")
    if not out and not allow_empty:
        raise EditError("<document>: the path is empty")
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
    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = _GoIntConstructor
    return _remember(table, text, yaml.load(text))


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


def _expected_set(data: Any, path: Sequence[str | int], value: Any) -> Any:
    """The original data with path set to value; missing or null steps become dicts."""
    data = copy.deepcopy(data)
    value = copy.deepcopy(value)
    if not path:
        return value
    if data is None:
        data = {}
    cur = data
    for comp in path[:-1]:
        nxt = cur[comp] if isinstance(cur, list) else cur.get(comp)
        if nxt is None:
            nxt = {}
            cur[comp] = nxt
        cur = nxt
    cur[path[-1]] = value
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
            tokens = list(YAML(typ="rt").scan(text))
            events = list(YAML(typ="rt").parse(text))
        except RecursionError:
            raise EditError("<document>: nested too deeply") from None
        except _LOAD_ERRORS as e:  # a constructor's ValueError too (a bad timestamp, say)
            raise EditError(f"<document>: not valid YAML: {_one_line(e)}") from None
        self.colon_ends = sorted(t.end_mark.index for t in tokens if isinstance(t, tk.ValueToken))
        self.dash_ends = sorted(t.end_mark.index for t in tokens if isinstance(t, tk.BlockEntryToken))
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

    def step(self, m: _Node | None) -> int:
        """Indentation step used under block mapping m (else in the file; else 2)."""
        if m is not None and m.kind == "map" and not m.flow and m.pairs:
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


# --------------------------------------------------------------------------- edits

_Edit = tuple[int, int, str]


def _apply(text: str, edits: list[_Edit]) -> str:
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _finish(doc: _Doc, edits: list[_Edit], expected: Any, path: Sequence[str | int]) -> str:
    body = _apply(doc.text, edits)
    try:
        got = _safe_load(body)
    except _LOAD_ERRORS as e:
        raise EditError(f"{_fmt(path)}: the edited text would not parse ({_one_line(e)}); refused") from None
    if not _same(got, expected):
        raise EditError(f"{_fmt(path)}: the edited text would not load as the intended data; refused")
    return doc.bom + body


def _edits_empty_doc(doc: _Doc, value: Any) -> list[_Edit]:
    """Lay a new root collection out at column 0 of an empty or comment-only document."""
    lines = _block_value(value, 0, doc.step(None)) if _is_block(value) else [_inline(value, flow=False)]
    block = doc.lb.join(lines)
    text = doc.text
    if doc.doc_end is not None:  # before an explicit `...`
        p = doc.line_start(doc.doc_end)
        return [(p, p, block + doc.lb)]
    if not text or text.endswith(("\n", "\r")):
        return [(len(text), len(text), block + doc.lb)]
    return [(len(text), len(text), doc.lb + block)]


def _edits_add(doc: _Doc, m: _Node, key: str | int, value: Any) -> list[_Edit]:
    """Add the new entry key: value to mapping m (key known to be absent)."""
    if m.flow:
        return _edits_flow_append(doc, m, f"{_key(key, flow=True)}: {_flow(value)}")
    lines = _block_entry(key, value, doc.key_col(m), doc.step(m))
    p = doc.insert_point(doc.content_end(m))
    return [(p, p, doc.lb + doc.lb.join(lines))]


def _edits_append(doc: _Doc, s: _Node, items: list[Any]) -> list[_Edit]:
    if s.flow:
        return _edits_flow_append(doc, s, ", ".join(_flow(v) for v in items))
    step = doc.step(s.parent if s.parent is not None and s.parent.kind == "map" else None)
    col = doc.dash_col(s)
    lines: list[str] = []
    for v in items:
        lines += _block_item(v, col, step)
    p = doc.insert_point(doc.content_end(s))
    return [(p, p, doc.lb + doc.lb.join(lines))]


def _edits_flow_append(doc: _Doc, c: _Node, piece: str) -> list[_Edit]:
    """Insert piece as the last entry of flow collection c, before its closing bracket."""
    close = c.end - 1
    if doc.text[close : close + 1] not in ("]", "}"):
        raise EditError("<document>: cannot locate the end of a flow collection")
    children = [v for _, v in c.pairs] if c.kind == "map" else c.items
    if not children:
        return [(close, close, piece)]
    last = children[-1]
    p = doc.content_end(last)
    seg = doc.text[p:close]
    comma = seg.find(",")
    if comma >= 0 and "#" not in seg[:comma]:  # trailing comma: `[a, b,]`
        q = p + comma + 1
        return [(q, q, " " + piece)]
    if last.empty:  # `{a: }`: `{a:, b: 1}` would read `a:` as the key
        return [(p, p, " , " + piece)]
    return [(p, p, ", " + piece)]


def _edits_replace(doc: _Doc, v: _Node, value: Any, path: Sequence[str | int]) -> list[_Edit]:
    """Replace the existing value node v (found at path) by value."""
    doc.check_subtree(v, path)
    parent = v.parent
    in_map = parent is not None and parent.kind == "map"
    in_flow = parent is not None and parent.flow
    block_new = _is_block(value) and not in_flow
    lb = doc.lb

    if v.empty:
        at = doc.indicator_end(v)
        if not block_new:
            return [(at, at, " " + _inline(value, flow=in_flow))]
        if in_map:
            lines = _block_value(value, doc.key_col(parent) + doc.step(parent), doc.step(parent))
            p = doc.insert_point(at)
            return [(p, p, lb + lb.join(lines))]
        col = doc.col(at - 1) + 2
        lines = _block_value(value, col, doc.step(None))
        return [(at, at, " " + lines[0][col:] + "".join(lb + ln for ln in lines[1:]))]

    if v.kind == "scalar" or v.flow:
        span_end = doc.scalar_end(v) if v.kind == "scalar" else v.end
        if not block_new or v.flow:
            new = _quoted_like(value, v.style, flow=in_flow) if v.kind == "scalar" else _flow(value)
            return [(v.start, span_end, new)]
        if in_map:
            step = doc.step(parent)
            lines = _block_value(value, doc.key_col(parent) + step, step)
            colon = doc.colon_end(v)
            eol = doc.line_end(span_end)
            gap_blank = doc.text[colon : v.start].strip(" \t") == ""
            if gap_blank and doc.text[span_end:eol].strip(" \t") == "":
                return [(colon, eol, lb + lb.join(lines))]
            # a comment follows on the line: it stays there, the block goes below
            return [(colon if gap_blank else v.start, span_end, ""), (eol, eol, lb + lb.join(lines))]
        col = doc.col(v.start)
        lines = _block_value(value, col, doc.step(None))
        return [(v.start, span_end, lines[0][col:] + "".join(lb + ln for ln in lines[1:]))]

    # v is a block collection: replace the whole value block
    end = doc.insert_point(doc.content_end(v))
    whole_lines = doc.blank_before(v.start) and in_map
    if block_new:
        if in_map:
            own = doc.child_col(v)
            base = doc.key_col(parent)
            if (isinstance(value, list) and v.kind == "seq") or (own is not None and own > base):
                col = own
            else:
                col = base + doc.step(parent)
            lines = _block_value(value, col, doc.step(parent))
            if whole_lines:
                return [(doc.line_start(v.start), end, lb.join(lines))]
            colon = doc.colon_end(v)
            start = colon if doc.text[colon : v.start].strip(" \t") == "" else v.start
            return [(start, end, lb + lb.join(lines))]
        col = doc.col(v.start)
        lines = _block_value(value, col, doc.step(None))
        return [(v.start, end, lines[0][col:] + "".join(lb + ln for ln in lines[1:]))]
    new = _flow(value)
    if in_map and whole_lines:
        first = doc.line_start(v.start)
        cut = first - 1 if first > 0 else 0
        if cut > 0 and doc.text[cut] == "\n" and doc.text[cut - 1] == "\r":
            cut -= 1
        colon = doc.colon_end(v)
        return [(colon, colon, " " + new), (cut, end, "")]
    return [(v.start, end, new)]


def _edits_set(doc: _Doc, path: Sequence[str | int], value: Any) -> tuple[list[_Edit], bool]:
    """Edits that make path hold value (creating mappings on the way); (edits, changed)."""
    node, i = doc.walk(path)
    if i == len(path):
        if _same(_data_at(doc.data, path), value):
            return [], False
        if node is None:  # the path is the document itself
            return _edits_empty_doc(doc, value), True
        return _edits_replace(doc, node, value, path), True
    rest = path[i + 1 :]
    for j, comp in enumerate(rest):
        if isinstance(comp, int):
            raise EditError(f"{_fmt(path[: i + 1 + j])}: does not exist, and list index {comp} "
                            "cannot be created")
    nested = value
    for comp in reversed(rest):
        nested = {comp: nested}
    if node is None:
        return _edits_empty_doc(doc, {path[i]: nested}), True
    if node.kind == "map":
        return _edits_add(doc, node, path[i], nested), True
    return _edits_replace(doc, node, {path[i]: nested}, path[:i]), True  # a null grows a mapping


# --------------------------------------------------------------------------- public API


def set_value(text: str, path: Path, value: Any) -> str:
    """Set mapping key path[-1] under the mapping at path[:-1] to value.

    Missing intermediate mappings are created (a missing top-level key is appended at the end
    of the top-level mapping); a null value along the way grows into a mapping. An existing
    scalar is replaced in place: only the scalar's own span changes, a trailing ``# comment``
    stays. An existing collection value is replaced as a whole block (comments inside it go
    with it). Setting the value a key already has returns text unchanged. An int as path[-1]
    replaces an existing list element."""
    p = _check_path(path, allow_empty=False)
    doc = _document(text)
    value = _normalize(value, _fmt(p))
    edits, changed = _edits_set(doc, p, value)
    if not changed:
        return text
    return _finish(doc, edits, _expected_set(doc.data, p, value), p)


def append_items(text: str, path: Path, items: Sequence[Any]) -> str:
    """Append items to the list at path; create the list (and mappings on the way) when missing.

    Block lists get new ``- item`` lines at the column of the existing dashes (indented under
    the key or at the key's column alike); flow lists get ``, item`` before their ``]``, on the
    same line. Items equal to existing ones are appended all the same. No items: unchanged."""
    p = _check_path(path, allow_empty=True)
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise EditError(f"{_fmt(p)}: items must be a sequence of values")
    doc = _document(text)
    new = _normalize(list(items), _fmt(p))
    if not new:
        return text
    node, i = doc.walk(p)
    if i == len(p) and node is not None and not _is_null(node):
        if node.kind != "seq":
            what = "a mapping" if node.kind == "map" else "a scalar"
            raise EditError(f"{_fmt(p)}: is {what}, not a list")
        edits = _edits_append(doc, node, new)
        expected = copy.deepcopy(doc.data)
        _data_at(expected, p).extend(copy.deepcopy(new))
    else:
        edits, _ = _edits_set(doc, p, new)
        expected = _expected_set(doc.data, p, new)
    return _finish(doc, edits, expected, p)


def add_entry(text: str, path: Path, key: str, value: Any) -> str:
    """Add a NEW key to the mapping at path (EditError if the key exists).

    In a block mapping the entry is rendered in block style at the mapping's key column, nested
    blocks indented by the mapping's own step, and inserted right after the last line of the
    mapping's last value (see the module docstring for where comments end up). In a flow
    mapping ``, key: value`` goes before the ``}``. A missing mapping at path is created."""
    p = _check_path(path, allow_empty=True)
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise EditError(f"{_fmt(p)}: a new key must be a str (or int), not {type(key).__name__}")
    full = [*p, key]
    doc = _document(text)
    value = _normalize(value, _fmt(full))
    node, i = doc.walk(p)
    if i == len(p) and node is not None and node.kind == "map":
        existing = _data_at(doc.data, p)
        if doc.lookup(node, key) is not None or (isinstance(existing, dict) and key in existing):
            raise EditError(f"{_fmt(full)}: already exists")
        edits = _edits_add(doc, node, key, value)
    elif i == len(p) and node is not None and not _is_null(node):
        what = "a list" if node.kind == "seq" else "a scalar"
        raise EditError(f"{_fmt(p)}: is {what}, not a mapping")
    else:
        edits, _ = _edits_set(doc, full, value)
    return _finish(doc, edits, _expected_set(doc.data, full, value), full)
