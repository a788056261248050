"""Normalized phrasing of a prompt and its stem bag, for grouping requests that mean the same.

Modeled on kitsoki's stem-bag routing: lowercase, drop what varies between asks (paths, URLs,
numbers, ids), drop function words, strip common suffixes, compare bags with Dice.
"""

from __future__ import annotations

import functools
import re

_URL = re.compile(r"https?://\S+")
_EXTENSIONS = r"(?:py|go|ts|tsx|js|jsx|rs|rb|ex|exs|md|ya?ml|json|toml|sh|css|html)"
_PATH = re.compile(r"[\w.~@-]*(?:/[\w.@-]+)+/?|\b[\w-]+\." + _EXTENSIONS + r"\b")
_ID = re.compile(r"\b(?=[a-z0-9-]*\d)[a-z0-9]+(?:-[a-z0-9]+)+\b|\b[0-9a-f]{7,40}\b|#\d+\b|\b\d+(?:\.\d+)*\b")

# The same substitutions, faster (the two above were most of the time spent cutting episodes: each
# tries a match at every position of the prompt). Each stands for its pattern exactly, where it is used:
# - every _PATH match lies inside a maximal run of the characters its branches take (_RUN: none of
#   them is a space, and at a run's edge the text holds a non-word character, as the edge of the run
#   alone does for `\b`), so substituting run by run is substituting in the whole text;
# - a run without "/" can only match the second branch (_PATH_FILE), and that needs a dot before an
#   extension (_FILE_DOT) to match at all;
# - _PATH_ANY is _PATH with its leading run possessive: that run holds no "/", so giving a character of
#   it back can never let the "/" that must follow match (the greedy pattern's backtracking never
#   succeeded);
# - without a digit (\d) in the text only _ID's hexadecimal branch can match (_ID_HEX), and it needs
#   seven hexadecimal characters in a row (_HEX_RUN).
# tests/test_signatures.py compares normalize() with the plain patterns on the corpus and on random text.
_PATH_ANY = re.compile(r"[\w.~@-]*+(?:/[\w.@-]+)+/?|\b[\w-]+\." + _EXTENSIONS + r"\b")
_RUN = re.compile(r"([\w.~@/-]+)")
_PATH_FILE = re.compile(r"\b[\w-]+\." + _EXTENSIONS + r"\b")
_FILE_DOT = re.compile(r"\." + _EXTENSIONS + r"\b")
_ID_HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
_HEX_RUN = re.compile(r"[0-9a-f]{7}")
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"[a-z][a-z']+")
_SPACE_PUNCT = re.compile(r" ([.,!?;:])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")

STOPWORDS = frozenset(
    """a an the and or but if then else so to of in on at by for with from into onto about as is are was were
    be been being am do does did done have has had it its this that these those there here i me my we our you
    your he she they them their what which who whom how why when where can could should would will shall may
    might must please pls just also too very really some any all each every no not only own same than up down
    out over under again further once let lets let's ok okay now see use using via get got make sure go""".split()
)
_SUFFIXES = ("ations", "ation", "ingly", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Cached: prompts are written in a few thousand words."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if suffix == "ies":
                word += "y"
            break
    return word


ASK_CHARS = 300
"""How much of a prompt decides what it asks for; pasted logs and context after that do not."""


def normalize(text: str) -> str:
    """The start of a prompt with the parts that vary between asks replaced by placeholders."""
    # _REDACTED was applied here to the lowercased text, which it can never match (it looks for
    # "[REDACTED:"): dropped as dead, the phrasing and stems of every prompt stay what they were.
    text = text[: ASK_CHARS * 2].lower()
    if "://" in text:  # a URL needs one
        text = _URL.sub(" <url> ", text)
    file_dot = _FILE_DOT.search(text) is not None
    if "/" in text:
        parts = _RUN.split(text)  # text between runs, then a run, and so on
        for i in range(1, len(parts), 2):
            part = parts[i]
            if "/" in part:
                parts[i] = _PATH_ANY.sub(" <path> ", part)
            elif file_dot and "." in part:
                parts[i] = _PATH_FILE.sub(" <path> ", part)
        text = "".join(parts)
    elif file_dot:
        text = _PATH_FILE.sub(" <path> ", text)
    if _DIGIT.search(text) is not None:
        text = _ID.sub(" <id> ", text)
    elif _HEX_RUN.search(text) is not None:
        text = _ID_HEX.sub(" <id> ", text)
    return _SPACE_PUNCT.sub(r"\1", " ".join(text.split()))[:ASK_CHARS]


def normalize_plainly(text: str) -> str:
    """normalize() with the plain patterns, the specification of its fast paths (tests compare them)."""
    text = text[: ASK_CHARS * 2].lower()
    text = _URL.sub(" <url> ", text)
    text = _PATH.sub(" <path> ", text)
    text = _ID.sub(" <id> ", text)
    return _SPACE_PUNCT.sub(r"\1", " ".join(text.split()))[:ASK_CHARS]


def phrasing(text: str) -> str:
    """The first sentence of the normalized prompt: how a recipe shows an ask."""
    return _phrasing_of(normalize(text))


def stems(text: str) -> frozenset[str]:
    """Content-word stems of the normalized prompt (placeholders excluded)."""
    return _stems_of(normalize(text))


def phrasing_and_stems(text: str) -> tuple[str, frozenset[str]]:
    """phrasing(text) and stems(text), normalizing the prompt once."""
    norm = normalize(text)
    return _phrasing_of(norm), _stems_of(norm)


def _phrasing_of(norm: str) -> str:
    return _SENTENCE_END.split(norm, maxsplit=1)[0][:160] if norm else ""


_PLACEHOLDER = re.compile(r"<\w+>")


def _stems_of(norm: str) -> frozenset[str]:
    norm = _PLACEHOLDER.sub(" ", norm)
    return frozenset(stem(w) for w in _WORD.findall(norm) if w not in STOPWORDS)


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return 2 * len(a & b) / (len(a) + len(b))
