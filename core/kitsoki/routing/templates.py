"""`{slot}` synonym templates: splitting, kitsoki's compile-time refusals, literal stems."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from itertools import pairwise

from core.kitsoki.routing.lex import tokenize

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


