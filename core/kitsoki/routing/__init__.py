"""Deterministic port of kitsoki's intent router ("semroute").

kitsoki resolves a typed utterance to an intent in tiers before it ever asks an
LLM.  This module reproduces the deterministic ones so the miner can answer two
questions without running kitsoki:

* does a phrasing a user typed ALREADY route to an intent of a story (then we
  must not propose it as a new synonym), and
* which intent does a flow fixture's ``input: "<text>"`` turn route to.

Tiers, in order (first hit wins):

1. ``exact``    -- the input equals (case/space-normalised) an example of exactly
                   one allowed intent (kitsoki's deterministic tier): confidence 0.90,
                   as ``semroute.Match`` scores it.
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

from core.kitsoki.routing.lex import BUILTIN_STOPWORDS, Token, content_stems, tokenize
from core.kitsoki.routing.router import (
    BARE_MAX_UNCOVERED,
    CONFIDENCE_EXACT,
    CONFIDENCE_SYNONYM,
    CONFIDENCE_TEMPLATE,
    CONFIDENCE_TEMPLATE_PARTIAL,
    CONFIDENCE_TIE,
    IntentLike,
    Router,
    SlotLike,
    Verdict,
)
from core.kitsoki.routing.templates import TemplateError, is_template, template_problems

__all__ = [
    "BARE_MAX_UNCOVERED",
    "BUILTIN_STOPWORDS",
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
