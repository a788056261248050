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
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path

_EVENTS = {"open", "os.rename", "os.remove", "os.mkdir", "os.rmdir", "os.chmod", "os.link", "os.truncate",
           "os.symlink"}

_state = {"armed": False, "count": 0, "kill_at": 0, "prefix": "/nonexistent"}


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


def _install() -> None:
    sys.addaudithook(_audit)
    real_write, real_fsync = os.write, os.fsync

    def write(fd, data):
        _tick()
        return real_write(fd, data)

    def fsync(fd):
        _tick()
        return real_fsync(fd)

    os.write, os.fsync = write, fsync


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
    raise ValueError(f"unknown op {op}")


def _child(spec: dict) -> None:
    log = os.open(spec["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    code = 0
    try:
        call = _operation(spec)
        _state.update(prefix=str(Path(spec["workspace"]).resolve()), kill_at=int(spec.get("kill_at", 0)),
                      count=0, armed=True)
        try:
            call()
        finally:
            _state["armed"] = False
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
