"""Fault injection at every file-system call: a forked child SIGKILLs itself at call N.

`python crashkit.py <repo root>` is a small fork server. It imports everything an operation needs
once, then for each JSON spec line on stdin forks a child that runs one operation (spec "op":
accept | apply | recover) with every os-level file-system call counted: opens (the `open` audit
event, raised by built-in open() and os.open), renames and replaces, unlinks, mkdir, rmdir, chmod,
link, truncate, symlink (their audit events), and os.write / os.fsync (wrapped: they raise no audit
event). Calls on absolute paths outside the workspace (Python's own files, /proc, temp files) are
not counted. At call number `kill_at` (1-based) the child sends itself SIGKILL before the call runs;
with `kill_at` 0 it runs to the end. The server answers one JSON line per spec:
`{"signal": <n or null>, "code": <exit code or null>, "calls": <calls counted>}`.

Forking keeps a case cheap (no interpreter start, no imports) while the kill stays real: the child
is a separate process that dies mid-call, exactly as a killed `kitsoki-miner accept` would.

A spec with `"fault"` makes the same counted calls fail instead of killing: from call `from`
(1-based) on, every call of the fault's kind whose path lies under `under` (default: the
workspace) raises OSError(`errno`) before it runs, as a full disk (ENOSPC: writes, creates,
fsyncs), a read-only file system (EROFS: anything that changes the tree) or a folder the process
may not use (EACCES: any call on a path under it, reads included) would. Paths given relative to a
folder descriptor are resolved through /proc/self/fd. Ops: accept | apply | recover as above,
`cli` (argv: the real command line, its output in the log) and `sidecar-accept` (the language
server's accept: WorkspaceSidecar.decide).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import traceback
from pathlib import Path

_EVENTS = {"open", "os.rename", "os.remove", "os.mkdir", "os.rmdir", "os.chmod", "os.link", "os.truncate",
           "os.symlink"}

_state = {"armed": False, "count": 0, "kill_at": 0, "prefix": "/nonexistent", "fault": None}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGES = {"os.rename", "os.remove", "os.mkdir", "os.rmdir", "os.chmod", "os.link", "os.truncate", "os.symlink"}
_last_dir_fd: list[int | None] = [None]


def _resolved(path, dir_fd: int | None) -> str | None:
    if isinstance(path, int):
        try:
            return os.readlink(f"/proc/self/fd/{path}")
        except OSError:
            return None
    if not isinstance(path, (str, bytes, os.PathLike)):
        return None
    text = os.fsdecode(path)
    if os.path.isabs(text):
        return text
    if dir_fd is not None:
        try:
            return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
        except OSError:
            return None
    return os.path.abspath(text)


def _fail(kind: str, path) -> None:
    """Raise the spec's fault for a call of `kind` (write | change | read) on `path`, when it applies."""
    fault = _state["fault"]
    if fault is None or _state["count"] < fault["from"] or path is None:
        return
    if not path.startswith(fault["under"]):
        return
    code = fault["errno"]
    if code == errno.ENOSPC and kind not in ("write", "create"):
        return
    if code == errno.EROFS and kind == "read":
        return
    raise OSError(code, os.strerror(code), path)


def _tick() -> None:
    if not _state["armed"]:
        return
    _state["count"] += 1
    if _state["count"] == _state["kill_at"]:
        os.kill(os.getpid(), signal.SIGKILL)


def _ours(path) -> bool:
    if isinstance(path, int):
        return True
    if not isinstance(path, (str, bytes, os.PathLike)):
        return False
    text = os.fsdecode(path)
    return not os.path.isabs(text) or text.startswith(_state["prefix"])


def _audit(event: str, args) -> None:
    if _state["armed"] and event in _EVENTS and args and _ours(args[0]):
        _tick()
        if _state["fault"] is not None:
            if event == "open":
                flags = args[2] if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0 else 0
                mode = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
                writes = bool(flags & _WRITE_FLAGS) or any(c in mode for c in "wax+")
                creates = bool(flags & os.O_CREAT) or any(c in mode for c in "wax")
                target = _resolved(args[0], _last_dir_fd[0])
                if creates and target is not None and os.path.lexists(target) and not flags & os.O_TRUNC \
                        and "w" not in mode:
                    creates = False  # O_CREAT on a file that exists allocates nothing
                kind = "create" if creates else "change" if writes else "read"
                _fail(kind, target)
            else:
                dir_fd = args[-1] if event in ("os.mkdir", "os.remove", "os.rmdir", "os.chmod") else \
                    args[2] if len(args) > 2 else None
                dir_fd = dir_fd if isinstance(dir_fd, int) and dir_fd >= 0 else None
                _fail("create" if event in ("os.mkdir", "os.link", "os.symlink") else "change",
                      _resolved(args[0], dir_fd))


