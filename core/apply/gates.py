"""Flow gates: after an accepted delta is written, a gate says green (keep) or red (revert).

Fail closed is the rule of every gate here. A gate that cannot run, times out, crashes, writes
no report or a report we cannot read is red, never green: the applier reverts on red, and a
spurious revert costs a retry while a spurious keep could leave a regressing edit in the tree.
So a gate never raises; every failure becomes a red GateResult whose `summary` a person can act on.
A gate that ran and judged nothing (no flow document, every flow skipped or beyond the built-in
runner) is not green either: it is *held* (`held`), and the answer says why.

Three kinds, each run per app (core.apply.scoped_gate chooses the apps a change reaches):
- command: any argv run in the workspace (`make test`); exit 0 is green. Not scoped: it is the
  project's own command.
- kitsoki: `kitsoki test flows <app.yaml> --flows GLOB --json FILE [--kitsoki-repo R]` (reference §3),
  one call per app. Exit 0 with a report that ran flows and `Failed == 0` is green; exit 1 is red
  (the report names the failures); exit 2 is "could not run" (red). `Results: null` (files matched,
  no flow document) and an all-Skipped report mean no flow ran.
- builtin: core.flows.run_flows over the app's glob, in process. A flow it cannot run ("not
  supported by the built-in runner: ...") is *not run* with that reason: never green, never a
  failure that reverts.

Subprocess gates run in their own session and, on timeout (and when they end), the whole process
group is killed, so a `make` that forked a test server leaves nothing running against a tree that
is about to be reverted.
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

OUTPUT_TAIL_LINES = 20
MAX_FAILURE_LINES = 50
_TAIL_BYTES = 64 * 1024
_REAP_SECONDS = 5.0


RunStatus = Literal["passed", "failed", "not run", "error"]


class FlowRun(BaseModel, defer_build=True):
    """What the gate did with one app (or with the project's root flows)."""

    app: str
    """The workspace-relative app.yaml the flows ran against (ROOT_APP for the root flows)."""
    why: str = ""
    """Why the change reaches this app ("edited", "imports stories/x", ...)."""
    flows: str = ""
    """The fixture glob, workspace-relative (what `--flows` was given)."""
    status: RunStatus
    """passed: flows ran, none failed; failed: a flow failed; not run: no flow ran (and why);
    error: the runner could not run (exit 2, timeout, no or bad report)."""
    passed: list[str] = []
    failed: list[str] = []
    not_run: list[str] = []
    """`<flow>: <why>` for each flow that did not run (skipped, unsupported here, stopped early)."""
    summary: str = ""
    duration_s: float = 0.0


class GateResult(BaseModel, defer_build=True):
    green: bool
    gate: str
    """Which gate ran: "kitsoki", "command", "builtin", or "none" when none could be chosen."""
    summary: str
    failures: list[str] = []
    duration_s: float = 0.0
    report: dict | None = None
    """The flow report (Go field names: Results/Passed/Failed), turns without View/Events."""
    gated: bool = True
    """False when no flow judged the change: then it is held (not green), or, under
    `miner.ungated: allow`, kept after the structural checks (green)."""
    held: bool = False
    """Not green because nothing judged the change (no flow exercises it, or none of those that do
    could run): the applier restores it like a red one, and the answer says what would gate it."""
    runs: list[FlowRun] = []
    """Per app: what ran, passed, failed, or did not run and why."""
    skipped: list[str] = []
    """Apps the change reaches that `miner.flow_gate.skip` leaves ungated, `<app.yaml>: <why>`."""
    would_exercise: list[str] = []
    """When nothing exercised the change: what would (a root flow, a flow of a named story)."""
    checks: list[str] = []
    """The structural checks an ungated change was kept after."""
    unprovable: list[str] = []
    """Parts of the change no flow can exercise under kitsoki's rules, and why (core.apply.gate_scope)."""
    dev_story: str = ""
    """Which copy of dev-story `@kitsoki/dev-story` resolved to, for the loader and the kitsoki gate alike."""


class GateSettings(BaseModel, defer_build=True):
    model_config = ConfigDict(extra="forbid")
    """A misspelt key (`comand:`) is an error, never a silent fall-back to another gate."""

    kind: Literal["auto", "kitsoki", "command", "builtin"] = "auto"
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    kitsoki: str = Field(default="kitsoki", min_length=1)
    """The kitsoki binary: a name looked up on PATH, or a path."""
    kitsoki_repo: str | None = Field(default=None, min_length=1)
    """The kitsoki checkout passed as `--kitsoki-repo` (workspace-relative or absolute); default
    $KITSOKI_REPO, else the workspace itself when it is a kitsoki checkout."""
    flows: str | dict[Annotated[str, Field(min_length=1)], Annotated[str, Field(min_length=1)]] | None = None
    """Each app's fixture glob, relative to the app's folder (kitsoki's default is flows/*.yaml);
    or a mapping from an app's folder (workspace-relative, e.g. stories/bugfix) to its glob, the
    apps it does not name keeping the default."""
    skip: list[Annotated[str, Field(min_length=1)]] = []
    """Stories never gated (a folder name such as repo-bakeoff, or its workspace-relative folder);
    an accept that reaches one says so. kitsoki's own CI quarantines repo-bakeoff and bench-bugfix."""
    fail_fast: bool = False
    """Stop at the first red app (and pass --fail-fast): the rest are reported as not run."""
    allow_missing_recording: bool = False
    """Pass --allow-missing-recording: a flow whose recording is missing is skipped (not run) instead
    of making kitsoki exit 2."""
    jobs: int | None = Field(default=None, ge=1)
    """How many kitsoki calls run at once; default (and at most) the number of cores."""
    timeout_s: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    """Per app. A gate given no time at all would revert every accept: zero and negative are refused."""
    scope: Literal["own", "importers"] = "importers"
    """`miner.gate_scope`: a changed story's own flows only, or also those of every story that
    imports it (directly or transitively), since a change to an imported story changes them too."""
    ungated: Literal["hold", "allow"] = "hold"
    """`miner.ungated`: a change no flow exercises is held (default), or kept after the structural
    checks with `gated: false` recorded."""

    @model_validator(mode="after")
    def _command_kind_has_a_command(self) -> GateSettings:
        if self.kind == "command" and not self.command:
            raise ValueError("kind 'command' needs a command, e.g. command: [\"make\", \"test\"]")
        return self


Gate = Callable[[Path], GateResult]


def _red(gate: str, summary: str, failures: Sequence[str] = (), **extra: Any) -> GateResult:
    return GateResult(green=False, gate=gate, summary=summary, failures=list(failures), **extra)


def _never_raises(name: str, fn: Callable[[Path], GateResult]) -> Gate:
    """Wrap a gate so any exception is a red "gate crashed" result, and time it."""

    @wraps(fn)
    def gate(workspace: Path) -> GateResult:
        started = time.monotonic()
        try:
            result = fn(Path(workspace))
            if not isinstance(result, GateResult):
                raise TypeError(f"gate returned {type(result).__name__}, not a GateResult")
        except Exception as exc:  # noqa: BLE001 - a gate never raises, by contract
            result = _red(name, f"gate crashed: {_reason(exc)}")
        result.duration_s = round(time.monotonic() - started, 6)
        return result

    return gate


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _timeout_text(timeout_s: float) -> str:
    return f"timed out after {timeout_s:g}s"


# ── subprocesses ──────────────────────────────────────────────────────────────────────────────


class _Run(BaseModel, defer_build=True):
    returncode: int | None
    """None when the run timed out and was killed."""
    tail: list[str]


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_spawn_listener: ContextVar[Callable[[int], None] | None] = ContextVar("gate_spawn_listener", default=None)
_after_edit: ContextVar[tuple[Path, Any] | None] = ContextVar("gate_tree_after_edit", default=None)


@contextmanager
def tree_after_edit(workspace: Path, model: Any) -> Iterator[None]:
    """While a gate runs on this thread: `model` is the workspace as the applier's reload loaded it
    a moment ago, after the edit (a gate that would load it again takes it: `loaded_after_edit`)."""
    token = _after_edit.set((Path(workspace), model))
    try:
        yield
    finally:
        _after_edit.reset(token)


def loaded_after_edit(workspace: Path) -> Any:
    """The tree `tree_after_edit` handed over for `workspace`, or None."""
    given = _after_edit.get()
    return given[1] if given is not None and given[0] == Path(workspace) else None


@contextmanager
def recording_spawns(listener: Callable[[int], None]) -> Iterator[None]:
    """While this is active, a subprocess gate started on this thread calls `listener(pid)` before
    it may run, and runs only if that returns (the apply journal records the gate this way)."""
    token = _spawn_listener.set(listener)
    try:
        yield
    finally:
        _spawn_listener.reset(token)


_WAIT_FOR_GO = 'IFS= read -r go && [ "$go" = g ] || exit 70; exec "$@" </dev/null'
"""The gate's first moments, in /bin/sh with the go pipe as stdin: wait until the parent has
recorded this process, then become the gate (exec keeps the pid) with stdin from /dev/null. If the
parent dies first the pipe ends and the gate never runs."""


def _spawn(argv: Sequence[str], cwd: Path, out) -> subprocess.Popen:
    listener = _spawn_listener.get()
    if listener is None:
        return subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    if shutil.which(argv[0]) is None:  # as Popen would say, before the wrapper hides it
        raise FileNotFoundError(2, f"No such file or directory: {argv[0]!r}")
    go_read, go_write = os.pipe()
    try:
        proc = subprocess.Popen(["/bin/sh", "-c", _WAIT_FOR_GO, "kitsoki-miner-gate", *argv],
                                cwd=cwd, stdin=go_read, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    except BaseException:
        os.close(go_write)
        raise
    finally:
        os.close(go_read)
    try:
        listener(proc.pid)
        os.write(go_write, b"g\n")
    except BaseException:
        _kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        os.close(go_write)
    return proc


def _run(argv: Sequence[str], cwd: Path, timeout_s: float) -> _Run:
    """Run argv in its own session with output to a temp file (not a pipe: a grandchild that
    keeps a pipe open would block us past the timeout); kill its process group at the end."""
    with tempfile.TemporaryFile() as out:
        proc = _spawn(argv, cwd, out)
        try:
            returncode: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            returncode = None
        except BaseException:
            _kill_group(proc.pid)
            proc.wait()
            raise
        _kill_group(proc.pid)  # timed out, or stragglers the gate left behind
        if returncode is None:
            try:
                proc.wait(timeout=_REAP_SECONDS)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
                pass
        return _Run(returncode=returncode, tail=_tail(out))


def _tail(fh, lines: int = OUTPUT_TAIL_LINES) -> list[str]:
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(0, size - _TAIL_BYTES))
    text = fh.read().decode("utf-8", errors="replace")
    return [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]


def _exit_text(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited {returncode}"


# ── command gate ──────────────────────────────────────────────────────────────────────────────


def command_gate(argv: list[str], timeout_s: float) -> Gate:
    """Run `argv` in the workspace; exit 0 is green. Red results carry the output's tail."""
    argv = list(argv)
    if not argv:
        raise ValueError("the command gate needs a non-empty command")
    shown = shlex.join(argv)

    def run(workspace: Path) -> GateResult:
        result = _run(argv, workspace, timeout_s)
        if result.returncode is None:
            return _red("command", f"{shown}: {_timeout_text(timeout_s)}", result.tail)
        if result.returncode != 0:
            return _red("command", f"{shown} {_exit_text(result.returncode)}", result.tail)
        return GateResult(green=True, gate="command", summary=f"{shown} exited 0")

    return _never_raises("command", run)


# ── kitsoki gate ──────────────────────────────────────────────────────────────────────────────

ROOT_APP = "<root>"
"""FlowRun.app of the project's root flows (run against the synthesized root)."""
UNSUPPORTED_PREFIX = "not supported by the built-in runner"
"""How core.flows says it cannot judge a flow (core.flows.UNSUPPORTED; read from there when present)."""


def _slim_report(report: dict) -> dict:
    """The report without each turn's View and Events (large, and not needed to explain red)."""
    results = []
    for res in report.get("Results") or []:
        if not isinstance(res, dict):
            continue
        turns = [
            {k: v for k, v in turn.items() if k not in ("View", "Events")}
            for turn in (res.get("Turns") or []) if isinstance(turn, dict)
        ]
        results.append({**res, "Turns": turns})
    return {"Results": results, "Passed": report.get("Passed"), "Failed": report.get("Failed")}


def _check_report(report: Any) -> str | None:
    """Why `report` is not a FlowReport, or None when it is one (kitsoki writes `Results: null`
    when the matched files hold no flow document)."""
    if not isinstance(report, dict):
        return "the report is not a JSON object"
    results = report.get("Results", ...)
    if results is not None and not isinstance(results, list):
        return "the report has no Results list"
    for key in ("Passed", "Failed"):
        value = report.get(key)
        if type(value) is not int or value < 0:
            return f"the report's {key} is not a count"
    return None


def report_failures(report: dict) -> list[str]:
    """`<File> turn <i>: <failure>` lines for the failed flows (`<File> session:` for TurnIndex < 0)."""
    lines: list[str] = []
    for res in report.get("Results") or []:
        if not isinstance(res, dict) or res.get("Passed", False) or res.get("Skipped", False):
            continue
        if _unsupported(res) is not None:
            continue
        name = res.get("File", "?")
        before = len(lines)
        for turn in res.get("Turns") or []:
            if not isinstance(turn, dict) or turn.get("Passed", False):
                continue
            index = turn.get("TurnIndex")
            where = f"turn {index + 1}" if type(index) is int and index >= 0 else "session"  # 1-based, as kitsoki prints
            failures = turn.get("Failures") or ["failed"]
            lines.extend(f"{name} {where}: {failure}" for failure in failures)
        if len(lines) == before:
            lines.append(f"{name}: failed")
    if len(lines) > MAX_FAILURE_LINES:
        more = len(lines) - MAX_FAILURE_LINES
        lines = lines[:MAX_FAILURE_LINES] + [f"... and {more} more"]
    return lines


def _unsupported(result: dict, prefix: str = UNSUPPORTED_PREFIX) -> str | None:
    """The built-in runner's "cannot judge this" failure of a flow result, or None."""
    if result.get("Passed", False):
        return None
    for turn in result.get("Turns") or []:
        for failure in (turn.get("Failures") or []) if isinstance(turn, dict) else []:
            if isinstance(failure, str) and failure.startswith(prefix):
                return failure
    return None


def _flow_names(results: list[dict]) -> list[str]:
    """A name per result: its File, with the document number when a file holds several flows."""
    counts: dict[str, int] = {}
    for res in results:
        counts[str(res.get("File", "?"))] = counts.get(str(res.get("File", "?")), 0) + 1
    seen: dict[str, int] = {}
    names = []
    for res in results:
        file = str(res.get("File", "?"))
        seen[file] = seen.get(file, 0) + 1
        names.append(f"{file} (flow {seen[file]})" if counts[file] > 1 else file)
    return names


def judge_report(report: dict, *, app: str, flows: str, label: str, unsupported: str | None = None) -> FlowRun:
    """One app's report, read as kitsoki means it: skipped flows (and, from the built-in runner,
    flows it cannot run, their failures starting with `unsupported`) are not run; green needs a flow
    that passed and none that failed."""
    results = [r for r in (report.get("Results") or []) if isinstance(r, dict)]
    run = FlowRun(app=app, flows=flows, status="not run")
    for name, res in zip(_flow_names(results), results):
        cannot = _unsupported(res, unsupported) if unsupported else None
        if res.get("Skipped", False):
            run.not_run.append(f"{name}: skipped (its recording is missing)")
        elif cannot is not None:
            run.not_run.append(f"{name}: {cannot}")
        elif res.get("Passed", False):
            run.passed.append(name)
        else:
            run.failed.append(name)
    if run.failed:
        run.status = "failed"
        run.summary = f"{label}: {len(run.failed)} of {len(run.failed) + len(run.passed)} flows failed"
    elif run.passed:
        run.status = "passed"
        run.summary = f"{label}: {len(run.passed)}/{len(run.passed)} flows pass"
    elif not results:
        run.summary = f"{label}: no flow ran (the matched files hold no test_kind: flow document)"
    else:
        run.summary = f"{label}: no flow ran ({len(run.not_run)} not run)"
    if run.not_run and run.status != "not run":
        run.summary += f", {len(run.not_run)} not run"
    return run


def _result_of(gate: str, run: FlowRun, report: dict | None, failures: Sequence[str] = ()) -> GateResult:
    """A one-app GateResult: green iff flows ran and none failed; nothing ran is held, not green."""
    slim = _slim_report(report) if report is not None else None
    if run.status == "passed":
        return GateResult(green=True, gate=gate, summary=run.summary, report=slim, runs=[run])
    if run.status == "not run":
        return GateResult(green=False, gate=gate, summary=run.summary, report=slim, runs=[run], held=True,
                          gated=False)
    return _red(gate, run.summary, failures or (report_failures(report) if report else []), report=slim, runs=[run])


def kitsoki_gate(app_yaml: Path, flows_glob: str | None, timeout_s: float, kitsoki: str = "kitsoki", *,
                 kitsoki_repo: str | None = None, fail_fast: bool = False, allow_missing_recording: bool = False,
                 app_label: str | None = None) -> Gate:
    """`kitsoki test flows <app.yaml> [--flows GLOB] --json FILE [--fail-fast] [--kitsoki-repo R]` in
    the workspace, as one app's gate.

    Relative `app_yaml` and `flows_glob` are taken relative to the workspace and passed absolute.
    Green iff exit 0, the report parses, it ran at least one flow and `Failed == 0`. Exit 1 must come
    with a failure in the report, exit 0 without one; exit 2 (kitsoki could not run) writes no report.
    """

    def run(workspace: Path) -> GateResult:
        app = app_yaml if Path(app_yaml).is_absolute() else workspace / app_yaml
        shown_app = app_label or _shown_path(app, workspace)
        label = f"kitsoki test flows {shown_app}"
        glob = None
        if flows_glob:
            glob = flows_glob if os.path.isabs(flows_glob) else str(workspace / flows_glob)
        shown_glob = _shown_path(Path(glob), workspace) if glob else ""
        base = FlowRun(app=shown_app, flows=shown_glob, status="error")

        def error(summary: str, tail: Sequence[str] = ()) -> GateResult:
            return _red("kitsoki", summary, tail, runs=[base.model_copy(update={"summary": summary})])

        with tempfile.TemporaryDirectory(prefix="kitsoki-miner-gate-") as tmp:
            report_path = Path(tmp) / "report.json"
            argv = [kitsoki, "test", "flows", str(app)]
            if glob:
                argv += ["--flows", glob]
            argv += ["--json", str(report_path)]
            if fail_fast:
                argv.append("--fail-fast")
            if allow_missing_recording:
                argv.append("--allow-missing-recording")
            if kitsoki_repo:
                argv += ["--kitsoki-repo", kitsoki_repo]
            result = _run(argv, workspace, timeout_s)
            if result.returncode is None:
                return error(f"{label}: {_timeout_text(timeout_s)}", result.tail)
            if result.returncode == 2:
                why = result.tail[-1] if result.tail else "setup error"
                return error(f"{label}: could not run the flows (exit 2): {why}", result.tail)
            try:
                report = orjson.loads(report_path.read_bytes())
            except FileNotFoundError:
                return error(f"{label} {_exit_text(result.returncode)} and wrote no report", result.tail)
            except orjson.JSONDecodeError as exc:
                return error(f"{label}: the JSON report does not parse ({exc})", result.tail)
        problem = _check_report(report)
        if problem:
            return error(f"{label}: {problem}", result.tail)
        for res in report.get("Results") or []:  # kitsoki names a file as the glob matched it: absolute
            if isinstance(res, dict) and isinstance(res.get("File"), str) and os.path.isabs(res["File"]):
                res["File"] = _shown_path(Path(res["File"]), workspace)
        judged = judge_report(report, app=shown_app, flows=shown_glob, label=label)
        if result.returncode == 1 and not judged.failed:
            return error(f"{label} {_exit_text(result.returncode)} though its report has no failure", result.tail)
        if result.returncode not in (0, 1):
            return error(f"{label} {_exit_text(result.returncode)}", result.tail)
        if result.returncode == 0 and judged.failed:
            return error(f"{label} exited 0 though its report has {len(judged.failed)} failed flows", result.tail)
        return _result_of("kitsoki", judged, report)

    return _never_raises("kitsoki", run)


def _shown_path(path: Path, workspace: Path) -> str:
    try:
        return Path(path).relative_to(workspace).as_posix()
    except ValueError:
        return str(path)


# ── builtin gate ──────────────────────────────────────────────────────────────────────────────


def builtin_gate(flows_glob: str | None = None, timeout_s: float | None = None, *, app: str = "",
                 label: str = "built-in flow runner", story: Any = None) -> Gate:
    """core.flows.run_flows over `flows_glob` (workspace-relative; None = every story's flows and
    the root flows), in process; with `story`, every fixture the glob matches runs against it. Zero fixtures is red (like kitsoki's exit 2); a flow the runner
    cannot run is not run, never green; nothing that ran is held.

    With `timeout_s` the runner is waited for on a daemon thread; on timeout the result is red
    and the thread is abandoned (the runner only reads files, so reverting under it is safe).
    """

    def call(workspace: Path) -> Any:
        flows = importlib.import_module("core.flows")  # lazy: the runner is optional at import time

        report = (flows.run_story_flows(story, flows_glob, workspace) if story is not None and flows_glob
                  else flows.run_flows(workspace, flows_glob))
        return report, getattr(flows, "UNSUPPORTED", UNSUPPORTED_PREFIX)

    def run(workspace: Path) -> GateResult:
        report_obj = _call_with_timeout(call, workspace, timeout_s)
        shown = flows_glob or ""
        if report_obj is _TIMED_OUT:
            summary = f"{label}: {_timeout_text(timeout_s or 0)}"
            return _red("builtin", summary, runs=[FlowRun(app=app, flows=shown, status="error", summary=summary)])
        report_obj, prefix = report_obj
        report = report_obj.model_dump() if hasattr(report_obj, "model_dump") else report_obj
        problem = _check_report(report)
        if problem or report.get("Results") is None:
            summary = f"gate crashed: {problem or 'the report has no Results list'}"
            return _red("builtin", summary, runs=[FlowRun(app=app, flows=shown, status="error", summary=summary)])
        if not report["Results"] and not (flows_glob and _any_file(workspace, flows_glob)):
            summary = f"{label}: no flow fixtures matched"
            return _red("builtin", summary, report=_slim_report(report),
                        runs=[FlowRun(app=app, flows=shown, status="error", summary=summary)])
        fatal = report_obj.fatal() if hasattr(report_obj, "fatal") else None
        if fatal is not None:  # kitsoki aborts the whole app run there: exit 2, no report
            summary = f"{label}: could not run the flows: kitsoki aborts the app run here (exit 2): {fatal}"
            return _red("builtin", summary, [fatal], report=_slim_report(report),
                        runs=[FlowRun(app=app, flows=shown, status="error", summary=summary)])
        judged = judge_report(report, app=app, flows=shown, label=label, unsupported=prefix)
        return _result_of("builtin", judged, report)

    return _never_raises("builtin", run)


def _any_file(workspace: Path, glob: str) -> bool:
    import glob as globlib

    pattern = glob if os.path.isabs(glob) else str(Path(workspace) / glob)
    return any(os.path.isfile(match) for match in globlib.glob(pattern))


_TIMED_OUT = object()


def _call_with_timeout(fn: Callable[[Path], Any], workspace: Path, timeout_s: float | None) -> Any:
    if timeout_s is None:
        return fn(workspace)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(workspace)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="kitsoki-miner-builtin-gate", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return _TIMED_OUT
    if "error" in box:
        raise box["error"]
    return box["value"]


# ── what an accept will run (asked before it) ─────────────────────────────────────────────────


class GatePreview(BaseModel, defer_build=True):
    """What the gate of an accept will run, told to a person before it: the kind, and the flow
    files (or the command) it runs; computed by the same scope function the gate runs
    (core.apply.scoped_gate.gate_preview)."""

    kind: str
    runs: list[str]
    """Workspace-relative flow files, or the command line for a command gate."""
    note: str | None = None
    apps: list[str] = []
    """`<app.yaml> (<why>): <n> flows` per app the change reaches, in the order they run."""
    skipped: list[str] = []
    """Apps the change reaches that are not gated (`miner.flow_gate.skip`), `<app.yaml>: <why>`."""
    held: bool = False
    """Nothing would judge the change: an accept is held (not kept) unless `miner.ungated: allow`."""
    gated: bool = True
    """False when no flow exercises the change (held, or kept ungated after the structural checks)."""
    would_exercise: list[str] = []
    """When no flow exercises the change: what would (a root flow, a flow of an importing story...)."""


def resolved_kind(settings: GateSettings) -> str:
    """The gate `settings` ask for. `auto`: the command when one is set, else the kitsoki binary
    when it is on PATH, else the built-in runner."""
    kind = settings.kind
    if kind == "auto":
        if settings.command:
            return "command"
        return "kitsoki" if shutil.which(settings.kitsoki) else "builtin"
    return kind


def choose_gate(workspace: Path, settings: GateSettings, app_yamls: list[Path] | None = None,
                changed: Sequence[str] | None = None, before: dict[str, bytes | None] | None = None) -> Gate:
    """The gate for an accept that changes `changed` (workspace-relative paths; `before` their bytes
    before the edit, for a rung-1 diff of the root overrides). The scope is computed when the gate
    runs, on the tree after the edit (core.apply.scoped_gate). `app_yamls` (old callers) gates
    exactly those apps instead."""
    if resolved_kind(settings) == "command":
        if not settings.command:
            raise ValueError("gate kind 'command' needs a command: set GateSettings.command "
                             "(e.g. [\"make\", \"test\"])")
        return command_gate(settings.command, settings.timeout_s)
    from core.apply.scoped_gate import scoped_gate

    return scoped_gate(settings, changed=list(changed or []), before=before or {}, apps=app_yamls)
