"""Slot parsers for template captures (kitsoki's `internal/slotparse`): int, money, number, bool,
enum, and `list[<type>]` of any of them.

Each parser takes the captured tokens and finds its value anywhere in them, as kitsoki's do (a
leading "please" is filler): int takes the first digit run, else the longest spelled cardinal;
money takes "<n> dollars|bucks" (spelled too: "two hundred fifty bucks"), else the first number
rounded half away from zero ("$120.50" is 121: the lexer drops "$"); a list splits on "and"
(commas vanish when tokenising) and keeps the items that parsed before the first that does not
("6, 12, blue, 3" is [6, 12]).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.kitsoki.routing.lex import _DIGIT_FORM, Token, _spelled_number, _stems_of, content_stems

# --------------------------------------------------------------------------
# Slot parsers (port of kitsoki internal/slotparse, trimmed)
# --------------------------------------------------------------------------

_BOOL_YES = frozenset({"yes", "y", "true", "sure", "ok", "okay", "affirmative"})
_BOOL_NO = frozenset({"no", "n", "false", "nope", "nah", "negative"})
_MAX_SPELLED_WINDOW = 16


def _parse_int(tokens: list[Token]) -> int | None:
    for t in tokens:  # first digit-form token anywhere wins
        if not t.is_stop and t.surface.isdigit() and t.surface.isascii():
            return int(t.surface)
    for i, t in enumerate(tokens):  # then the first spelled cardinal
        if t.is_stop or not (t.surface.isascii() and t.surface.isalpha()):
            continue
        if _spelled_number([t.surface]) is None:
            continue
        end = i
        while (
            end < len(tokens)
            and end - i < _MAX_SPELLED_WINDOW
            and tokens[end].surface.isascii()
            and tokens[end].surface.isalpha()
        ):
            end += 1
        for hi in range(end, i, -1):
            v = _spelled_number([x.surface for x in tokens[i:hi]])
            if v is not None:
                return v
    return None


def _int_span(tokens: list[Token]) -> tuple[int, int, int] | None:
    """(value, start, end) of kitsoki's ParseInt: the first digit run, else the first spelled cardinal."""
    for i, t in enumerate(tokens):
        if not t.is_stop and t.is_num and t.surface.isdigit() and t.surface.isascii():
            return int(t.surface), i, i + 1
    for i, t in enumerate(tokens):
        if t.is_stop or not (t.surface.isascii() and t.surface.isalpha()) or _spelled_number([t.surface]) is None:
            continue
        end = i
        while end < len(tokens) and end - i < _MAX_SPELLED_WINDOW and tokens[end].surface.isascii() \
                and tokens[end].surface.isalpha():
            end += 1
        for hi in range(end, i, -1):
            value = _spelled_number([x.surface for x in tokens[i:hi]])
            if value is not None:
                return value, i, hi
    return None


_MONEY_UNITS = frozenset({"dollar", "dollars", "buck", "bucks"})


def _round_half_away(value: float) -> int:
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def _dollars(tokens: list[Token], i: int) -> tuple[int, int] | None:
    """(whole dollars, end) of the number at i: "120", "120.50" (rounded), or "120" "." "50"."""
    surface = tokens[i].surface
    if "." in surface:
        try:
            return _round_half_away(float(surface)), i + 1
        except ValueError:
            return None
    if not (surface.isdigit() and surface.isascii()):
        return None
    dollars = int(surface)
    if i + 1 < len(tokens) and tokens[i + 1].surface == ".":
        if i + 2 < len(tokens) and tokens[i + 2].surface.isdigit():
            cents = tokens[i + 2].surface
            return _round_half_away(dollars + int(cents) / 10 ** len(cents)), i + 3
        return dollars, i + 2
    return dollars, i + 1


def _money_span(tokens: list[Token]) -> tuple[int, int, int] | None:
    """(value, start, end) of kitsoki's ParseMoney."""
    for i, t in enumerate(tokens):  # "$" <number> (only when a lexer keeps "$")
        if t.surface == "$" and i + 1 < len(tokens) and tokens[i + 1].is_num:
            found = _dollars(tokens, i + 1)
            if found is not None:
                return found[0], i, found[1]
    for i, t in enumerate(tokens):  # <number> dollars|bucks
        if t.is_num:
            found = _dollars(tokens, i)
            if found is not None and found[1] < len(tokens) and tokens[found[1]].surface in _MONEY_UNITS:
                return found[0], i, found[1] + 1
    for start, t in enumerate(tokens):  # <spelled number> dollars|bucks
        if not (t.surface.isascii() and t.surface.isalpha()) or _spelled_number([t.surface]) is None:
            continue
        end = start
        while end < len(tokens) and end - start < _MAX_SPELLED_WINDOW and tokens[end].surface.isascii() \
                and tokens[end].surface.isalpha():
            end += 1
        for hi in range(end, start, -1):
            if hi >= len(tokens) or tokens[hi].surface not in _MONEY_UNITS:
                continue
            value = _spelled_number([x.surface for x in tokens[start:hi]])
            if value is not None:
                return value, start, hi + 1
    for i, t in enumerate(tokens):  # a bare number
        if t.is_num:
            found = _dollars(tokens, i)
            if found is not None:
                return found[0], i, found[1]
    return None


