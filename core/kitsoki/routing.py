"""Deterministic port of kitsoki's intent router ("semroute").

kitsoki resolves a typed utterance to an intent in tiers before it ever asks an
LLM.  This module reproduces the deterministic ones so the miner can answer two
questions without running kitsoki:

* does a phrasing a user typed ALREADY route to an intent of a story (then we
  must not propose it as a new synonym), and
* which intent does a flow fixture's ``input: "<text>"`` turn route to.

Tiers, in order (first hit wins):

1. ``exact``    -- the input equals (case/space-normalised) an example of exactly
                   one allowed intent: confidence 1.00.
2. ``synonym``  -- bag-of-stems subset match of bare synonyms and examples:
                   0.90 for one intent, leading-verb tie-break, else a 0.50 tie.
3. ``template`` -- positional ``{slot}`` templates with typed capture parsing:
                   0.80 all captures parsed, 0.65 with missing slots; several
                   intents -> 0.50 tie.

Lexing mirrors kitsoki's ``internal/lex``: NFKC, lowercase, word segmentation
(an approximation of UAX#29), Porter2 ("english" snowball) stems for purely
alphabetic words, and kitsoki's deliberately tiny builtin stoplist, tested
against both the surface and the stem.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any, Literal, Protocol

import snowballstemmer
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BARE_MAX_UNCOVERED",
    "CONFIDENCE_EXACT",
    "CONFIDENCE_SYNONYM",
    "CONFIDENCE_TEMPLATE",
    "CONFIDENCE_TEMPLATE_PARTIAL",
    "CONFIDENCE_TIE",
    "IntentLike",
    "Router",
    "SlotLike",
    "TemplateError",
    "Token",
    "Verdict",
    "content_stems",
    "is_template",
    "template_problems",
    "tokenize",
]

# Confidence bands (constants in kitsoki, never learned).
CONFIDENCE_EXACT = 1.00
CONFIDENCE_SYNONYM = 0.90
CONFIDENCE_TEMPLATE = 0.80
CONFIDENCE_TEMPLATE_PARTIAL = 0.65
CONFIDENCE_TIE = 0.50

#: A bare synonym only counts as a whole-utterance hit when the input has at
#: most this many content stems the synonym does not cover: a stray word in a
#: long paste is not a command.
BARE_MAX_UNCOVERED = 6


# --------------------------------------------------------------------------
# Protocols the story model satisfies
# --------------------------------------------------------------------------


class SlotLike(Protocol):
    type: str
    values: list[str]
    value_synonyms: dict[str, list[str]]


class IntentLike(Protocol):
    name: str
    examples: list[str]
    synonyms: list[str]
    slots: dict[str, SlotLike]


# --------------------------------------------------------------------------
# Lexing
# --------------------------------------------------------------------------

# kitsoki's builtin stoplist (internal/lex/stopwords.go): intentionally tiny,
# under-stripping is preferred so intent-bearing words are never lost.  Both
# surface forms and Porter2 stems of filler words are listed because the check
# runs against both.
BUILTIN_STOPWORDS: frozenset[str] = frozenset(
    {
        # articles, conjunctions, prepositions
        "a", "an", "the", "and", "or", "but",
        "of", "in", "on", "at", "to", "for", "from", "with", "by",
        # pronouns
        "i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours",
        "he", "him", "his", "she", "her", "hers", "it", "its",
        "they", "them", "their", "theirs",
        # auxiliaries / copula
        "is", "are", "was", "were", "be", "been", "being", "am",
        "do", "does", "did", "done",
        # demonstratives
        "this", "that", "these", "those",
        # filler (surface and Porter2 stem forms)
        "let", "let's", "lets", "please", "pleas",
        "just", "only", "onli", "also", "too",
        # lone s of a split contraction
        "s",
    }
)  # fmt: skip

# Approximation of UAX#29 word segmentation: runs of word characters, joined
# across an apostrophe/period between letters ("let's", "foo.py"), across a
# period/comma between digits ("3.14", "1,000") and across a colon between
# letters.  Everything else (spaces, hyphens, slashes, punctuation) separates.
_L = r"[^\W\d_]"
_TOKEN_RE = re.compile(
    rf"\w+(?:(?:(?<={_L})[.'\u2019:](?={_L})|(?<=\d)[.'\u2019,;](?=\d))\w+)*"
)

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(surface: str) -> str:
    # Porter2 only defines behaviour on alphabetic words; digit runs and mixed
    # alphanumerics ("200lbs", "v1.2") pass through unchanged.
    if not surface.isalpha():
        return surface
    return _STEMMER.stemWord(surface) or surface


_NUM_UNITS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4,
    "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_NUM_UNITS.update(
    twenty=20, thirty=30, forty=40, fifty=50, sixty=60, seventy=70, eighty=80, ninety=90
)
_NUM_SCALES = {
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
}
_DIGIT_FORM = re.compile(r"-?\d+(?:\.\d+)?")


def _spelled_number(words: list[str]) -> int | None:
    """Parse an English spelled cardinal ("two hundred and fifty") or None."""
    if not words:
        return None
    total = current = 0
    matched = expect_unit = False
    for raw in words:
        w = raw.strip().lower()
        if not w:
            return None
        if w == "and":
            if not matched:
                return None
            expect_unit = False
            continue
        if w in _NUM_UNITS:
            v = _NUM_UNITS[w]
            if v < 20:
                current += v
                expect_unit = False
            else:
                if expect_unit:  # "twenty thirty"
                    return None
                current += v
                expect_unit = True
            matched = True
            continue
        if w in _NUM_SCALES:
            mul = _NUM_SCALES[w]
            current = current or 1
            if mul == 100:
                current *= 100
            else:
                total += current * mul
                current = 0
            expect_unit = False
            matched = True
            continue
        return None
    return total + current if matched else None


@dataclass(frozen=True, slots=True)
class Token:
    surface: str  # NFKC + lowercased text
    norm: str  # Porter2 stem (the routing key)
    is_stop: bool
    is_num: bool


def tokenize(text: str, stop_extra: Iterable[str] = ()) -> list[Token]:
    """Split ``text`` into tokens the way kitsoki's ``lex.Tokenize`` does.

    ``stop_extra`` entries are matched literally against the stem and the
    lowercased surface (kitsoki does not lowercase them either).
    """
    if not text:
        return []
    extras = (
        stop_extra
        if isinstance(stop_extra, (set, frozenset))
        else frozenset(stop_extra)
    )
    s = unicodedata.normalize("NFKC", text).lower()
    out: list[Token] = []
    for m in _TOKEN_RE.finditer(s):
        surface = m.group()
        if not any(c.isalnum() for c in surface):
            continue
        norm = _stem(surface)
        is_stop = (
            norm in BUILTIN_STOPWORDS
            or surface in BUILTIN_STOPWORDS
            or norm in extras
            or surface in extras
        )
        is_num = bool(_DIGIT_FORM.fullmatch(surface)) or (
            surface.isalpha() and _spelled_number([surface]) is not None
        )
        out.append(Token(surface, norm, is_stop, is_num))
    return out


def _stems_of(tokens: Iterable[Token]) -> frozenset[str]:
    return frozenset(t.norm for t in tokens if not t.is_stop and t.norm)


def content_stems(text: str, stop_extra: Iterable[str] = ()) -> frozenset[str]:
    """The set of content (non-stopword) Porter2 stems of ``text``."""
    return _stems_of(tokenize(text, stop_extra))


def _normalise_exact(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


# --------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------


def is_template(phrase: str) -> bool:
    """A synonym containing ``{`` or ``}`` is a ``{slot}`` template."""
    return "{" in phrase or "}" in phrase


def _q(s: str) -> str:
    """Quote like Go's %q (close enough for slot and intent names)."""
    return json.dumps(s, ensure_ascii=False)


