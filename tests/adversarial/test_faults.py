"""File-system faults at every call of the real commands: a full disk, a read-only workspace, a
state folder the process may not use, a state folder swapped for a file mid-accept.

Each case forks a real child (tests/adversarial/crashkit.py) that runs the real command line (or
the language server's accept) on a copy of the mined and proposed demo workspace, with every
counted file-system call of the fault's kind failing from call N on (every N in full mode).

Pass rule: no traceback in any output; a command that could not do its job says so in a person's
words ("disk full", "read-only file system", "permission denied") and names a file; the
workspace's bytes are exactly before or exactly after (once the fault is gone, recovery settles
any interrupted accept, and a verdict is recorded at most once and exactly once for a kept
change); nothing outside the workspace or under `.git/` changes; an accept that cannot be
recovered where it is (read-only) is said by every command.
"""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
import statekit
from statekit import adversarial_cases, decisions, no_journal_left, snapshot

from core.apply import GateResult, recover
from core.apply.resolve import resolve_accept, unsettled
from core.mining.service import trace_path
from core.proposals.decide import DecisionRefused, accept
from core.trace import Trace

pytestmark = pytest.mark.adversarial("faults")

_TMP = Path(tempfile.mkdtemp(prefix="kitsoki-miner-faults-"))
atexit.register(shutil.rmtree, _TMP, True)
TEMPLATE = statekit.build_template(_TMP / "template")
CRASHER = statekit.Crasher()
atexit.register(CRASHER.close)
WORLD, RED = TEMPLATE["cards"]["world"], TEMPLATE["cards"]["gate"]  # the gate card: its accept goes red (flows/ship.yaml)
WORDS = {errno.ENOSPC: "disk full", errno.EROFS: "read-only file system", errno.EACCES: "permission denied"}


def _spec(ws: Path, command: str) -> dict:
    transcripts = ws.parent / "transcripts"
    argv = {"accept": ["accept", WORLD], "accept-red": ["accept", RED], "refine": ["refine", WORLD],
            "mine": ["mine", "--dir", str(transcripts), "--workers", "1"], "propose": ["propose"],
            "proposals": ["proposals"]}
    if command == "server-accept":
        return {"op": "sidecar-accept", "workspace": str(ws), "recipe_id": WORLD}
    if command == "server-pass":  # the language server's mining loop: a pass, then the proposer
        return {"op": "sidecar-pass", "workspace": str(ws), "dirs": [str(transcripts)]}
    return {"op": "cli", "workspace": str(ws), "argv": [*argv[command], "--repo", str(ws)]}


COMMANDS = ["accept", "accept-red", "refine", "mine", "server-accept", "server-pass"]


def _measure(command: str) -> tuple[int, int]:
    """(counted calls, exit code) of the command when nothing fails."""
    ws, _ = statekit.copy_case(TEMPLATE, _TMP / f"measure-{command}")
    answer = CRASHER.run({**_spec(ws, command), "kill_at": 0}, _TMP / f"measure-{command}" / "run")
    assert answer["code"] in (0, 1), answer["log"][-3000:]  # 1: a red accept's exit code
    return answer["calls"], answer["code"]


MEASURED = {command: _measure(command) for command in COMMANDS + ["propose", "proposals"]}
CALLS = {command: calls for command, (calls, _) in MEASURED.items()}


def _check_output(log: str, code: int | None, fault: int, command: str) -> None:
    """No traceback; a command that did not end as it does without the fault says why, in words
    (the server's pass: in its status)."""
    assert "Traceback" not in log, log[-4000:]
    if code != MEASURED[command][1]:
        assert WORDS[fault] in log, f"a failed command did not say {WORDS[fault]!r}: {log[-2000:]}"
    if command == "server-pass" and "last_error=None" not in log:
        assert WORDS[fault] in log, f"the server's status did not say {WORDS[fault]!r}: {log[-2000:]}"


def _settle_and_check(ws: Path, outside: Path, before: dict, outside_before: dict, recipe_id: str | None) -> None:
    """Once the fault is gone: recovery settles what was interrupted; before or after, never half."""
    trace = Trace(trace_path(ws))
    recover(ws, trace)
    for item in unsettled(ws):  # an edit of ours that could not be put back: a person's choice
        resolve_accept(ws, item.recipe_id, "restore", trace=trace)
    assert no_journal_left(ws)
    assert snapshot(outside) == outside_before, "something outside the workspace changed"
    now = snapshot(ws)
    assert {k: v for k, v in now.items() if k.startswith(".git")} == \
           {k: v for k, v in before.items() if k.startswith(".git")}, ".git/ changed"
    if recipe_id is None:
        assert now == before, "a command that changes no project file changed one"
        return
    after = statekit.after_bytes(TEMPLATE, "world")
    kept = all(k in now and now[k][0] == statekit.sha(v) for k, v in after.items())
    decided = decisions(ws, recipe_id)
    assert len(decided) <= 1, f"the verdict was recorded {len(decided)} times"
    if kept and now != before:
        assert [(d["flows_green"], d["reverted"]) for d in decided] == [(True, False)], decided
        assert {k: v for k, v in now.items() if k not in after} == {k: v for k, v in before.items() if k not in after}
    else:
        assert now == before, "neither the before nor the after tree"


