"""Where a proposal's lines would go in the live file, hunk by hunk, for an editor to draw.

A staged change is kept as a unified diff of the live file against the draft (FileChange.diff).
An editor needs, for each change block: the live lines it removes (to mark them) and the live
line the new lines follow (to draw them right there, not on some line above). Read from the diff
itself, so every block of a multi-hunk change stays separate.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class Hunk(BaseModel):
    after: int
    """0-based live line the added lines follow; -1 when they go before the first line."""
    removed: list[int] = Field(default_factory=list)
    """0-based live lines the block replaces or deletes."""
    added: list[str] = Field(default_factory=list)
    """The lines the block puts there."""


def hunks(diff: str) -> list[Hunk]:
    """The change blocks of a unified diff (as staging writes it: one file, `n` lines of context)."""
    out: list[Hunk] = []
    old_line = 0  # 1-based number of the next live line
    block: Hunk | None = None

    def close() -> None:
        nonlocal block
        if block is not None:
            out.append(block)
            block = None

    for line in diff.splitlines():
        match = _HUNK.match(line)
        if match:
            close()
            start = int(match.group(1))
            count = int(match.group(2)) if match.group(2) is not None else 1
            # "-0,0" is an empty live file; otherwise "-N,0" means "after line N" (a pure insertion).
            old_line = start + 1 if count == 0 else start
            continue
        if line.startswith(("---", "+++")) and block is None and old_line == 0:
            continue
        if line.startswith("\\"):
            continue  # "\ No newline at end of file"
        tag, text = line[:1], line[1:]
        if tag == " ":
            close()
            old_line += 1
        elif tag == "-":
            if block is None:
                block = Hunk(after=old_line - 2)
            block.removed.append(old_line - 1)
            old_line += 1
        elif tag == "+":
            if block is None:
                block = Hunk(after=old_line - 2)
            block.added.append(text)
    close()
    return out