class TemplateError(ValueError):
    """A template synonym that kitsoki would refuse to load."""

    def __init__(self, intent: str, synonym: str, reason: str) -> None:
        self.intent = intent
        self.synonym = synonym
        self.reason = reason
        super().__init__(f"intent {_q(intent)}: synonym {_q(synonym)}: {reason}")


class _TemplateSyntaxError(Exception):
    pass


def _split_template(src: str) -> list[tuple[str, str]]:
    """Split ``src`` into ("lit", text) / ("cap", slot) segments."""
    out: list[tuple[str, str]] = []
    lit: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "{":
            end = src.find("}", i + 1)
            if end < 0:
                raise _TemplateSyntaxError(
                    f"unmatched '{{' at position {i} — every capture must close with '}}'"
                )
            name = src[i + 1 : end]
            if "{" in name:
                raise _TemplateSyntaxError(
                    f"nested or malformed capture starting at position {i}: {_q(src[i : end + 1])}"
                )
            name = name.strip()
            if not name:
                raise _TemplateSyntaxError(
                    f"empty capture {{}} at position {i} — every capture must name a slot"
                )
            if lit:
                out.append(("lit", "".join(lit)))
                lit = []
            out.append(("cap", name))
            i = end + 1
        elif c == "}":
            raise _TemplateSyntaxError(
                f"unmatched '}}' at position {i} — every '}}' must close a '{{slot_name}}' capture"
            )
        else:
            lit.append(c)
            i += 1
    if lit:
        out.append(("lit", "".join(lit)))
    return out