def _cases(fault: int, commands: list[str], fast: int) -> list:
    return [c for command in commands for c in adversarial_cases(
        [pytest.param(command, n, id=f"{command}-from-call{n}") for n in range(1, CALLS[command] + 1)], fast=fast)]


@pytest.mark.parametrize(("command", "n"), _cases(errno.ENOSPC, COMMANDS, fast=3))
def test_a_disk_that_fills_up_at_any_call(tmp_path: Path, command: str, n: int) -> None:
    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    before, outside_before = snapshot(ws), snapshot(outside)
    answer = CRASHER.run({**_spec(ws, command), "fault": {"errno": errno.ENOSPC, "from": n}}, tmp_path / "run")
    assert answer["signal"] is None and answer["code"] != 3, answer["log"][-4000:]
    _check_output(answer["log"], answer["code"], errno.ENOSPC, command)
    _settle_and_check(ws, outside, before, outside_before, WORLD if command in ("accept", "server-accept") else
                      RED if command == "accept-red" else None)


@pytest.mark.parametrize("command", COMMANDS + ["propose", "proposals"])
def test_a_read_only_workspace(tmp_path: Path, command: str) -> None:
    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    before, outside_before = snapshot(ws), snapshot(outside)
    answer = CRASHER.run({**_spec(ws, command), "fault": {"errno": errno.EROFS, "from": 1}}, tmp_path / "run")
    assert answer["signal"] is None and answer["code"] != 3, answer["log"][-4000:]
    _check_output(answer["log"], answer["code"], errno.EROFS, command)
    assert snapshot(ws) == before and snapshot(outside) == outside_before


def test_a_crashed_accept_that_cannot_be_recovered_on_a_read_only_workspace_is_said(tmp_path: Path) -> None:
    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    before = snapshot(ws)
    killed = CRASHER.run({"op": "accept", "workspace": str(ws), "recipe_id": WORLD, "die_at_hook": "before_gate"},
                         tmp_path / "accept")
    assert killed["signal"] == signal.SIGKILL
    for command in ("proposals", "mine"):
        answer = CRASHER.run({**_spec(ws, command), "fault": {"errno": errno.EROFS, "from": 1}}, tmp_path / command)
        log = answer["log"]
        assert "Traceback" not in log, log[-4000:]
        assert f"an accept of {WORLD} is not settled" in log and "read-only" in log, log[-3000:]
    recover(ws, Trace(trace_path(ws)))  # writable again
    assert snapshot(ws) == before and no_journal_left(ws)


STATE_FOLDERS = [".artifacts/mining", ".artifacts/mining/state", ".artifacts/mining/journal"]


@pytest.mark.parametrize("folder", STATE_FOLDERS)
@pytest.mark.parametrize("command", ["accept", "mine", "proposals", "server-accept"])
def test_a_state_folder_the_process_may_not_use(tmp_path: Path, folder: str, command: str) -> None:
    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    before, outside_before = snapshot(ws), snapshot(outside)
    fault = {"errno": errno.EACCES, "from": 1, "under": str(ws / folder)}
    answer = CRASHER.run({**_spec(ws, command), "fault": fault}, tmp_path / "run")
    assert answer["signal"] is None and answer["code"] != 3, answer["log"][-4000:]
    _check_output(answer["log"], answer["code"], errno.EACCES, command)
    _settle_and_check(ws, outside, before, outside_before, WORLD if "accept" in command else None)


SWAPPED = [".artifacts/mining", ".artifacts/mining/journal"]


@pytest.mark.parametrize("green", [True, False], ids=["green", "red"])
@pytest.mark.parametrize("folder", SWAPPED)
def test_a_state_folder_swapped_for_a_file_mid_accept(tmp_path: Path, folder: str, green: bool) -> None:
    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    before, outside_before = snapshot(ws), snapshot(outside)
    moved = tmp_path / "moved-state"

    def gate(workspace: Path) -> GateResult:
        shutil.move(workspace / folder, moved)
        (workspace / folder).write_bytes(b"not a folder\n")
        return GateResult(green=green, gate="test", summary="simulated")

    try:
        decision = accept(ws, WORLD, gate=gate)
        if not decision.flows_green:  # red, or green that could not be recorded as kept: reverted, and why
            assert decision.reverted and decision.failure, decision.answer()
            assert green is False or str(ws / folder) in decision.failure, decision.failure
    except (DecisionRefused, OSError) as exc:
        assert str(ws / folder) in str(exc) or folder.split("/")[-1] in str(exc), exc
    # Put the state back as it was: the next command finishes whatever the swap interrupted.
    (ws / folder).unlink()
    shutil.move(moved, ws / folder)
    trace = Trace(trace_path(ws))
    recover(ws, trace)
    for item in unsettled(ws):
        resolve_accept(ws, item.recipe_id, "restore", trace=trace)
    now = snapshot(ws)
    after = statekit.after_bytes(TEMPLATE, "world")
    if green and now != before:
        assert all(now[k][0] == statekit.sha(v) for k, v in after.items())
    else:
        assert now == before
    assert snapshot(outside) == outside_before and len(decisions(ws, WORLD)) <= 1
