"""What a draft writes into a story as an intent's examples or synonyms: a few short, normalized phrasings of
the ask, never a person's prompt as they typed it.

The evidence (every phrasing with its count, the cites) stays in the card; the user's YAML gets at most
MAX_EXAMPLES phrasings, each the ask alone (politeness, context and pasted text already gone: a recipe's
phrasings are core/mining/asks.py's short forms), cut at the first clause after it, at most MAX_WORDS words
or MAX_CHARS characters, with no path, id or number a person would not type again, nothing a redaction
touched, and each one asking in different words from the ones before it.
"""

from __future__ import annotations

import re
import unicodedata

from core.kitsoki.routing import content_stems
from core.mining.recipes import Recipe
from core.proposals.mapper import usable_phrasings

MAX_EXAMPLES = 3
MAX_WORDS = 9
MAX_CHARS = 60

_PLACEHOLDER = re.compile(r"<\w+>")
_SPECIFIC = re.compile(r"[/\\]|\b\d+\b|#\d|\b[0-9a-f]{7,40}\b|https?:|@|`")
_CUT = re.compile(r"\s*(?:[,;:(]|\s-\s|\s(?:we|i|you|they|it's|because|since|so that|thanks|thank you|pls|please)\b)")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CJK_CUT = re.compile(r"[、，,。．！？!?；;（(]")
_TRAILING = frozenset("a an the to of in on at for with from into and or by".split())


def example_text(phrasing: str) -> str | None:
    """A phrasing as an example, or None when it cannot be one (too long, too specific, held a secret)."""
    from core.transcripts.redact import redact_text  # the rule set is loaded when an intent's examples are drafted

    text = " ".join(unicodedata.normalize("NFKC", _PLACEHOLDER.sub(" ", phrasing)).split())
    if not text or "[REDACTED" in text or redact_text(text) != text:
        return None
    if _CJK.search(text):
        text = _CJK_CUT.split(text, maxsplit=1)[0].strip()
        limit_ok = len(text) <= MAX_CHARS // 2
    else:
        head = _CUT.split(text, maxsplit=1)[0]
        words = [w.strip(".!?\"'") for w in head.split()]
        while words and words[-1].lower() in _TRAILING:
            words.pop()
        text = " ".join(w for w in words if w)
        limit_ok = len(words) <= MAX_WORDS and len(text) <= MAX_CHARS
    if not text or not limit_ok or _SPECIFIC.search(text):
        return None
    return text


def examples_for(recipe: Recipe, existing: set[str] = frozenset(), limit: int = MAX_EXAMPLES) -> list[str]:
    """Up to `limit` examples for the recipe's ask, most asked first, each in words the earlier ones do not
    already hold (stem-bag routing is a subset test: a phrase whose words include an earlier pick's adds
    nothing), none already one of `existing` (lower-cased)."""
    picked: list[str] = []
    bags: list[frozenset[str]] = []
    for phrasing in sorted(usable_phrasings(recipe), key=lambda p: (-p.count, len(p.text), p.text)):
        text = example_text(phrasing.text)
        if text is None or text.lower() in existing or text.lower() in (p.lower() for p in picked):
            continue
        bag = content_stems(text)
        if not bag or any(b <= bag for b in bags):
            continue
        picked.append(text)
        bags.append(bag)
        if len(picked) >= limit:
            break
    return picked
