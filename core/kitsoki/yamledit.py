"""Byte-preserving edits of kitsoki YAML files (`.kitsoki.yaml`, story `app.yaml`, room files).

A proposal changes a few keys of a file a person wrote; the promise is that every byte outside
the changed region stays identical: comments, key order, quoting, indentation, blank lines, line
endings (LF or CRLF), a UTF-8 BOM and a missing final newline all survive. ruamel.yaml's
round-trip *dump* cannot promise that, so it is never used to write. Instead:

1. **Locate.** core.kitsoki.yamldoc gives the exact character span of every node, of every ``:``
   and every ``-`` indicator, as a small positional tree (aliases stay visible as aliases).
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

import copy
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

from core.kitsoki.yamldoc import (
    _BOM,
    _LOAD_ERRORS,
    _STR_TAG,
    EditError,
    Path,
    _data_at,
    _Doc,
    _document,
    _fmt,
    _is_null,
    _Node,
    _one_line,
    _safe_load,
    _same,
)

__all__ = ["EditError", "Path", "add_entries", "add_entry", "append_items", "render_scalar", "set_value"]


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


def add_entries(text: str, entries: Sequence[tuple[Path, str, Any]]) -> str:
    """`add_entry(text, path, key, value)` for each entry in turn, the same text, with one parse of the
    result instead of one per entry (a draft adds an intent and an agent to one app.yaml, a room and
    the arm into it to one room file).

    The entries are laid out on the original document at once when that provably gives the text the
    one-by-one edits give: each adds a new key to an existing, non-empty block mapping whose
    indentation step is its own; no entry goes strictly inside a mapping a later entry adds to (so
    that mapping and its insertion point are the same in the text the earlier entries make); where
    two go at the same point, the later one's mapping does not hold the earlier one's (so, as one by
    one, the later one goes first). The result is verified as add_entry's is (loaded and compared with
    the original data with every entry added). Anything else, or a failed check, is done one entry at
    a time, so the text and every error are add_entry's."""
    batched = _batch_entries(text, entries)
    if batched is not None:
        return batched
    for path, key, value in entries:
        text = add_entry(text, path, key, value)
    return text


def _batch_entries(text: str, entries: Sequence[tuple[Path, str, Any]]) -> str | None:
    if len(entries) < 2:
        return None
    try:
        doc = _document(text)
        planned = []  # (mapping node, insertion point, edits, full path, value), in the entries' order
        for path, key, value in entries:
            p = _check_path(path, allow_empty=True)
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                return None
            full = [*p, key]
            value = _normalize(value, _fmt(full))
            node, i = doc.walk(p)
            if i != len(p) or node is None or node.kind != "map" or node.flow or not node.pairs:
                return None
            existing = _data_at(doc.data, p)
            if doc.lookup(node, key) is not None or not isinstance(existing, dict) or key in existing:
                return None
            end = doc.content_end(node)
            if end > 0 and doc.text[end - 1] in "\r\n":  # content ending in its own line break: one by one
                return None
            if doc.own_step(node) is None:  # the file-wide step could change with an earlier entry
                return None
            edits = _edits_add(doc, node, key, value)
            planned.append((node, edits[0][0], edits, full, value))
    except (EditError, RecursionError):
        return None
    for j, (later, point_j, _, _, _) in enumerate(planned):
        for earlier, point_i, _, _, _ in planned[:j]:
            if later.start < point_i < point_j:
                return None  # an earlier entry lands inside the mapping a later one adds to
            if point_i == point_j and _holds(later, earlier):
                return None  # one by one, the later entry would follow the earlier one there
    keys = [tuple(full) for _, _, _, full, _ in planned]
    if len(set(keys)) != len(keys):
        return None
    expected = copy.deepcopy(doc.data)
    for _, _, _, full, value in planned:
        _data_at(expected, full[:-1])[full[-1]] = copy.deepcopy(value)
    edits = [edit for _, _, node_edits, _, _ in planned for edit in node_edits]
    try:  # _apply's stable order puts a later entry first at a shared point, as one by one does
        return _finish(doc, edits, expected, keys[-1])
    except EditError:
        return None


def _holds(outer: _Node, inner: _Node) -> bool:
    node: _Node | None = inner
    while node is not None:
        if node is outer:
            return True
        node = node.parent
    return False
