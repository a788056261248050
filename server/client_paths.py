"""Paths that come from a client (a request, initializationOptions) or a command line, checked
before any file-system call sees them: a name no file system allows (a NUL, a component over
NAME_MAX, a path over PATH_MAX) would otherwise surface as an OSError traceback from deep inside a
stat(), instead of a refusal that names the argument. No imports: the CLI checks its arguments
before loading the domain.
"""

from __future__ import annotations

import os

PATH_MAX = 4095
"""Bytes in a path, less the terminating NUL (Linux's PATH_MAX is 4096)."""
NAME_MAX = 255
"""Bytes in one component of a path."""


def path_problem(text: str, *, absolute: bool = False) -> str | None:
    """What makes `text` unusable as a path (None when nothing does)."""
    if "\x00" in text:
        return "a path cannot contain a NUL character"
    encoded = os.fsencode(text) if _encodable(text) else None
    if encoded is None:
        return "a path must be valid Unicode (it holds a lone surrogate)"
    if len(encoded) > PATH_MAX:
        return f"a path of {len(encoded)} bytes is longer than any file system allows ({PATH_MAX})"
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > NAME_MAX:
        return f"a path with a {longest}-byte name is longer than file systems allow ({NAME_MAX} per name)"
    if absolute and not (text.startswith("/") or (len(text) > 2 and text[1] == ":" and text[2] in "\\/")):
        return f"{text[:80]!r} is not an absolute path"
    return None


def _encodable(text: str) -> bool:
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return True
