#!/usr/bin/env python3
"""Run one command and report its wall time and the memory of its whole process tree.

    python tests/bench/measure.py --result OUT.json [--stdout FILE] [--stderr FILE] -- CMD [ARGS...]

Why a wrapper process per measured command (and not ``getrusage(RUSAGE_CHILDREN)`` deltas in the
benchmark itself): ``ru_maxrss`` of RUSAGE_CHILDREN is a high-water mark over *every* child ever
reaped, not a counter, so after one big child a smaller child's peak cannot be recovered by
subtraction. A fresh wrapper per command gives a fresh accumulator.

What the wrapper measures, Linux semantics:

* ``peak_rss_single_kb`` -- ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` once every descendant has been
  reaped. When the kernel reaps a process it folds that process's own peak RSS *and* the peak of
  the children it had reaped itself into its parent's "children max RSS". So a process-pool worker
  (a grandchild of this wrapper, reaped by our CLI) is counted when the CLI is reaped by us. This is
  exact (kernel-accounted), but it is the peak of the *largest single process*, not a sum.
* Orphans: a descendant whose parent exits first would normally be re-parented to init and its
  usage lost. The wrapper makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so
  such processes are re-parented to the wrapper, which reaps them too (and counts them).
* ``peak_tree_rss_kb`` -- the sum of RSS over all live processes of the tree (found through
  ``/proc/<pid>/task/<tid>/children``), sampled every ``--interval`` seconds (default 20 ms) by a
  thread. With a process pool several processes are alive at once, so their sum is the memory the
  machine actually has to give; pages shared between processes are counted once per process, so
  this is an upper bound. Sampling can miss a spike shorter than the interval, which is why the
  benchmark reports ``max(peak_tree_rss, peak_rss_single)`` as the peak.
* ``peak_tree_pss_kb`` -- the same sampling, summing each process's proportional set size (PSS,
  ``/proc/<pid>/smaps_rollup``): a page shared by n processes counts 1/n in each, so a forked pool
  worker's copy-on-write pages are not counted twice. This is what the tree really costs the machine.
* ``wall_s`` -- from just before the spawn to the exit of the direct child (orphans still running
  after that are waited for, and reported as ``lingering``, but are outside the wall time).
* ``cpu_user_s``/``cpu_sys_s`` -- CPU of the whole reaped tree.

The wrapper's own interpreter is not in any of these figures (it is RUSAGE_SELF, and the sampler
starts from the wrapper's children).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out.extend(int(x) for x in fh.read().split())
        except OSError:
            pass
    return out


def _tree(root: int) -> list[int]:
    """All descendants of root (not root itself)."""
    seen: list[int] = []
    todo = _children(root)
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(_children(p))
    return seen


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return 0


class Sampler(threading.Thread):
    def __init__(self, interval: float):
        super().__init__(daemon=True)
        self.interval = interval
        self.peak_kb = 0
        self.peak_pss_kb = 0
        self.peak_procs = 0
        self.samples = 0
        self._halt = threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self._halt.is_set():
            pids = _tree(me)
            total = sum(_rss_kb(p) for p in pids)
            pss = sum(_pss_kb(p) for p in pids)
            self.samples += 1
            if total > self.peak_kb:
                self.peak_kb = total
            if pss > self.peak_pss_kb:
                self.peak_pss_kb = pss
            if len(pids) > self.peak_procs:
                self.peak_procs = len(pids)
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def measure(cmd: list[str], stdout: str | None, stderr: str | None, env: dict | None, timeout: float,
            interval: float, linger: float = 30.0) -> dict:
    subreaper = _become_subreaper()
    sampler = Sampler(interval)
    out = open(stdout or os.devnull, "wb")
    err = open(stderr or os.devnull, "wb")
    sampler.start()
    t0 = time.perf_counter()
    timed_out = False
    try:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
    except OSError as e:
        sampler.stop()
        return {"error": f"cannot start {cmd[0]}: {e}", "exit_code": None}
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
    wall = time.perf_counter() - t0
    # Reap re-parented orphans (possible only because we are a subreaper).
    lingering = 0
    deadline = time.monotonic() + linger
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if time.monotonic() > deadline:
                for p in _tree(os.getpid()):
                    lingering += 1
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
                deadline = time.monotonic() + 5
            time.sleep(0.02)
    sampler.stop()
    out.close()
    err.close()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "exit_code": rc,
        "timed_out": timed_out,
        "wall_s": wall,
        "peak_rss_single_kb": ru.ru_maxrss,  # KiB on Linux
        "peak_tree_rss_kb": sampler.peak_kb,
        "peak_tree_pss_kb": sampler.peak_pss_kb,
        "peak_procs": sampler.peak_procs,
        "samples": sampler.samples,
        "cpu_user_s": ru.ru_utime,
        "cpu_sys_s": ru.ru_stime,
        "subreaper": subreaper,
        "lingering_killed": lingering,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="measure one command (wall, CPU, peak RSS of its process tree)")
    ap.add_argument("--result", required=True, help="write the JSON result here")
    ap.add_argument("--stdout")
    ap.add_argument("--stderr")
    ap.add_argument("--env", action="append", default=[], metavar="K=V", help="extra environment variable")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")
    env = dict(os.environ)
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    res = measure(cmd, a.stdout, a.stderr, env, a.timeout, a.interval)
    with open(a.result, "w") as fh:
        json.dump(res, fh)
    return 0 if res.get("exit_code") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
