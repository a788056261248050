"""Shared helpers that turn raw record fields into the normalized model's values.

Both readers use these so a Claude prompt and a Pi prompt are cut, classified and redacted alike.
"""

from __future__ import annotations

import re
from datetime import datetime

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


def trim_input(value, limit: int = INPUT_VALUE_CHARS):
    """Cut long strings anywhere in a tool input, keeping its shape."""
    if type(value) is str:
        return cut(value, limit)
    if type(value) is dict:
        return {k: trim_input(v, limit) for k, v in value.items()}
    if type(value) is list:
        return [trim_input(v, limit) for v in value]
    return value


def clean_input(value, redact: bool) -> dict:
    if type(value) is not dict:
        value = {"value": value} if value is not None else {}
    value = trim_input(value)
    return redact_value(value) if redact else value


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
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
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
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if type(text) is str:
                parts.append(text)
        elif kind == "image":
            parts.append("[image]")
    return "\n".join(parts)
