"""Memos of per-state work in a load, kept by the identity of the state they were made from.

A staged draft that adds one intent and one room to a story makes every story importing it load
again: its imports are folded (core.kitsoki.imports) and its checks run (core.kitsoki.checks,
expr_checks, agent_checks) over every state, although almost all of them are the same as in the
load before. Parsed trees are never mutated (core.kitsoki.parse), and every stage of the pipeline
copies only what it changes (core.kitsoki.tree), so a state that did not change is the same object
from one load to the next. Each memo keeps, with a state (held, so its id cannot be reused), what
the work asked of everything outside the state (the child's world keys, intents and exits while
folding; the story's intents, state paths, world keys, hosts and agents while checking) and the
answers it got; a result is reused only while every one of those questions gets the same answer
in the new load. So a load reports exactly the issues a full re-check reports
(tests/test_state_memo.py compares the two on every story of the shared workspace and on drafts,
broken ones included).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

_OFF = threading.local()
_REGISTRY: list[dict] = []


def enabled() -> bool:
    """False inside `disabled()` (a full re-check, as the tests compare against)."""
    return not getattr(_OFF, "depth", 0)


@contextmanager
def disabled():
    """Every memo bypassed in this thread: nothing looked up, nothing kept."""
    _OFF.depth = getattr(_OFF, "depth", 0) + 1
    try:
        yield
    finally:
        _OFF.depth -= 1


def register(memo: dict) -> dict:
    _REGISTRY.append(memo)
    return memo


def forget() -> None:
    """Drop every remembered state (a cold start, for benchmarks and tests)."""
    for memo in _REGISTRY:
        memo.clear()


MISSING = object()
"""A name a mapping does not hold (so `None` stays an answer of its own)."""


class Watched:
    """A set or mapping a memoized piece of work reads, telling every recorder on `stack` what it
    was asked and what it answered: a set answers `in` (and `bool`); a mapping answers `in` (asked
    as `<kind>?`) and `get` / `[]` with the value held (its identity is the answer)."""

    __slots__ = ("items", "kind", "stack", "mapping", "shape")

    def __init__(self, items, kind: str, stack: list[dict], shape=None) -> None:
        self.items, self.kind, self.stack, self.shape = items, kind, stack, shape
        self.mapping = isinstance(items, dict)
        """`shape(value)`: what of a mapping's value the work reads, as a tuple (recorded instead of the
        value's identity, and compared by equality)."""

    def answer(self, name):
        """What `name` is answered now (for a replay)."""
        if name is MISSING:
            return bool(self.items)
        if not self.mapping:
            return name in self.items
        found = self.items.get(name, MISSING)
        return self.shape(found) if self.shape is not None else found

    def _ask(self, name):
        if name is MISSING or not self.mapping or self.shape is None:
            found = self.answer(name)
            answer = found
        else:
            found = self.items.get(name, MISSING)
            answer = self.shape(found)
        for record in self.stack:
            record[(self.kind, name)] = answer
        return found

    def holds(self, name) -> bool:
        """Whether `name` is held now (a mapping's `in`: only that is asked, not the value)."""
        return name in self.items

    def __contains__(self, name) -> bool:
        if not self.mapping:
            return self._ask(name)
        found = name in self.items
        for record in self.stack:
            record[(self.kind + "?", name)] = found
        return found

    def __bool__(self) -> bool:
        return self._ask(MISSING)

    def get(self, name, default=None):
        found = self._ask(name)
        return default if found is MISSING else found

    def __getitem__(self, name):
        found = self._ask(name)
        if found is MISSING:
            raise KeyError(name)
        return found


def still(record: dict, answers: dict) -> bool:
    """Whether every question in `record` ((kind, name) -> answer) gets the same answer now;
    `answers` maps a kind to the function answering it (a Watched's `answer`). An answer is the same
    object, or an equal tuple or string (a shape, a listing); any other object only by identity."""
    for (kind, name), answer in record.items():
        now = answers[kind](name)
        if now is not answer and not (type(answer) in (tuple, str) and answer == now):
            return False
    return True


def recall(memo: dict, key: tuple, subject, answers: dict, stack: list[dict]):
    """The result kept under `key` for `subject` (the very object) whose questions still get the
    same answers, told to every recorder on `stack` as if asked again; else None."""
    if not enabled():
        return None
    for entry in memo.get(key, ()):
        if entry[0] is subject and still(entry[1], answers):
            for record in stack:
                record.update(entry[1])
            return entry[2]
    return None


MAX_KEYS = 50_000
"""Per memo; past it the older half goes (a long-running server keeps what its recent loads made)."""
MAX_ENTRIES = 4
"""Per key: the answers a state's work got under its last few contexts."""


def keep(memo: dict, key: tuple, subject, record: dict, result) -> None:
    if not enabled():
        return
    trim(memo)
    entries = memo.setdefault(key, [])
    entries.append((subject, record, result))
    if len(entries) > MAX_ENTRIES:
        del entries[0]


def trim(memo: dict) -> None:
    if len(memo) > MAX_KEYS:
        for key in list(memo)[:len(memo) // 2]:
            memo.pop(key, None)


def located(value) -> tuple:
    """A located tree (core.kitsoki.parse LMap / LSeq) as a tuple of everything it holds: kinds,
    file:line:col of it and of each key and item, and the values, in order (compared by equality)."""
    from core.kitsoki.parse import LMap, LSeq

    if isinstance(value, LMap):
        return ("M", value.file, value.line, value.column, value.kline, value.kcol, tuple(value.marks.items()),
                tuple((key, located(item)) for key, item in value.items()))
    if isinstance(value, LSeq):
        return ("S", value.file, value.line, value.column, value.kline, value.kcol, tuple(value.marks),
                tuple(located(item) for item in value))
    if isinstance(value, (dict, list, set)):
        return (type(value).__name__, repr(value))
    return (type(value).__name__, value)
