"""Long work without collector pauses, for a process that must keep answering while it works.

The language server runs mining passes and proposes on worker threads of its own process. What
stalled its answers during that work (tests/bench/server_busy.py) was not the work but CPython's
cyclic garbage collector: a pass or a propose allocates hundreds of thousands of long-lived objects
(the loaded tree, inventories, caches), and every full collection walks all of them with the GIL
held: 0.2-0.8 s in which no request is answered, several times per propose.

`long_work()` pauses automatic collection while any such work runs, and at its end freezes what
survived (gc.freeze: the objects stay alive and are freed by reference counting as before, but the
collector never walks them again). A cycle that became garbage during the work is frozen with the
survivors; so that memory stays bounded, once the frozen set has grown by RECLAIM_AFTER objects since
the last full collection, the next end of work unfreezes and collects everything (one pause, rare).

Only a process that calls `enable()` (the server) behaves so; elsewhere (the CLI, tests) `long_work()`
does nothing, and a command's short life leaves collection as Python does it.

`pause_startup()` is for a short command run as a process of its own (an accept, a verdict): the
collector stays off while it imports and loads (pydantic builds its models, the loader its trees:
acyclic, long-lived objects that each collection would walk again), and comes back, with all of that
frozen, when a flow run begins (`fewer_collections`), which makes short-lived cycles by the million.

`fewer_collections()` is milder and holds everywhere: while a flow run goes on (kitsoki's whole
repository allocates millions of short-lived objects over a loaded tree of a few hundred thousand) the
youngest generation is collected every FEW_COLLECTIONS[0] allocations instead of 700, so the older
generations, which walk the whole tree, run rarely: a third of `kitsoki-miner flows`' time went to
the collector, and its peak memory grows by about 10 MB instead (see tests/bench/flows.py).
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

RECLAIM_AFTER = 3_000_000
"""Frozen objects added since the last full collection before one is made (a few cold proposes of
kitsoki's repository; a few hundred MB at most held by cycles meanwhile)."""
SWITCH_INTERVAL_S = 0.002
"""How long a thread runs before it hands the GIL to one that waits (Python's default is 5 ms): the
event loop answering a request waits at most this for each of the few times it takes the GIL."""

FEW_COLLECTIONS = (50_000, 50, 1000)

_lock = threading.Lock()
_enabled = False
_fewer_depth = 0
_thresholds: tuple[int, int, int] | None = None
_depth = 0
_frozen_at_collect = 0
_startup_paused = False


def enable() -> None:
    """Make `long_work()` effective in this process (the language server calls it once)."""
    global _enabled
    _enabled = True
    sys.setswitchinterval(SWITCH_INTERVAL_S)


@contextmanager
def long_work() -> Iterator[None]:
    """Run a pass or a propose without collector pauses (in a process that enabled it)."""
    global _depth
    if not _enabled:
        yield
        return
    with _lock:
        if _depth == 0:
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _settle()
                gc.enable()


def _settle() -> None:
    global _frozen_at_collect
    gc.freeze()
    if gc.get_freeze_count() - _frozen_at_collect > RECLAIM_AFTER:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _frozen_at_collect = gc.get_freeze_count()


def pause_startup() -> None:
    """Collector off until the first flow run of this process (module docstring); the process's last
    collection, at exit, does not walk what it kept either. Only for a whole process (the CLI)."""
    global _startup_paused
    import atexit

    with _lock:
        if gc.isenabled():
            gc.disable()
            _startup_paused = True
    atexit.register(gc.freeze)


def _resume_after_startup() -> None:
    """Under _lock: what start-up made is frozen and the collector runs again (for a flow run)."""
    global _startup_paused
    if _startup_paused:
        _startup_paused = False
        gc.freeze()
        gc.enable()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect the youngest generation less often while this runs (any process; nests; thread-safe)."""
    global _fewer_depth, _thresholds
    with _lock:
        _resume_after_startup()
        if _fewer_depth == 0:
            _thresholds = gc.get_threshold()
            gc.set_threshold(*(max(mine, theirs) for mine, theirs in zip(FEW_COLLECTIONS, _thresholds)))
        _fewer_depth += 1
    try:
        yield
    finally:
        with _lock:
            _fewer_depth -= 1
            if _fewer_depth == 0 and _thresholds is not None:
                gc.set_threshold(*_thresholds)
