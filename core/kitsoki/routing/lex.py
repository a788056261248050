"""Lexing as kitsoki's `internal/lex`: NFKC, lowercase, word segmentation, Porter2 stems for
purely alphabetic words, and kitsoki's deliberately tiny builtin stoplist (checked against both the
surface and the stem). Spelled English cardinals are recognised for the number parsers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


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

# Words split as Unicode UAX#29 (kitsoki uses clipperhouse/uax29): the `regex` module's WORD flag
# makes \b the default Unicode word boundary, so "let's", "foo.py", "3.14" and "1,000" stay whole,
# "e-mail" splits, and each CJK ideograph is a word of its own.
# The `regex` module and the stemmer are loaded on the first word lexed: a command that imports the router
# without routing anything (an accept validates paths through core.proposals.validate) does not pay for them.
_BOUNDARY: Any = None


def _segments(text: str) -> list[str]:
    global _BOUNDARY
    if _BOUNDARY is None:
        import regex

        _BOUNDARY = regex.compile(r"(?w)\b")
    return [part for part in _BOUNDARY.split(text) if part]


_STEMMER: Any = None


@lru_cache(maxsize=65536)
def _stem(surface: str) -> str:
    # Porter2 only defines behaviour on alphabetic words; digit runs and mixed
    # alphanumerics ("200lbs", "v1.2") pass through unchanged.
    global _STEMMER
    if not surface.isalpha():
        return surface
    if _STEMMER is None:
        import snowballstemmer

        _STEMMER = snowballstemmer.stemmer("english")
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
    for surface in _segments(s):
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


