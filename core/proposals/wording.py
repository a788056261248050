"""How a proposal reads to a person: counts, transcript cites, the actions seen, the mapper's
verdict, flow failures. One place, so the CLI, the hover, the summary and both editors say the
same thing the same way."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

_SHELL_TOOLS = frozenset({"bash", "shell", "exec", "exec_command", "local_shell"})
_EMPTY_GO_VALUE = re.compile(r"\b(got|want)  \(")


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 proposal`, `2 proposals` (`many` for irregular plurals)."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def cite_text(path: str | Path, line_start: int, line_end: int | None = None) -> str:
    """`file.jsonl:12`, or `file.jsonl:12-14` for a range."""
    name = Path(path).name
    if line_end is None or line_end == line_start:
        return f"{name}:{line_start}"
    return f"{name}:{line_start}-{line_end}"


def actions_text(signatures: Sequence[str], limit: int = 4) -> str:
    """The actions of a recipe as a person reads them: a shell command once, whichever agent ran
    it (`Bash: pytest` from Claude Code and `bash: pytest` from Pi are one `pytest`), others as
    `Tool: what`."""
    shown: list[str] = []
    for signature in signatures:
        tool, sep, what = signature.partition(": ")
        text = what if sep and tool.lower() in _SHELL_TOOLS else signature
        if text not in shown:
            shown.append(text)
    more = len(shown) - limit
    listed = ", ".join(f"`{text}`" for text in shown[:limit])
    return listed + (f" (+{more} more)" if more > 0 else "")


def classification_text(classification: str, near: str | None = None) -> str:
    """The mapper's verdict in words (the kitsoki term in brackets)."""
    if classification == "GAP":
        return "New: not modeled yet (GAP)"
    if classification == "ENRICH":
        return f"Extends {near} (ENRICH)" if near else "Extends what is modeled (ENRICH)"
    if classification == "ALREADY-MODELED":
        return f"Already modeled by {near}" if near else "Already modeled"
    return classification


def kept_text(gated: bool) -> str:
    """What kept an accept, as both editors show it after `kept "<title>"`: a change no flow
    exercises was never judged by a flow, so it never reads as green."""
    return "flows green" if gated else "structural checks passed, no flow exercises it"


def ungated_note(allow: bool) -> str:
    """What an accept of a change no flow exercises does, in one line: the confirmation both editors
    show before an accept says it after "This changes <files>; " (what would exercise the change
    is a list of its own, `GatePreview.would_exercise`)."""
    if allow:
        return "no flow exercises this change: kept after the structural checks (miner.ungated: allow)"
    return "no flow exercises this change: an accept is held, not kept (miner.ungated: hold)"


def readable_failure(text: str) -> str:
    """A flow failure as kitsoki prints it (Go's `%v` of an empty string is nothing at all:
    `got  (string)`), with empty values shown as `""`."""
    return _EMPTY_GO_VALUE.sub(r'\1 "" (', text)


def readable_failures(lines: Iterable[str]) -> list[str]:
    return [readable_failure(line) for line in lines]
