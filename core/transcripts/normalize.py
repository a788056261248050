"""Shared helpers that turn raw record fields into the normalized model's values.

Both readers use these so a Claude prompt and a Pi prompt are cut, classified and redacted alike.
"""

from __future__ import annotations

import re
from datetime import datetime

from core.transcripts.records import BLOCK_TYPES
from core.transcripts.redact import redact_text, redact_value

PROMPT_CHARS = 32_000
"""A human prompt longer than this (a pasted log) is cut; the miner only needs its phrasing."""
TEXT_CHARS = 1_000
"""Assistant and injected text is context, not evidence: keep a head."""
INPUT_VALUE_CHARS = 500
"""Long tool-input strings (Write content, Edit old/new strings) are cut to a head."""
OUTPUT_HEAD_CHARS = 500

INTERRUPT_MARKERS = ("[Request interrupted by user", "[Request cancelled by user")
REJECTION_MARKERS = (
    "The user doesn't want to proceed with this tool use",
    "User rejected tool use",
)
_EXIT_CODE = re.compile(r"^(?:Exit code|exit code:?|Command exited with code)\s*(-?\d+)", re.M)
_AGENT_ID_TAIL = re.compile(r"agentId:\s*([A-Za-z0-9_-]+)")


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more chars]"


def clean_text(text: str, limit: int, redact: bool) -> str:
    text = cut(text, limit)
    return redact_text(text) if redact else text


INPUT_DEPTH = 16
"""Containers nested deeper than this in a tool input are replaced by a note: real inputs are a few
levels deep, and a line nested a thousand levels (which orjson still parses) must not make every
later step recurse that deep or fail to write it back out (orjson writes at most 255 levels)."""
DEEPER = f"[nested deeper than {INPUT_DEPTH} levels: not kept]"


_INT_RANGE = range(-(2**63), 2**64)
"""orjson reads a JSON integer outside 64 bits as a float; msgspec keeps it an int. A tool input
holds what orjson would have made of it, so that reading a line either way gives the same input."""


def trim_input(value, limit: int = INPUT_VALUE_CHARS, depth: int = 0):
    """Cut long strings anywhere in a tool input, keeping its shape down to INPUT_DEPTH levels."""
    if type(value) is str:
        return cut(value, limit)
    if type(value) is int:
        return value if value in _INT_RANGE else float(value)
    if type(value) is dict:
        if depth >= INPUT_DEPTH:
            return DEEPER
        return {k: trim_input(v, limit, depth + 1) for k, v in value.items()}
    if type(value) is list:
        if depth >= INPUT_DEPTH:
            return DEEPER
        return [trim_input(v, limit, depth + 1) for v in value]
    return value


def clean_input(value, redact: bool) -> dict:
    if type(value) is not dict:
        value = {"value": value} if value is not None else {}
    value = trim_input(value)
    return redact_value(value) if redact else value


_HEX_ID = "0123456789abcdef-"


def clean_id(value: str | None, redact: bool) -> str | None:
    """An id or other short field taken from a record, redacted like any text that leaves a reader.
    Lowercase hex ids (uuids, Pi's entry ids) cannot hold anything redaction looks for: kept as they are
    without a scan, since a reader meets one on every line."""
    if not redact or value is None or not value.strip(_HEX_ID):
        return value
    return redact_text(value)


class Cleaner(dict):
    """Redaction of the few distinct values a field takes over a file (tool names, models, subtypes),
    done once per value."""

    def __init__(self, redact: bool) -> None:
        super().__init__()
        self.redact = redact

    def __missing__(self, value: str) -> str:
        out = redact_text(value) if self.redact else value
        if len(self) < 4096:
            self[value] = out
        return out


def clean_keys(counts: dict[str, int]) -> dict[str, int]:
    """Counts keyed by a value read from records (record types): the keys redacted."""
    out: dict[str, int] = {}
    for key, n in counts.items():
        key = clean_id(key, True)
        out[key] = out.get(key, 0) + n
    return out


def exit_code_of(text: str) -> int | None:
    m = _EXIT_CODE.search(text[:200])
    return int(m.group(1)) if m else None


def agent_id_in(text: str) -> str | None:
    m = _AGENT_ID_TAIL.search(text[-300:])
    return m.group(1) if m else None


def is_rejection(text: str) -> bool:
    return text.startswith(REJECTION_MARKERS)


def is_interrupt(text: str) -> bool:
    return text.lstrip().startswith(INTERRUPT_MARKERS)


def widen(first: str | None, last: str | None, ts) -> tuple[str | None, str | None]:
    """The [first, last] window of ISO timestamps stretched to include `ts` (same-format ISO strings
    order like the instants they name, so no parse is needed on the hot path)."""
    if type(ts) is not str:
        return first, last
    return (ts if first is None or ts < first else first), (ts if last is None or ts > last else last)


def parse_time(value) -> datetime | None:
    """ISO-8601 strings (with Z) and Unix milliseconds; None for anything else."""
    try:
        if type(value) is str:
            # Python 3.11 reads a trailing "Z" itself; "z" (which it does not) is rare enough to replace
            return datetime.fromisoformat(value if "z" not in value else value.replace("Z", "+00:00"))
        if type(value) in (int, float):
            from datetime import timezone

            return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def blocks_text(content) -> str:
    """Text of a string or a list of content blocks (text blocks joined; images named)."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""
    parts = []
    for block in content:
        if type(block) is dict:
            kind = block.get("type")
            text = block.get("text") if kind == "text" else None
        elif type(block) in BLOCK_TYPES:  # a decoded content block (core/transcripts/records.py)
            kind = block.type
            text = block.text
        else:
            continue
        if kind == "text":
            if type(text) is str:
                parts.append(text)
        elif kind == "image":
            parts.append("[image]")
    return "\n".join(parts)
