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
