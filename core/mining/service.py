"""The always-on miner of one workspace: watches transcript folders, runs passes off the caller's
thread, one at a time, and can be paused, resumed, re-scoped, cancelled or asked to run now.

File events are grouped by watchfiles with a debounce of `mining.cadence`, so a burst of writes
(an agent streaming a session) gives one pass. A pass that would have fired while paused is
recorded in the trace as `mining.pass_ran {paused: true}` and not run.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel

from core.mining.passes import PassCancelled, PassMemory, PassReport, run_pass
from core.mining.recipes import Recipe
from core.quiet import long_work
from core.trace import Trace, TraceBusyError, trace_path  # noqa: F401 - trace_path kept importable from here

# The watermark store and the transcript folders are imported by the service's methods (a command that
# only needs the trace's path imports core.trace, not this module).

log = logging.getLogger(__name__)


class MinerStatus(BaseModel):
    enabled: bool
    paused: bool
    running: bool
    slug: str
    last_pass: PassReport | None = None
    last_error: str | None = None
    transcript_dirs: list[str]
    mined_through: int = 0


def record_pass(trace: Trace, report: PassReport) -> None:
    """`mining.pass_ran` for a completed pass (raises TraceBusyError while kitsoki holds the trace)."""
    trace.pass_ran(trigger=report.trigger, slug=report.slug, sessions=report.sessions,
                   recipes=report.recipes, job_id=report.job_id)


class MinerService:
    def __init__(
        self,
        workspace: Path,
        *,
        enabled: bool = True,
        cadence_seconds: float = 30.0,
        first_pass_sample: int = 12,
        priority_threshold: float = 0.0,
        transcript_dirs: list[Path] | None = None,
        mined_through: Mapping[str, int] | None = None,
        repo: Path | None = None,
        home: Path | None = None,
        env: Mapping[str, str] | None = None,
        on_pass: Callable[[PassReport, list[Recipe]], None] | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        on_start: Callable[[], None] | None = None,
        workers: int | None = None,
        other_projects: bool = False,
        project_paths: Iterable[str] = (),
    ) -> None:
        self.workspace = Path(workspace)
        self.repo = (repo or self.workspace).resolve()
        from core.mining.watermark import kitsoki_slug

        self.slug = kitsoki_slug(self.repo)
        self.enabled = enabled
        self.cadence_seconds = cadence_seconds
        self.first_pass_sample = first_pass_sample
        self.priority_threshold = priority_threshold
        self.dirs = [Path(d) for d in (transcript_dirs or [])]
        self.other_projects = other_projects
        """mining.other_projects: read other projects' sessions too (suggestions only)."""
        self.project_paths = list(project_paths)
        self._own_dirs: list[Path] | None = None
        self.mined_through = dict(mined_through or {})
        self.home, self.env = home, env
        self.on_pass = on_pass
        self.on_progress = on_progress
        """(bytes done, bytes total) while a pass reads; called on the pass's thread."""
        self.on_start = on_start
        self.workers = workers
        self.trace = Trace(trace_path(self.workspace))
        self.paused = False
        self.last_pass: PassReport | None = None
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._wanted = False
        self._running = False
        self._cancel = threading.Event()
        self._stop = threading.Event()
        self._runner: threading.Thread | None = None
        self._watcher: threading.Thread | None = None
        self._passes_done = 0
        self._memory = PassMemory()
        self._changed: set[str] | None = None
        """Files changed since the last pass (None: unknown, look at everything)."""
        self._urgent = False
        self._last_start = float("-inf")

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, *, watch: bool = True, run_first_pass: bool = True) -> None:
        runner = threading.Thread(target=self._run_loop, name=f"miner-{self.slug}", daemon=True)
        runner.start()
        self._runner = runner  # published once started: stop() may run on another thread meanwhile
        if watch:
            self._start_watcher()
        if run_first_pass and self.enabled:
            self.request_pass()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._cancel.set()
        with self._lock:
            self._wake.notify_all()
        for thread in (self._runner, self._watcher):
            if thread is not None:
                thread.join(timeout)

    # -- operations (mineControl) ----------------------------------------------------------------

    def pause(self) -> None:
        with self._lock:
            self.paused = True

    def resume(self) -> None:
        with self._lock:
            self.paused = False

    def cancel(self) -> None:
        """Cancel the running pass, if any; its results are dropped and the watermark stays."""
        self._cancel.set()

    def set_scope(self, dirs: list[Path]) -> None:
        with self._lock:
            self.dirs = [Path(d) for d in dirs]
            self._own_dirs = None
            self._changed = None
        if self._watcher is not None:
            self._restart_watcher()

    def request_pass(self, changed: Iterable[str] | None = None) -> bool:
        """Ask for a pass; False (and a paused record in the trace) when paused.

        `changed`: the files a watcher saw change, so the pass need not walk every folder;
        None asks for a full look."""
        with self._lock:
            if self.paused:
                paused = True
            else:
                paused = False
                if changed is None or self._changed is None:
                    self._changed = None
                else:
                    self._changed |= set(changed)
                self._wanted = True
                self._wake.notify_all()
        if paused:
            self._record(trigger="live", slug=self.slug, paused=True)
        return not paused

    def run_now(self, timeout: float | None = None) -> PassReport | None:
        """Run a pass (even when paused: a person asked) and wait for it."""
        with self._lock:
            self._changed = None  # a person asked: look at everything
            target = self._passes_done + (2 if self._running else 1)
            self._wanted = self._urgent = True
            self._wake.notify_all()
            self._wake.wait_for(lambda: self._passes_done >= target or self._stop.is_set(), timeout)
            return self.last_pass

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._lock:
            return self._wake.wait_for(lambda: not self._wanted and not self._running, timeout)

    def status(self) -> MinerStatus:
        with self._lock:
            return MinerStatus(
                enabled=self.enabled, paused=self.paused, running=self._running, slug=self.slug,
                last_pass=self.last_pass, last_error=self.last_error,
                transcript_dirs=[str(d) for d in self.watched_dirs()],
                mined_through=self.last_pass.mined_through if self.last_pass else self.mined_through.get(self.slug, 0),
            )

    @property
    def passes_done(self) -> int:
        return self._passes_done

    # -- internals -------------------------------------------------------------------------------

    def watched_dirs(self) -> list[Path]:
        """The folders Claude Code and Pi name after the workspace, the places inside it and its other
        checkouts (those that exist; the workspace's own even before it does), then the extra ones.
        Listed once (the status asks often; the watcher starts with them), again after a re-scope."""
        if self._own_dirs is None:
            self._own_dirs = self._own_folders()
        return self._own_dirs + list(self.dirs)

    def _own_folders(self) -> list[Path]:
        from core.transcripts.discover import named_folders, claude_roots, claude_slug, pi_dirname, pi_root
        from core.transcripts.scope import workspace_scope

        env = self.env if self.env is not None else os.environ
        home = self.home or Path(env.get("HOME", "~")).expanduser()
        scope = workspace_scope(self.repo, project_paths=self.project_paths)
        dirs = [root / claude_slug(self.repo) for root in claude_roots(home, env)]
        dirs.append(pi_root(home, env) / pi_dirname(self.repo))
        claude_prefixes = tuple(f + "-" for f in scope.claude_folders)
        pi_prefixes = tuple(f[:-2] + "-" for f in scope.pi_folders)
        for root, names, prefixes in [*((r, scope.claude_folders, claude_prefixes) for r in claude_roots(home, env)),
                                      (pi_root(home, env), scope.pi_folders, pi_prefixes)]:
            dirs += [d for d in named_folders(root, names, prefixes) if d not in dirs]
        return dirs

    def _record(self, report: PassReport | None = None, **paused) -> None:
        try:
            if report is not None:
                record_pass(self.trace, report)
            else:
                self.trace.pass_ran(**paused)
        except TraceBusyError:
            # A kitsoki session holds the trace; the pass itself is done and stored.
            log.warning("trace %s is held by a running kitsoki session; pass_ran not recorded", self.trace)

    def _run_loop(self) -> None:
        while True:
            with self._lock:
                self._wake.wait_for(lambda: self._wanted or self._stop.is_set())
                # Passes the watcher asks for are at least a cadence apart: a long burst of
                # writes that outlasts the debounce still gives one pass, not one per batch.
                while not self._urgent and not self._stop.is_set():
                    wait = self._last_start + self.cadence_seconds - time.monotonic()
                    if wait <= 0:
                        break
                    self._wake.wait(wait)
                if self._stop.is_set():
                    return
                self._wanted = self._urgent = False
                changed, self._changed = self._changed, set()
                self._running = True
                self._last_start = time.monotonic()
                self._cancel.clear()
            report = recipes = error = None
            try:
                if self.on_start is not None:
                    self.on_start()
                with long_work():
                    report, recipes = run_pass(
                    self.workspace, repo=self.repo, dirs=self.dirs, first_pass_sample=self.first_pass_sample,
                    priority_threshold=self.priority_threshold, mined_through=self.mined_through,
                        cancel=self._cancel, home=self.home, env=self.env, workers=self.workers,
                        memory=self._memory, changed_paths=changed, progress=self.on_progress,
                        other_projects=self.other_projects, project_paths=self.project_paths,
                    )
                self._record(report)
            except PassCancelled:
                error = "cancelled"
            except OSError as exc:  # a full disk, a read-only workspace: the status says it in words
                error = f"the pass could not write its state: {_fault(exc)}"
                log.warning("mining pass failed: %s", error)
            except Exception as exc:  # a failing pass must not kill the service; it is reported
                log.exception("mining pass failed")
                error = f"{type(exc).__name__}: {exc}"
            with self._lock:
                if error is not None:
                    self._changed = None  # what this pass was told about is not mined yet
                self._running = False
                self._passes_done += 1
                if report is not None:
                    self.last_pass = report
                self.last_error = error
                self._wake.notify_all()
            if report is not None and self.on_pass is not None:
                self.on_pass(report, recipes)

    def _start_watcher(self) -> None:
        self._watch_stop = threading.Event()
        watcher = threading.Thread(target=self._watch_guarded, args=(self._watch_stop,),
                                   name=f"miner-watch-{self.slug}", daemon=True)
        watcher.start()
        self._watcher = watcher

    def _restart_watcher(self) -> None:
        self._watch_stop.set()
        self._watcher.join(5)
        self._start_watcher()

    def _watch_guarded(self, stop: threading.Event) -> None:
        try:
            self._watch_loop(stop)
        except Exception as exc:  # a dead watcher must show in status, not vanish
            log.exception("transcript watcher stopped")
            with self._lock:
                self.last_error = f"watcher stopped: {type(exc).__name__}: {exc}"

    def _watch_loop(self, stop: threading.Event) -> None:
        from watchfiles import watch

        paths = [d for d in self.watched_dirs() if d.exists()]
        if not paths:
            return
        debounce_ms = max(50, int(self.cadence_seconds * 1000))

        def stopped() -> bool:
            return stop.is_set() or self._stop.is_set()

        class _Stop:  # watchfiles polls is_set() on this
            def is_set(self_inner) -> bool:
                return stopped()

        # step: the quiet time that ends a batch of events; debounce: the longest a batch may grow.
        step_ms = min(debounce_ms, 1000)
        for changes in watch(*paths, debounce=debounce_ms, step=step_ms, stop_event=_Stop(), recursive=True,
                             watch_filter=lambda _change, path: path.endswith(".jsonl"), yield_on_timeout=False,
                             rust_timeout=500):
            if stopped():
                return
            if changes:
                self.request_pass(changed=[path for _change, path in changes])


def _fault(exc: OSError) -> str:
    from core.safeio import os_problem

    where = f"{exc.filename}: " if isinstance(exc.filename, str) else ""
    return f"{where}{os_problem(exc)}"
