"""A gate's process group ends with the accept that started it, even when that accept is SIGKILLed.

A subprocess gate runs in a session of its own (so a timeout can end everything it forked). If the
accept is killed while the gate runs, nothing ends that group: `make test` and the servers it
started would go on running against a tree that recovery is about to restore. So the gate's
leader is written into the apply journal before it may run (the child waits on a pipe until the
parent has recorded it, and exits if the parent dies first), and recovery ends the group.

Before killing anything recovery checks it is still the same group: the same boot, and either the
leader itself (same pid, same start time in clock ticks since boot), or, when the leader is gone,
processes of that group and session started no earlier than it (Linux never hands out a pid that
is still some group's id, so a group outliving its leader keeps its id). Where /proc is missing,
the identity cannot be checked and nothing is killed; the report says so.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from pydantic import BaseModel

_PROC = Path("/proc")
_GONE_WAIT_S = 5.0


class GateProcess(BaseModel, defer_build=True):
    """The leader of a gate's process group (its pid is the group's and the session's id)."""

    pid: int
    start_ticks: int | None = None
    """Field 22 of /proc/<pid>/stat; None where there is no /proc."""
    boot_id: str | None = None


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    tail = raw[raw.rfind(b")") + 2:].split()  # comm may hold spaces and parentheses
    return [f.decode("ascii", "replace") for f in tail]


def _boot_id() -> str | None:
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return None


def identify(pid: int) -> GateProcess:
    fields = _stat_fields(pid)
    ticks = int(fields[19]) if fields and len(fields) > 19 else None
    return GateProcess(pid=pid, start_ticks=ticks, boot_id=_boot_id())


def _members(group: GateProcess) -> list[int]:
    """Live (non-zombie) processes of the recorded group and session, started no earlier than its leader."""
    out = []
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return out
    for name in entries:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if not fields or len(fields) <= 19 or fields[0] == "Z":
            continue
        try:
            pgrp, session, ticks = int(fields[2]), int(fields[3]), int(fields[19])
        except ValueError:
            continue
        if pgrp == group.pid and session == group.pid and group.start_ticks is not None \
                and ticks >= group.start_ticks:
            out.append(int(name))
    return out


def _works_in(pid: int, workspace: Path) -> bool:
    """True when the process's working folder is the workspace or inside it."""
    try:
        cwd = Path(os.readlink(_PROC / str(pid) / "cwd"))
    except OSError:
        return False
    root = Path(workspace).resolve()
    return cwd == root or cwd.is_relative_to(root)


def end_group(group: GateProcess, *, within: Path | None = None) -> str:
    """End the recorded gate's process group if it is still running; what happened, for the report.
    `within`: the record itself is not verified (a journal signed with another key), so the group is
    ended only if its processes also work inside that workspace, as every gate does."""
    if group.start_ticks is None or group.boot_id is None or not _PROC.is_dir():
        return "not checked: this system has no /proc to confirm the process is the gate"
    if _boot_id() != group.boot_id:
        return "gone: the machine restarted since"
    leader = _stat_fields(group.pid)
    if leader is not None and len(leader) > 19 and leader[0] != "Z":
        if int(leader[19]) != group.start_ticks:
            return f"gone: pid {group.pid} is now another process; left alone"
        members = [group.pid]
    else:
        members = _members(group)
        if not members:
            return "gone: it had already ended"
    if within is not None and not all(_works_in(pid, within) for pid in members):
        return f"left alone: process group {group.pid} does not work in {within}, so it may not be the gate"
    try:
        os.killpg(group.pid, signal.SIGKILL)
    except ProcessLookupError:
        return "gone: it had already ended"
    except PermissionError:
        return f"could not end process group {group.pid}: permission denied"
    deadline = time.monotonic() + _GONE_WAIT_S
    while time.monotonic() < deadline and _members(group):
        time.sleep(0.02)
    return f"ended: process group {group.pid} ({len(members)} process{'es' if len(members) != 1 else ''}) killed"