def _install() -> None:
    sys.addaudithook(_audit)
    real_write, real_fsync, real_open = os.write, os.fsync, os.open

    def write(fd, data):
        _tick()
        _fail("write", _resolved(fd, None))
        return real_write(fd, data)

    def fsync(fd):
        _tick()
        if _state["fault"] is not None:
            target = _resolved(fd, None)
            if target is not None and not os.path.isdir(target):
                _fail("write", target)
        return real_fsync(fd)

    def open_(path, flags, mode=0o777, *, dir_fd=None):
        _last_dir_fd[0] = dir_fd
        try:
            return real_open(path, flags, mode, dir_fd=dir_fd)
        finally:
            _last_dir_fd[0] = None

    os.write, os.fsync, os.open = write, fsync, open_


def _operation(spec: dict):
    import base64

    from core.apply import GateResult, apply_delta, command_gate, recover
    from core.mining.service import trace_path
    from core.proposals.decide import accept
    from core.trace import Trace

    workspace = Path(spec["workspace"])
    op = spec["op"]
    die_at = spec.get("die_at_hook")

    def hook(name: str) -> None:  # a kill at a named point of the apply, for a recovery's starting state
        if name == die_at:
            os.kill(os.getpid(), signal.SIGKILL)

    if op == "accept":
        return lambda: accept(workspace, spec["recipe_id"], hook=hook)
    if op == "apply":
        if spec.get("gate"):
            gate = command_gate(spec["gate"], 30.0)
        else:
            def gate(_):
                return GateResult(green=spec["green"], gate="test", summary="simulated")

        def record(outcome) -> None:
            Trace(trace_path(workspace)).proposal_decided(recipe_id=outcome.recipe_id, verdict="accept",
                                                          flows_green=outcome.flows_green, reverted=outcome.reverted,
                                                          call_id=outcome.call_id)

        return lambda: apply_delta(workspace, spec["recipe_id"],
                                   {k: base64.b64decode(v) for k, v in spec["changes"].items()}, spec["expected"],
                                   gate=gate, reload=lambda p: None, on_outcome=record, hook=hook)
    if op == "recover":
        return lambda: recover(workspace, Trace(trace_path(workspace)))
    if op == "cli":
        from server.cli import main

        def run_cli() -> None:
            code = main(spec["argv"])
            sys.stdout.flush()
            sys.stderr.flush()
            if code:
                raise SystemExit(code)
        return run_cli
    if op == "sidecar-accept":
        from core.sidecar import WorkspaceSidecar

        def run_sidecar() -> None:
            sidecar = WorkspaceSidecar(workspace, mining=False, watch=False)
            sidecar.start()
            try:
                try:
                    print(sidecar.decide(spec["recipe_id"], "accept").answer(), flush=True)
                except Exception as exc:  # noqa: BLE001 - what the server would answer, printed for the test
                    from server.lsp import verdict_error

                    error = verdict_error(exc)
                    if error is None:
                        raise
                    print(f"answered: {type(error).__name__}: {error}", flush=True)
                print(f"status attention: {sidecar.status().attention}", flush=True)
            finally:
                sidecar.stop()
        return run_sidecar
    if op == "sidecar-pass":
        from core.sidecar import WorkspaceSidecar

        def run_pass_in_server() -> None:
            sidecar = WorkspaceSidecar(workspace, mining=True, watch=False,
                                       transcript_dirs=[Path(d) for d in spec.get("dirs", [])], workers=1)
            sidecar.start()
            try:
                sidecar.miner.wait_idle(120)
                status = sidecar.status()
                print(f"status: last_error={status.last_error} proposer_error={status.proposer_error} "
                      f"attention={status.attention}", flush=True)
            finally:
                sidecar.stop()
        return run_pass_in_server
    raise ValueError(f"unknown op {op}")


def _child(spec: dict) -> None:
    log = os.open(spec["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    code = 0
    try:
        call = _operation(spec)
        prefix = str(Path(spec["workspace"]).resolve())
        fault = spec.get("fault")
        if fault is not None:
            fault = {"from": int(fault.get("from", 1)), "errno": int(fault["errno"]),
                     "under": str(Path(fault.get("under") or prefix).resolve())}
        _state.update(prefix=prefix, kill_at=int(spec.get("kill_at", 0)), count=0, armed=True, fault=fault)
        try:
            call()
        finally:
            _state["armed"] = False
            _state["fault"] = None
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported to the test through the exit code and the log
        traceback.print_exc()
        code = 3
    with open(spec["result"], "w") as fh:
        fh.write(str(_state["count"]))
    sys.stdout.flush()
    os._exit(code)


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    import orjson

    # Everything an operation imports, imported before any fork: a lazy import mid-operation would
    # open (and write .pyc) files that a fresh process counts and a warm one does not.
    import core.apply.recovery  # noqa: F401
    import core.flows  # noqa: F401
    import core.proposals.decide  # noqa: F401
    import core.proposals.targets  # noqa: F401
    import core.proposals.settings  # noqa: F401
    import core.sidecar  # noqa: F401
    import server.cli  # noqa: F401
    import server.cli_proposals  # noqa: F401

    _install()
    for line in sys.stdin:
        spec = orjson.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(spec)
        _, status = os.waitpid(pid, 0)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        try:
            calls = int(Path(spec["result"]).read_text())
        except (OSError, ValueError):
            calls = None
        sys.stdout.write(orjson.dumps({"signal": sig, "code": code, "calls": calls}).decode() + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
