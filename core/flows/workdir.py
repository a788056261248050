"""The working folder a flow run sees: the workspace's root, whatever the process's own cwd is.

kitsoki resolves a few paths against its process's working directory (a repo-relative starlark
script, `host.artifacts_dir`'s default root, the tickets root, the starlark inspector's root). Its
gate and its CI run `kitsoki test flows` from the project's root, so that is the folder our runner
uses: a language server started by an editor in another folder, or `flows --repo X` run from
elsewhere, must give the verdicts kitsoki gives in the project, not ones that depend on where the
process happened to start.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_WORKDIR: contextvars.ContextVar[str | None] = contextvars.ContextVar("kitsoki_flow_workdir", default=None)


def workdir() -> str:
    """The folder relative paths of this run resolve against (the process cwd outside a run)."""
    return _WORKDIR.get() or os.getcwd()


def in_workdir(path: str) -> str:
    """`path` as the run sees it: absolute as given, else joined to the run's working folder."""
    return path if os.path.isabs(path) else os.path.join(workdir(), path)


@contextmanager
def running_in(folder: Path | str | None) -> Iterator[None]:
    """Flows run inside this block resolve cwd-relative paths against `folder` (None: leave as is)."""
    if folder is None:
        yield
        return
    token = _WORKDIR.set(os.path.abspath(folder))
    try:
        yield
    finally:
        _WORKDIR.reset(token)
