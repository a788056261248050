"""Flow gates: after an accepted delta is written, a gate says green (keep) or red (revert).

Fail closed is the rule of every gate here. A gate that cannot run, times out, crashes, writes
no report or a report we cannot read is red, never green: the applier reverts on red, and a
spurious revert costs a retry while a spurious keep could leave a regressing edit in the tree.
So a gate never raises; every failure becomes a red GateResult whose `summary` a person can act on.

Three kinds:
- command: any argv run in the workspace (`make test`); exit 0 is green.
- kitsoki: the real `kitsoki test flows <app.yaml> --json FILE` (reference §2), per story app.yaml.
  Green needs exit 0, a parsed report and `Failed == 0`; exit 2 (setup error) is red.
- builtin: core.flows.run_flows, the in-process runner of the documented fixture subset.

Subprocess gates run in their own session and, on timeout (and when they end), the whole process
group is killed, so a `make` that forked a test server leaves nothing running against a tree that
is about to be reverted.
"""

from __future__ import annotations

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


class GateResult(BaseModel):
    green: bool
    gate: str
    """Which gate ran: "kitsoki", "command", "builtin", or "none" when none could be chosen."""
    summary: str
    failures: list[str] = []
    duration_s: float = 0.0
    report: dict | None = None
    """The flow report (Go field names: Results/Passed/Failed), turns without View/Events."""


class GateSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    """A misspelt key (`comand:`) is an error, never a silent fall-back to another gate."""

    kind: Literal["auto", "kitsoki", "command", "builtin"] = "auto"
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    kitsoki: str = Field(default="kitsoki", min_length=1)
    """The kitsoki binary: a name looked up on PATH, or a path."""
    flows: str | None = None
    """Fixture glob relative to the workspace; None = the runner's default."""
    timeout_s: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    """A gate given no time at all would revert every accept: zero and negative are refused."""

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


class _Run(BaseModel):
    returncode: int | None
    """None when the run timed out and was killed."""
    tail: list[str]


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_spawn_listener: ContextVar[Callable[[int], None] | None] = ContextVar("gate_spawn_listener", default=None)


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
    """Why `report` is not a FlowReport, or None when it is one."""
    if not isinstance(report, dict):
        return "the report is not a JSON object"
    if not isinstance(report.get("Results"), list):
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


def _judge_report(gate: str, report: dict, label: str) -> GateResult:
    """Green iff the report has run at least one flow and none failed (shared with builtin)."""
    passed, failed = report["Passed"], report["Failed"]
    slim = _slim_report(report)
    if not report["Results"]:
        return _red(gate, f"{label}: no flow fixtures matched", report=slim)
    if failed:
        return _red(gate, f"{label}: {failed} of {passed + failed} flows failed",
                    report_failures(report), report=slim)
    return GateResult(green=True, gate=gate, summary=f"{label}: {passed}/{passed + failed} flows pass",
                      report=slim)


def kitsoki_gate(app_yaml: Path, flows_glob: str | None, timeout_s: float, kitsoki: str = "kitsoki") -> Gate:
    """`kitsoki test flows <app.yaml> [--flows GLOB] --json FILE` in the workspace.

    Relative `app_yaml` and `flows_glob` are taken relative to the workspace and passed absolute.
    Green iff exit 0, the report parses, it ran at least one flow and `Failed == 0`.
    """

    def run(workspace: Path) -> GateResult:
        app = app_yaml if Path(app_yaml).is_absolute() else workspace / app_yaml
        label = f"kitsoki test flows {_shown_path(app, workspace)}"
        with tempfile.TemporaryDirectory(prefix="kitsoki-miner-gate-") as tmp:
            report_path = Path(tmp) / "report.json"
            argv = [kitsoki, "test", "flows", str(app)]
            if flows_glob:
                glob = flows_glob if os.path.isabs(flows_glob) else str(workspace / flows_glob)
                argv += ["--flows", glob]
            argv += ["--json", str(report_path)]
            result = _run(argv, workspace, timeout_s)
            if result.returncode is None:
                return _red("kitsoki", f"{label}: {_timeout_text(timeout_s)}", result.tail)
            if result.returncode == 2:
                why = result.tail[-1] if result.tail else "setup error"
                return _red("kitsoki", f"{label}: could not run the flows (exit 2): {why}", result.tail)
            try:
                report = orjson.loads(report_path.read_bytes())
            except FileNotFoundError:
                return _red("kitsoki", f"{label} {_exit_text(result.returncode)} and wrote no report",
                            result.tail)
            except orjson.JSONDecodeError as exc:
                return _red("kitsoki", f"{label}: the JSON report does not parse ({exc})", result.tail)
        problem = _check_report(report)
        if problem:
            return _red("kitsoki", f"{label}: {problem}", result.tail)
        judged = _judge_report("kitsoki", report, label)
        if judged.green and result.returncode != 0:
            return _red("kitsoki", f"{label} {_exit_text(result.returncode)} though its report has no failure",
                        result.tail, report=judged.report)
        return judged

    return _never_raises("kitsoki", run)


