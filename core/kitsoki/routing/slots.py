"""Slot parsers for template captures (kitsoki's `internal/slotparse`): int, number, bool, enum."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