def _literal_norms(text: str, stop_extra: Iterable[str] = ()) -> tuple[str, ...]:
    # Template literals KEEP stopwords: "buy {items} for {cost}" anchors on "for".
    return tuple(t.norm for t in tokenize(text, stop_extra) if t.norm)


def _analyse_template(
    src: str, slot_names: Collection[str]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Return (problems, segments); problems are kitsoki's load-error reasons."""
    try:
        raw = _split_template(src)
    except _TemplateSyntaxError as exc:
        return [str(exc)], []
    problems: list[str] = []
    declared = "[" + " ".join(sorted(slot_names)) + "]"
    seen_unknown: set[str] = set()
    for kind, val in raw:
        if kind == "cap" and val not in slot_names and val not in seen_unknown:
            seen_unknown.add(val)
            problems.append(
                f"unknown slot {_q(val)} referenced by template (intent declares slots {declared})"
            )
    # A literal with no word-like token (whitespace, punctuation) separates
    # nothing: "{a} {b}" and "{a}, {b}" are adjacent captures too.
    segs = [(k, v) for k, v in raw if k == "cap" or _literal_norms(v)]
    for (k1, a), (k2, b) in pairwise(segs):
        if k1 == "cap" and k2 == "cap":
            problems.append(
                f"adjacent captures {{{a}}}{{{b}}} — templates require a literal token between captures"
            )
    if not any(k == "cap" for k, _ in segs):
        problems.append("template contains no {slot_name} captures")
    return problems, segs


def template_problems(template: str, slot_names: Iterable[str]) -> list[str]:
    """Reasons kitsoki would reject ``template`` for an intent with ``slot_names``.

    Returns ``[]`` when the template compiles.  The first reason is the one
    kitsoki reports (it stops at the first problem); later ones are extra.
    """
    return _analyse_template(template, frozenset(slot_names))[0]


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


# --------------------------------------------------------------------------
# Verdict
# --------------------------------------------------------------------------

Tier = Literal["exact", "synonym", "template", "tie", "none"]


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    intent: str | None
    confidence: float
    tier: Tier
    reason: str = ""
    pattern: str | None = None
    slots: dict[str, Any] = Field(default_factory=dict)
    missing_slots: list[str] = Field(default_factory=list)
    candidates: list[str] = Field(default_factory=list)


_NONE = Verdict(intent=None, confidence=0.0, tier="none")


# --------------------------------------------------------------------------
# Router
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    intent: str
    source: str
    kind: str  # "synonym" | "example"
    stems: frozenset[str]


@dataclass(frozen=True, slots=True)
class _CompiledTemplate:
    intent: str
    source: str
    segments: tuple[tuple[str, Any], ...]  # ("lit", norms) | ("cap", slot name)
    slot_types: dict[str, str]
    enums: dict[str, _EnumTable]
    literal_norms: frozenset[str]  # pre-filter: all must occur in the input


@dataclass
class _Merged:
    examples: list[str]
    synonyms: list[str]
    slots: dict[str, Any]


def _merge_intents(intents: Iterable[IntentLike]) -> dict[str, _Merged]:
    """Union duplicate declarations of an intent, like kitsoki's collectIntents.

    kitsoki folds the union back in LEXICOGRAPHIC order (sortedKeys), so the
    "first matching entry" and template tie-break order are alphabetical, not
    declaration order.  We mirror that for fidelity.  Slots: later
    declarations override earlier ones per slot name.
    """
    acc: dict[str, tuple[set[str], set[str], dict[str, Any]]] = {}
    for it in intents:
        exs, syns, slots = acc.setdefault(it.name, (set(), set(), {}))
        exs.update(str(e) for e in (it.examples or ()))
        syns.update(str(s) for s in (it.synonyms or ()))
        slots.update(dict(getattr(it, "slots", None) or {}))
    return {
        name: _Merged(sorted(exs), sorted(syns), slots)
        for name, (exs, syns, slots) in acc.items()
    }


def _find_literal(
    tokens: list[Token], start: int, want: tuple[str, ...]
) -> tuple[int, int] | None:
    """First (anchor, end) where ``want`` stems occur in order from ``start``.

    A token equal to the wanted stem is consumed even if it is a stopword;
    a non-matching stopword is skipped (absorbed); any other token breaks.
    """
    n = len(tokens)
    for i in range(start, n):
        j, k = i, 0
        anchor = -1
        while j < n and k < len(want):
            tok = tokens[j]
            if tok.norm == want[k]:
                if anchor < 0:
                    anchor = j
                j += 1
                k += 1
            elif tok.is_stop:
                j += 1
            else:
                break
        if k == len(want):
            return anchor, j
    return None


class Router:
    """Compiled semantic router over a set of intents (compile once, route many)."""

    def __init__(
        self,
        intents: Iterable[IntentLike],
        stop_extra: Iterable[str] = (),
        *,
        strict: bool = True,
    ) -> None:
        self.stop_extra: frozenset[str] = frozenset(stop_extra)
        self.problems: list[TemplateError] = []
        merged = _merge_intents(intents)
        self.intent_names: tuple[str, ...] = tuple(sorted(merged))

        self._exact: dict[str, dict[str, str]] = {}  # normalised -> {intent: source}
        self._entries: list[_Entry] = []
        self._by_stem: dict[str, list[int]] = {}
        self._templates: dict[str, list[_CompiledTemplate]] = {}

        for name in self.intent_names:
            m = merged[name]
            for ex in m.examples:
                key = _normalise_exact(ex)
                if key:
                    self._exact.setdefault(key, {}).setdefault(name, ex)
            for syn in m.synonyms:
                if is_template(syn):
                    ct = self._compile_template(name, syn, m.slots, strict)
                    if ct is not None:
                        self._templates.setdefault(name, []).append(ct)
                else:
                    self._add_entry(name, syn, "synonym")
            for ex in m.examples:
                # examples are never templates, even when they contain braces
                self._add_entry(name, ex, "example")

        self._template_intents = tuple(sorted(self._templates))

    # -- compile helpers ---------------------------------------------------

    def _add_entry(self, intent: str, source: str, kind: str) -> None:
        stems = content_stems(source, self.stop_extra)
        if not stems:  # empty / all-stopword phrases would match anything
            return
        eid = len(self._entries)
        self._entries.append(_Entry(intent, source, kind, stems))
        for s in stems:
            self._by_stem.setdefault(s, []).append(eid)

    def _compile_template(
        self, intent: str, src: str, slots: dict[str, Any], strict: bool
    ) -> _CompiledTemplate | None:
        problems, segs = _analyse_template(src, frozenset(slots))
        if problems:
            err = TemplateError(intent, src, problems[0])
            if strict:
                raise err
            self.problems.append(err)
            return None
        compiled: list[tuple[str, Any]] = []
        slot_types: dict[str, str] = {}
        enums: dict[str, _EnumTable] = {}
        for kind, val in segs:
            if kind == "cap":
                slot = slots[val]
                typ = str(getattr(slot, "type", "") or "string")
                slot_types[val] = typ
                if typ == "enum":
                    enums[val] = _enum_table(slot)
                compiled.append(("cap", val))
            else:
                compiled.append(("lit", _literal_norms(val, self.stop_extra)))
        lits = frozenset(n for kind, val in compiled if kind == "lit" for n in val)
        return _CompiledTemplate(intent, src, tuple(compiled), slot_types, enums, lits)

    # -- routing -------------------------------------------------------------

    def route(self, text: str, allow: Collection[str] | None = None) -> Verdict:
        """Route ``text``; ``allow`` restricts routing to those intent names."""
        if not text or not text.strip():
            return _NONE
        allowed = None if allow is None else frozenset(allow)
        if allowed is not None and not allowed:
            return _NONE

        hit = self._exact.get(_normalise_exact(text))
        if hit:
            names = [n for n in hit if allowed is None or n in allowed]
            if len(names) == 1:
                src = hit[names[0]]
                return Verdict(
                    intent=names[0],
                    confidence=CONFIDENCE_EXACT,
                    tier="exact",
                    reason=f"example:{src}",
                    pattern=src,
                )

        tokens = tokenize(text, self.stop_extra)
        if not tokens:
            return _NONE
        verdict = self._match_bare(tokens, allowed)
        if verdict is not None:
            return verdict
        return self._match_templates(tokens, allowed)

    def routes_to(self, text: str, intent: str) -> bool:
        """True when ``text`` routes to ``intent`` with confidence >= 0.65."""
        v = self.route(text)
        return v.intent == intent and v.confidence >= CONFIDENCE_TEMPLATE_PARTIAL

    def _match_bare(
        self, tokens: list[Token], allowed: frozenset[str] | None
    ) -> Verdict | None:
        bag = _stems_of(tokens)
        if not bag or not self._entries:
            return None
        ids: set[int] = set()
        for s in bag:
            ids.update(self._by_stem.get(s, ()))
        matched: dict[str, _Entry] = {}  # insertion order = entry id order
        for eid in sorted(ids):
            e = self._entries[eid]
            if e.intent in matched or (allowed is not None and e.intent not in allowed):
                continue
            if not e.stems <= bag or len(bag) - len(e.stems) > BARE_MAX_UNCOVERED:
                continue
            matched[e.intent] = e
        if not matched:
            return None
        if len(matched) == 1:
            ((name, e),) = matched.items()
            return Verdict(
                intent=name,
                confidence=CONFIDENCE_SYNONYM,
                tier="synonym",
                reason=f"{e.kind}:{e.source}",
                pattern=e.source,
            )
        # Leading-verb tie-break: the first content (non-stop, non-numeric)
        # token of an imperative is the command.
        lead = next((t.norm for t in tokens if not t.is_stop and not t.is_num), "")
        if lead:
            owners = [n for n, e in matched.items() if lead in e.stems]
            if len(owners) == 1:
                e = matched[owners[0]]
                return Verdict(
                    intent=owners[0],
                    confidence=CONFIDENCE_SYNONYM,
                    tier="synonym",
                    reason=f"leading-verb:{lead}",
                    pattern=e.source,
                )
        return _tie(matched)

    def _match_templates(
        self, tokens: list[Token], allowed: frozenset[str] | None
    ) -> Verdict:
        best: dict[str, tuple[_CompiledTemplate, dict[str, Any], list[str]]] = {}
        norms = frozenset(t.norm for t in tokens)
        for name in self._template_intents:
            if allowed is not None and name not in allowed:
                continue
            for tpl in self._templates[name]:
                if not tpl.literal_norms <= norms:
                    continue
                res = self._match_template(tpl, tokens)
                if res is None:
                    continue
                cur = best.get(name)
                if cur is None or len(res[0]) > len(cur[1]):
                    best[name] = (tpl, res[0], res[1])
        if not best:
            return _NONE
        if len(best) > 1:
            return _tie(best)
        ((name, (tpl, slots, missing)),) = best.items()
        if missing:
            return Verdict(
                intent=name,
                confidence=CONFIDENCE_TEMPLATE_PARTIAL,
                tier="template",
                reason=f"template_partial:{tpl.source}",
                pattern=tpl.source,
                slots=slots,
                missing_slots=sorted(missing),
            )
        return Verdict(
            intent=name,
            confidence=CONFIDENCE_TEMPLATE,
            tier="template",
            reason=f"template:{tpl.source}",
            pattern=tpl.source,
            slots=slots,
        )

    def _match_template(
        self, tpl: _CompiledTemplate, tokens: list[Token]
    ) -> tuple[dict[str, Any], list[str]] | None:
        slots: dict[str, Any] = {}
        missing: list[str] = []
        cursor = 0
        pending: str | None = None
        for kind, val in tpl.segments:
            if kind == "cap":
                if pending is not None:  # adjacent captures never match
                    return None
                pending = val
                continue
            found = _find_literal(tokens, cursor, val)
            if found is None:
                return None
            anchor, end = found
            if pending is not None:
                self._fill(tpl, pending, tokens[cursor:anchor], slots, missing)
                pending = None
            elif anchor != cursor:
                # unaccounted input before a literal: the positional contract
                # is broken (kitsoki: even a leading "please" misses here)
                return None
            cursor = end
        if pending is not None:
            self._fill(tpl, pending, tokens[cursor:], slots, missing)
        elif any(not t.is_stop for t in tokens[cursor:]):
            return None  # trailing content after a final literal
        return slots, missing

    @staticmethod
    def _fill(
        tpl: _CompiledTemplate,
        slot: str,
        captured: list[Token],
        slots: dict[str, Any],
        missing: list[str],
    ) -> None:
        typ = tpl.slot_types[slot]
        value: Any = None
        if captured:
            if typ == "int":
                value = _parse_int(captured)
            elif typ == "number":
                value = _parse_number(captured)
            elif typ == "bool":
                value = _parse_bool(captured)
            elif typ == "enum":
                value = _parse_enum(captured, tpl.enums[slot])
            else:  # "string" and anything else: the captured (lowercased) text
                value = " ".join(t.surface for t in captured).strip() or None
        if value is None:
            missing.append(slot)
        else:
            slots[slot] = value


def _tie(matched) -> Verdict:
    """Several intents match at the same tier: kitsoki's 0.50 tie band, candidates sorted."""
    cands = sorted(matched)
    return Verdict(intent=None, confidence=CONFIDENCE_TIE, tier="tie", reason=f"ambiguous:{len(cands)}",
                   candidates=cands)
