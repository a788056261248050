"""What a load looked at besides the bytes of the files it read: environment variables and paths.

A load's conclusions kept past the load (a story loaded once and reused by the next load in the
process; core.proposals.memo's across processes) are true only while everything the load depended
on answers the same. The files it read are keyed by their signatures and content; this module
records the rest: every environment variable a check or an import's resolution asked about (with
the value it saw, None when unset) and every path whose existence or kind it tested (with the
answer). A conclusion reused is checked against its probes (`still`), and its probes are replayed
into the load that reuses it, so the whole load's record stays complete. Nothing else of the
environment counts: a shell's TERM or a terminal's VSCODE_* never makes a memo miss.

Probes go to every recording open in the current context (`recording()`; a story's load nests in
the workspace's). A name or a path seen with two answers within one recording marks it `changed`:
what it concluded may rest on either, so it is never kept.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

MAX_PROBES = 20_000
"""A recording with more probes than this is not kept (a memo only saves time)."""


class Recording:
    """The probes of one load (or one part of it)."""

    def __init__(self) -> None:
        self.env: dict[str, str | None] = {}
        self.paths: dict[str, bool] = {}
        """"e<path>" exists, "f<path>" is a regular file, "d<path>" is a folder, "m<folder>" its
        go.mod declares module kitsoki -> the answer."""
        self.changed = False

    def note(self, record: dict, key: str, answer: Any) -> None:
        if record.setdefault(key, answer) != answer:
            self.changed = True

    def frozen(self) -> dict[str, Any] | None:
        """The probes as JSON, or None when something was seen with two answers."""
        return None if self.changed else {"env": dict(self.env), "paths": dict(self.paths)}

    def snapshot(self) -> dict[str, Any] | None:
        """frozen(), or None when not worth keeping across processes: too many, or answering
        otherwise already."""
        recorded = self.frozen()
        if recorded is None or len(self.env) + len(self.paths) > MAX_PROBES:
            return None
        return recorded if still(recorded) else None


_active: contextvars.ContextVar[tuple[Recording, ...]] = contextvars.ContextVar("kitsoki_probed", default=())


@contextmanager
def recording() -> Iterator[Recording]:
    """Record every probe made in this context until the block ends (into the enclosing ones too)."""
    rec = Recording()
    token = _active.set((*_active.get(), rec))
    try:
        yield rec
    finally:
        _active.reset(token)


def _note(kind: str, key: str, answer: Any) -> None:
    for rec in _active.get():
        rec.note(rec.env if kind == "env" else rec.paths, key, answer)


def replay(recorded: dict[str, Any] | None) -> None:
    """A kept conclusion is used: its probes become the current recordings' own."""
    if not recorded:
        return
    for name, value in recorded["env"].items():
        _note("env", name, value)
    for probe, answer in recorded["paths"].items():
        _note("path", probe, answer)


class _Environment(Mapping[str, str]):
    """os.environ as the loader reads it, recording every name asked about."""

    def _seen(self, name: str) -> str | None:
        value = os.environ.get(name)
        _note("env", name, value)
        return value

    def __getitem__(self, name: str) -> str:
        value = self._seen(name)
        if value is None:
            raise KeyError(name)
        return value

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        value = self._seen(name)
        return default if value is None else value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._seen(name) is not None

    def __iter__(self) -> Iterator[str]:  # a check that lists the environment depends on all of it
        names = list(os.environ)
        for name in names:
            self._seen(name)
        return iter(names)

    def __len__(self) -> int:
        return len(os.environ)


ENV: Mapping[str, str] = _Environment()
"""The environment every load-time check and import resolution reads by default."""


def _kitsoki_go_module(folder: str) -> bool:
    """Whether `folder`/go.mod declares module kitsoki (or */kitsoki): kitsoki's mark of its checkout."""
    try:
        with open(os.path.join(folder, "go.mod"), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("module "):
            module = line[len("module"):].strip().strip("\"'")
            return module == "kitsoki" or module.endswith("/kitsoki")
    return False


_TESTS = {"e": os.path.exists, "f": os.path.isfile, "d": os.path.isdir, "m": _kitsoki_go_module}


def _probe(kind: str, path: str | os.PathLike[str]) -> bool:
    path = os.fspath(path)
    answer = _TESTS[kind](path)
    _note("path", kind + path, answer)
    return answer


def exists(path: str | os.PathLike[str]) -> bool:
    return _probe("e", path)


def isfile(path: str | os.PathLike[str]) -> bool:
    return _probe("f", path)


def isdir(path: str | os.PathLike[str]) -> bool:
    return _probe("d", path)


def kitsoki_go_module(folder: str | os.PathLike[str]) -> bool:
    return _probe("m", folder)


def still(recorded: Any) -> bool:
    """Whether every probe in `recorded` (frozen() or snapshot()) answers the same now; never for None."""
    try:
        if any(os.environ.get(name) != value for name, value in recorded["env"].items()):
            return False
        return all(_TESTS[probe[0]](probe[1:]) is answer for probe, answer in recorded["paths"].items())
    except (KeyError, TypeError, AttributeError, IndexError):
        return False


class Probes:
    """What the definition checks looked at besides the definition: the environment variables they
    asked about and the files whose existence they tested. core.kitsoki.checked keeps a verdict with
    its probes and trusts it only while every probe still answers the same (`still`)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = _RecordedEnv(ENV if env is None else env)
        self.paths: dict[str, bool] = {}
        """"e<path>" (exists) / "f<path>" (is a regular file) -> the answer."""

    def exists(self, path: str) -> bool:
        found = self.paths["e" + path] = exists(path)
        return found

    def isfile(self, path: str) -> bool:
        found = self.paths["f" + path] = isfile(path)
        return found

    def as_json(self) -> dict[str, Any]:
        return {"env": dict(self.env.seen), "paths": dict(self.paths)}

    @staticmethod
    def still(recorded: Mapping[str, Any], env: Mapping[str, str] | None = None) -> bool:
        """Whether every probe in `recorded` (as_json) answers the same now."""
        env = ENV if env is None else env
        try:
            if any(env.get(name) != value for name, value in recorded["env"].items()):
                return False
            return all((exists if probe[0] == "e" else isfile)(probe[1:]) is answer
                       for probe, answer in recorded["paths"].items())
        except (KeyError, TypeError, AttributeError, IndexError):
            return False


class _RecordedEnv(Mapping[str, str]):
    """The environment as the checks read it, remembering every name asked about (None: unset)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self.seen: dict[str, str | None] = {}

    def __getitem__(self, name: str) -> str:
        value = self.seen[name] = self._env.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        value = self.seen[name] = self._env.get(name)
        return value is not None

    def __iter__(self) -> Iterator[str]:  # a check that lists the environment depends on all of it
        for name, value in self._env.items():
            self.seen[name] = value
        return iter(list(self._env))

    def __len__(self) -> int:
        return len(self._env)
