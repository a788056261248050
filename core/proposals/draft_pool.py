"""Drafting a pass's recipes on every core: forked helpers share the loaded live tree.

Each draft is drafted, loaded as a staged tree, proved and replayed on its own, against the same live
tree, so drafts can be built in any order and in any process and give the same proposals. A pass with
several drafts forks helper processes after the live tree is loaded (they read it through the fork,
nothing is loaded twice); the calling process drafts too. Each process takes the next draft no one has
taken; the results come back in the recipes' order, so what is staged, and in what order, is what one
process would stage.

Only a process with no other thread forks (the CLI): a fork of a process whose other threads hold locks
(the language server's loop, watchers, workers) can leave the child stuck on one. Elsewhere, or with
fewer than MIN_DRAFTS drafts, or one core, every draft is built here, one after the other.

A helper's memos (core.kitsoki.checked: the load checks' and the loads' memos kept across processes) never
write their files; what they learn comes back with each draft and is written by the calling process,
so two processes never write one file. A helper that dies, or a draft whose result does not come back,
is drafted again here: a pool only ever saves time.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from core.kitsoki import checked

log = logging.getLogger("kitsoki_miner.proposer")

MIN_DRAFTS = 4
"""Below this a pool costs more (a fork, and each helper warming its own caches) than it saves."""
MAX_WORKERS = 8
WORKERS_ENV = "KITSOKI_MINER_DRAFT_WORKERS"
"""How many processes draft (1: this one only); default: `workers()`."""

J = TypeVar("J")
R = TypeVar("R")


def workers() -> int:
    """How many processes draft: WORKERS_ENV when set; else the cores this process may run on, less those
    the rest of the machine keeps busy (the load average): on a machine busy with other work a helper
    would only take turns with this process on the same core, and pay its fork for nothing."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if raw:
        try:
            return max(1, min(MAX_WORKERS, int(raw)))
        except ValueError:
            log.warning("%s=%r is not a number; drafting on every idle core", WORKERS_ENV, raw)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return max(1, min(MAX_WORKERS, cores, round(cores - busy) + 1))  # this process counts as one of the busy


def build_all(jobs: Sequence[J], build: Callable[[J], R]) -> list[R]:
    """[build(job) for job in jobs], on every core when it pays (see the module's doc). `build` never
    raises for a job that fails: it returns what the caller records for it."""
    helpers = min(workers(), len(jobs)) - 1
    if helpers < 1 or len(jobs) < MIN_DRAFTS or threading.active_count() != 1 or not hasattr(os, "fork"):
        return [build(job) for job in jobs]
    context = multiprocessing.get_context("fork")
    claimed = context.Value("i", 0)
    """The next job no process has taken (its lock makes taking one atomic)."""
    results: Any = context.Queue()
    # not daemons: a daemon may not start processes of its own, and a draft's checks must run as they do here
    processes = [context.Process(target=_helper, args=(jobs, build, claimed, results)) for _ in range(helpers)]
    # What the helpers inherit is frozen while they are forked: their collector never walks it, which would
    # touch (and so copy) every page of the loaded tree they share with this process.
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        for process in processes:
            process.start()
    except OSError as exc:  # no fork (limits): this process builds whatever no helper took
        log.info("drafting in one process: %s", exc)
    finally:
        if frozen_before == 0:  # this process collects as it did (one that froze before keeps what it froze)
            gc.unfreeze()
    log.info("building %d in %d processes", len(jobs), 1 + sum(p.pid is not None for p in processes))
    out: dict[int, R] = {}
    while (index := _take(claimed, len(jobs))) is not None:
        out[index] = build(jobs[index])
    _collect(processes, results, out)
    for index in range(len(jobs)):  # taken by a helper that died before handing it back
        if index not in out:
            out[index] = build(jobs[index])
    return [out[index] for index in range(len(jobs))]


def _take(claimed: Any, count: int) -> int | None:
    with claimed.get_lock():
        index = claimed.value
        if index >= count:
            return None
        claimed.value = index + 1
        return index


def _helper(jobs: Sequence[Any], build: Callable[[Any], Any], claimed: Any, results: Any) -> None:
    checked.defer_writes()
    try:
        while (index := _take(claimed, len(jobs))) is not None:
            result = build(jobs[index])
            results.put(("built", index, result, checked.take_written()))
    except KeyboardInterrupt:  # the whole command was interrupted: the process that forked it stops too
        pass
    except BaseException:  # noqa: BLE001 - the job it held is built again by the process that forked it
        log.exception("a drafting helper stopped; its draft is built again")
    finally:
        results.put(("done", None, None, None))
        results.close()
        results.join_thread()


def _collect(processes: list, results: Any, out: dict[int, Any]) -> None:
    """Every result the helpers send, until each says it is done or has died; their memos' entries
    are taken in here."""
    running = {process.pid for process in processes if process.pid is not None}
    done = 0
    written: list = []
    while done < len(running):
        try:
            kind, index, result, learned = results.get(timeout=0.5)
        except queue.Empty:
            if all(not process.is_alive() for process in processes if process.pid in running):
                # each sends "done" before it exits; one more look for what is in flight, then stop
                try:
                    while True:
                        kind, index, result, learned = results.get(timeout=0.2)
                        if kind == "built":
                            out[index] = result
                            written.extend(learned)
                except queue.Empty:
                    break
            continue
        if kind == "done":
            done += 1
            continue
        out[index] = result
        written.extend(learned)
    for process in processes:
        if process.pid is not None:
            process.join(timeout=5)
    if written:
        checked.absorb(written)
