"""A refusal is spotted from the head of a raw tool-result string; that must agree with decoding it
whole, whatever escapes or multibyte characters sit where the head is cut."""

import json
import random

from msgspec import Raw

from core.transcripts import normalize as nz
from core.transcripts.claude_walk import refused_in


def _raw(text) -> Raw:
    return Raw(json.dumps(text, ensure_ascii=random.random() < 0.5).encode())


def test_refusal_seen_from_the_head_agrees_with_the_whole_text():
    rng = random.Random(17)
    pieces = ["\\", "\"", "é", "😀", "\n", "\t", "a", " ", "\u2028", "ü"] + list(nz.REJECTION_MARKERS)
    cases = []
    for marker in nz.REJECTION_MARKERS:
        cases += [marker, marker + "\n" + "😀" * 50, "x" + marker, marker[:-1], "\\" + marker]
    for _ in range(3000):
        start = rng.choice(["", *nz.REJECTION_MARKERS, "é" * rng.randint(1, 40), "😀" * rng.randint(1, 30)])
        cases.append(start + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 120))))
    for text in cases:
        assert refused_in(_raw(text)) == nz.is_rejection(text), repr(text[:80])


def test_a_rejection_after_escaped_characters_is_still_seen():
    marker = nz.REJECTION_MARKERS[0]
    assert refused_in(Raw(json.dumps(marker + ": \"why\"\n" + "é" * 400).encode()))
    assert not refused_in(Raw(json.dumps("\"" + marker).encode()))
