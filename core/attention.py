"""What a person must be told before anything else, on every command and in the status.

Some states make every other answer misleading if they go unsaid: a signing key that cannot be
used (every card is then untrusted, so the inbox would look empty), and an accept that is not
settled (its change may be in the tree, never gated, with no verdict: core.apply.resolve). Each
face (the CLI before every workspace command, the language server's status and proposal lists)
prints these lines as they are; each says what is wrong, where, and how to fix it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from core.apply.resolve import Unsettled, unsettled
from core.authn import key_problem

log = logging.getLogger(__name__)


def attention(workspace: Path, *, open_accepts: list[Unsettled] | None = None) -> list[str]:
    """The lines a person must read first (empty when all is well). Reads only."""
    lines = []
    problem = key_problem(workspace)
    if problem:
        lines.append(problem)
    try:
        found = open_accepts if open_accepts is not None else unsettled(workspace)
    except Exception as exc:  # noqa: BLE001 - a status line must never be what fails a command
        log.warning("could not list unsettled accepts: %s", exc)
        found = []
    lines.extend(item.summary() for item in found)
    return lines