def _shown_path(path: Path, workspace: Path) -> str:
    try:
        return Path(path).relative_to(workspace).as_posix()
    except ValueError:
        return str(path)


def _all_of(gates: Sequence[Gate], name: str) -> Gate:
    """Run gates in turn, stopping at the first red (the delta is reverted either way); the
    reports are merged into one FlowReport shape."""

    def run(workspace: Path) -> GateResult:
        if not gates:
            return _red(name, "no story app.yaml to run the flows of")
        results: list[GateResult] = []
        for gate in gates:
            results.append(gate(workspace))
            if not results[-1].green:
                break
        merged: dict = {"Results": [], "Passed": 0, "Failed": 0}
        for res in results:
            if res.report:
                merged["Results"] += res.report.get("Results") or []
                merged["Passed"] += res.report.get("Passed") or 0
                merged["Failed"] += res.report.get("Failed") or 0
        summary = "; ".join(r.summary for r in results)
        if len(results) < len(gates):
            summary += f" ({len(gates) - len(results)} more not run)"
        return GateResult(green=all(r.green for r in results), gate=name, summary=summary,
                          failures=[f for r in results for f in r.failures], report=merged)

    return _never_raises(name, run)


# ── builtin gate ──────────────────────────────────────────────────────────────────────────────


def builtin_gate(flows_glob: str | None = None, timeout_s: float | None = None) -> Gate:
    """core.flows.run_flows in process. Zero fixtures is red (like kitsoki's exit 2).

    With `timeout_s` the runner is waited for on a daemon thread; on timeout the result is red
    and the thread is abandoned (the runner only reads files, so reverting under it is safe).
    """

    def call(workspace: Path) -> Any:
        from core.flows import run_flows  # lazy: the runner is optional at import time

        return run_flows(workspace, flows_glob)

    def run(workspace: Path) -> GateResult:
        report_obj = _call_with_timeout(call, workspace, timeout_s)
        if report_obj is _TIMED_OUT:
            return _red("builtin", f"built-in flow runner: {_timeout_text(timeout_s or 0)}")
        report = report_obj.model_dump() if hasattr(report_obj, "model_dump") else report_obj
        problem = _check_report(report)
        if problem:
            return _red("builtin", f"gate crashed: {problem}")
        return _judge_report("builtin", report, "built-in flow runner")

    return _never_raises("builtin", run)


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


# ── choosing ──────────────────────────────────────────────────────────────────────────────────


def choose_gate(workspace: Path, settings: GateSettings, app_yamls: list[Path]) -> Gate:
    """The gate `settings` asks for. `auto`: the command when one is set, else the kitsoki binary
    when it is on PATH, else the built-in runner."""
    kind = settings.kind
    if kind == "auto":
        if settings.command:
            kind = "command"
        elif shutil.which(settings.kitsoki):
            kind = "kitsoki"
        else:
            kind = "builtin"
    if kind == "command":
        if not settings.command:
            raise ValueError("gate kind 'command' needs a command: set GateSettings.command "
                             "(e.g. [\"make\", \"test\"])")
        return command_gate(settings.command, settings.timeout_s)
    if kind == "kitsoki":
        gates = [kitsoki_gate(app, settings.flows, settings.timeout_s, settings.kitsoki) for app in app_yamls]
        return _all_of(gates, "kitsoki")
    return builtin_gate(settings.flows, settings.timeout_s)


# ── what an accept will run (asked before it) ─────────────────────────────────────────────────


class GatePreview(BaseModel):
    """What the gate `choose_gate` picks for these settings will run, told to a person before an
    accept: the kind, and the flow files (or the command) it runs."""

    kind: str
    runs: list[str]
    """Workspace-relative flow files, or the command line for a command gate."""
    note: str | None = None


def gate_preview(workspace: Path, settings: GateSettings, app_yamls: list[Path]) -> GatePreview:
    """The one place that says which flows an accept runs (the gate's scope may narrow later to
    the apps a change touches: change it here and in choose_gate together)."""
    kind = settings.kind
    if kind == "auto":
        kind = "command" if settings.command else "kitsoki" if shutil.which(settings.kitsoki) else "builtin"
    if kind == "command":
        return GatePreview(kind="command", runs=[shlex.join(settings.command or [])])
    if kind == "kitsoki":
        files: list[str] = []
        for app in app_yamls:
            found = Path(workspace).glob(settings.flows) if settings.flows else (Path(app).parent / "flows").glob("*.yaml")
            files += [name for name in sorted(_shown_path(p, workspace) for p in found) if name not in files]
        return GatePreview(kind="kitsoki", runs=files)
    from core.flows import discover_fixtures  # lazy, as in builtin_gate
    from core.kitsoki.story import load_workspace

    stories = load_workspace(workspace).stories
    found = discover_fixtures(Path(workspace), stories, settings.flows)
    return GatePreview(kind="builtin", runs=[_shown_path(p, workspace) for p in found],
                       note=None if found else "no flow fixture matches: the gate is red (nothing is kept)")
