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


# -- what an accept will do, from the gate's own preview (core.apply.gates.GatePreview) ----------------
# Rendered from the preview's fields as they are (held, gated, kind, runs, note, skipped), never
# re-derived from the change: the preview is the gate's own scope function, and what it says is what
# happens. Duck-typed, so a preview with more fields renders the same.

_BRIEF_CMD = 40


def accept_brief(preview) -> str:
    """A few words for a lens or a list row: `runs 2 flow files`, `no flow runs: kept after checks`,
    `would be held, not kept`, `runs pytest -q`."""
    if preview is None:
        return "asks first"
    if getattr(preview, "held", False):
        return "would be held, not kept"
    if preview.kind == "command":
        command = " ".join(preview.runs)
        return f"runs {command if len(command) <= _BRIEF_CMD else command[:_BRIEF_CMD - 1] + '…'}"
    if preview.kind == "unknown":
        return "cannot be checked now"
    if not getattr(preview, "gated", True):
        return "no flow runs: kept after checks"
    # `runs` names flow files (a file may hold several flows, as kitsoki's fixtures do): say files.
    return f"runs {plural(len(preview.runs), 'flow file')}" if preview.runs else "no flow runs"


def accept_says(preview, files: Sequence[str] = ()) -> str:
    """What an accept does, in a sentence or two, for the confirmation and the question card:
    the files it changes, what judges the change and what happens when it fails."""
    where = ", ".join(files) or "no file"
    if preview is None:
        return f"This changes {where}; the flow gate decides whether it is kept."
    note = (getattr(preview, "note", None) or "").rstrip(".")
    skipped = list(getattr(preview, "skipped", []) or [])
    tail = f" Not gated: {'; '.join(skipped)}." if skipped else ""
    if getattr(preview, "held", False) or preview.kind == "unknown" or not getattr(preview, "gated", True):
        return f"This changes {where}; {note or 'nothing would judge this change'}.{tail}"
    if preview.kind == "command":
        return (f"This changes {where}, then runs the gate command `{' '.join(preview.runs)}`. The change is kept "
                f"only if it passes; otherwise every byte is restored.{tail}")
    files_run = ", ".join(preview.runs)
    return (f"This changes {where}, then runs the flows in {plural(len(preview.runs), 'flow file')} ({files_run}). "
            f"The change is kept only if they all pass; otherwise every byte is restored.{tail}")