def _parse_money(tokens: list[Token]) -> int | None:
    found = _money_span(tokens)
    return found[0] if found else None


def _parse_list(tokens: list[Token], inner: Callable[[list[Token]], tuple[Any, int, int] | None]) -> list[Any] | None:
    """kitsoki's ParseList: items split on "and" (commas vanish when tokenising); parsing stops at
    the first item that does not parse, keeping the ones before it."""
    def segment_end(start: int) -> int:
        return next((i for i in range(start, len(tokens)) if tokens[i].norm == "and"), len(tokens))

    def head(start: int, end: int, strict: bool) -> tuple[Any, int] | None:
        if start >= end:
            return None
        segment = tokens[start:end]
        found = inner(segment)
        if found is None:
            return None
        value, first, last = found
        if strict:
            leading = 0
            while leading < len(segment) and segment[leading].is_stop:
                leading += 1
            if first > leading:
                return None
        return value, start + last

    values: list[Any] = []
    cursor = 0
    while cursor < len(tokens):
        if tokens[cursor].is_stop and tokens[cursor].norm != "and":
            cursor += 1
            continue
        if tokens[cursor].norm == "and" and not values:
            cursor += 1
            continue
        end = segment_end(cursor)
        found = head(cursor, end, bool(values))
        if found is None:
            break
        values.append(found[0])
        cursor = found[1]
        if cursor < len(tokens) and tokens[cursor].norm == "and":
            if head(cursor + 1, segment_end(cursor + 1), True) is not None:
                cursor += 1
                continue
            break
        while cursor < end and tokens[cursor].is_stop:
            cursor += 1
        if cursor >= end:
            continue
        if head(cursor, end, True) is None:
            break
    return values or None


def _parse_number(tokens: list[Token]) -> float | None:
    for t in tokens:
        if not t.is_stop and _DIGIT_FORM.fullmatch(t.surface):
            return float(t.surface)
    v = _parse_int(tokens)
    return float(v) if v is not None else None


def _parse_bool(tokens: list[Token]) -> bool | None:
    for t in tokens:
        if t.is_stop:
            continue
        if t.surface in _BOOL_YES:
            return True
        if t.surface in _BOOL_NO:
            return False
    return None


def _levenshtein1(a: str, b: str) -> bool:
    """True when the edit distance between a and b is exactly 1."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :]
    return a[i:] == b[i + 1 :]


@dataclass(frozen=True, slots=True)
class _EnumTable:
    values: tuple[tuple[str, frozenset[str]], ...]  # (canonical, stems)
    synonyms: tuple[tuple[str, frozenset[str]], ...]  # (canonical, stems), value order


def _enum_table(slot: Any) -> _EnumTable:
    values = [str(v) for v in (getattr(slot, "values", None) or [])]
    syn_map: Mapping[str, Iterable[str]] = getattr(slot, "value_synonyms", None) or {}
    by_lower = {k.casefold(): k for k in syn_map}
    vals = tuple((v, content_stems(v)) for v in values)
    syns: list[tuple[str, frozenset[str]]] = []
    for v in values:
        key = v if v in syn_map else by_lower.get(v.casefold())
        for phrase in syn_map.get(key, ()) if key is not None else ():
            stems = content_stems(str(phrase))
            if stems:
                syns.append((v, stems))
    return _EnumTable(vals, tuple(syns))


def _parse_enum(tokens: list[Token], table: _EnumTable) -> str | None:
    if not tokens or not table.values:
        return None
    bag = _stems_of(tokens)
    # 1. direct: the value's stems are a subset of the capture's stems
    hits = {v for v, stems in table.values if stems and stems <= bag}
    if hits:
        return hits.pop() if len(hits) == 1 else None  # ambiguous -> no value
    # 2. per-value synonyms
    hits = {v for v, stems in table.synonyms if stems <= bag}
    if hits:
        return hits.pop() if len(hits) == 1 else None
    # 3. edit-distance-1 fuzz, single-stem values only
    hits = {
        v
        for v, stems in table.values
        if len(stems) == 1
        for t in tokens
        if not t.is_stop and t.norm and _levenshtein1(t.norm, next(iter(stems)))
    }
    return hits.pop() if len(hits) == 1 else None


def _span_parser(kind: str, table: _EnumTable | None = None) -> Callable[[list[Token]], tuple[Any, int, int] | None] | None:
    """The (value, start, end) parser a `list[<kind>]` slot uses for each item, or None."""
    if kind == "int":
        return _int_span
    if kind in ("money", "$int"):
        return _money_span
    if kind == "bool":
        def boolean(tokens: list[Token]) -> tuple[Any, int, int] | None:
            for i, t in enumerate(tokens):
                if not t.is_stop and (t.surface in _BOOL_YES or t.surface in _BOOL_NO):
                    return t.surface in _BOOL_YES, i, i + 1
            return None
        return boolean
    if kind == "enum" and table is not None:
        def enum(tokens: list[Token]) -> tuple[Any, int, int] | None:
            for i in range(len(tokens)):
                for end in range(i + 1, len(tokens) + 1):
                    value = _parse_enum(tokens[i:end], table)
                    if value is not None:
                        return value, i, end
            return None
        return enum
    return None
