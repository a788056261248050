"""A person saves the very file an accept is writing, at every moment of the accept, in place or
by rename (as editors save), with a green gate and with a red one; and a reject races an accept.

Pass rule: the person's last save is what the file holds afterwards, always (never overwritten by
the accept's write, nor by a red gate's revert). The rest of the tree is exactly before or after.
A verdict is recorded only for a tree that is exactly kept or exactly reverted; an accept stopped
before its write records nothing and writes nothing, and one whose change may still be under the
person's edit stays unsettled (said by `attention`) until the person resolves it, which records
exactly one verdict. A reject and an accept that race record one verdict between them.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
import statekit
from statekit import adversarial_cases, decisions, no_journal_left, snapshot

from core.apply import HOOK_POINTS, GateResult
from core.apply.resolve import resolve_accept, unsettled
from core.attention import attention
from core.locks import workspace_lock
from core.mining.service import trace_path
from core.proposals.decide import DecisionRefused, accept, reject
from core.trace import Trace

pytestmark = pytest.mark.adversarial("concurrency")

_TMP = Path(tempfile.mkdtemp(prefix="kitsoki-miner-edits-"))
atexit.register(shutil.rmtree, _TMP, True)
TEMPLATE = statekit.build_template(_TMP / "template")
WORLD = TEMPLATE["cards"]["world"]
TARGET = ".kitsoki.yaml"
TYPED = b"# typed by the person during the accept\n"

WINDOWS = ["locked", "journal_written", f"tmp:{TARGET}", f"wrote:{TARGET}", "before_reload", "before_gate",
           "during_gate", "after_gate", f"restore:{TARGET}", "settled", "before_journal_delete"]
"""Every hook point of an accept (core.apply.HOOK_POINTS, `during_gate` being inside the gate and
`restore:` inside a red gate's revert), for the file the world proposal changes."""
assert {w.split(":")[0] for w in WINDOWS} >= {p.split(":")[0] for p in HOOK_POINTS}


def _save(path: Path, how: str) -> bytes:
    """The person's save: their bytes, written in place or by writing a copy and renaming it over."""
    data = path.read_bytes() + TYPED
    if how == "in place":
        with open(path, "r+b") as fh:
            fh.write(data)
            fh.truncate()
    else:
        copy = path.with_name(f".{path.name}.editor-swap")
        copy.write_bytes(data)
        os.replace(copy, path)
    return data


CASES = [pytest.param(window, how, green, id=f"{window}-{how.replace(' ', '-')}-{'green' if green else 'red'}")
         for window in WINDOWS for how in ("in place", "by rename") for green in (True, False)
         if not (window.startswith("restore:") and green)]


@pytest.mark.parametrize(("window", "how", "green"), adversarial_cases(CASES, fast=10))
def test_a_save_at_any_moment_of_an_accept_is_never_lost(tmp_path: Path, window: str, how: str, green: bool) -> None:
    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    before, outside_before = snapshot(ws), snapshot(outside)
    saved: list[bytes] = []

    def hook(point: str) -> None:
        if point == window and not saved:
            saved.append(_save(ws / TARGET, how))

    def gate(_workspace: Path) -> GateResult:
        hook("during_gate")
        return GateResult(green=green, gate="test", summary="simulated " + ("green" if green else "red"))

    try:
        decision = accept(ws, WORLD, gate=gate, hook=hook)
    except DecisionRefused as refused:
        decision = refused
    assert saved, f"the window {window} was never reached"
    _assert_the_save_kept(ws, before, outside, outside_before, saved[0], decision)


def _assert_the_save_kept(ws: Path, before: dict, outside: Path, outside_before: dict, saved: bytes,
                          decision) -> None:
    assert (ws / TARGET).read_bytes() == saved, "the person's save was overwritten"
    assert snapshot(outside) == outside_before
    rest = {k: v for k, v in snapshot(ws).items() if k != TARGET}
    assert rest == {k: v for k, v in before.items() if k != TARGET}, "the rest of the tree changed"
    verdicts = [(d["flows_green"], d["reverted"]) for d in decisions(ws, WORLD)]
    if isinstance(decision, DecisionRefused):  # stopped before the write: nothing applied, nothing recorded
        assert TARGET in str(decision) and verdicts == [] and no_journal_left(ws)
        return
    if decision.unresolved:  # the change may be under the save: the person settles it
        assert verdicts == [] and TARGET in decision.kept_edits
        [item] = unsettled(ws)
        assert TARGET in attention(ws)[0] and item.files[0].now_is == "other"
        resolve_accept(ws, WORLD, "keep")
        assert (ws / TARGET).read_bytes() == saved
        assert [(d["flows_green"], d["reverted"]) for d in decisions(ws, WORLD)] == [(True, False)]
    else:
        assert verdicts == [(decision.flows_green, decision.reverted)], verdicts
    assert no_journal_left(ws) and unsettled(ws) == []


INSIDE = [pytest.param(step, how, green, id=f"{step}-{how.replace(' ', '-')}-{'green' if green else 'red'}")
          for step in ("moved-aside", "placed") for how in ("in place", "by rename") for green in (True, False)]


@pytest.mark.parametrize(("step", "how", "green"), INSIDE)
def test_a_save_inside_the_write_itself_is_never_lost(tmp_path: Path, step: str, how: str, green: bool,
                                                      monkeypatch) -> None:
    """Inside one checked write (the accept's, or a red gate's revert): the target was moved aside
    and checked (`moved-aside`), or the new file was just put at its name (`placed`). A save by
    rename lands there, or an in-place save through a file the editor opened before the move writes
    there. Either way the person's save is what the file holds afterwards."""
    import core.apply.checked_writes as checked_writes
    import core.apply.journal as journal

    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    before, outside_before = snapshot(ws), snapshot(outside)
    target = ws / TARGET
    real_peek = checked_writes.peek
    seen: list[int] = []
    editor: dict = {}
    swap = checked_writes.swap_name(TARGET)

    def peek(dir_fd: int, name: str):
        if name == swap and "saved" not in editor and (green or "reverting" in editor):
            seen.append(1)
            if len(seen) == 1:  # before the move: the editor opens the file to save it
                editor["text"] = target.read_bytes() + TYPED
                if how == "in place":
                    editor["fd"] = os.open(target, os.O_WRONLY)
            elif len(seen) == (2 if step == "moved-aside" else 3):
                editor["saved"] = editor["text"]
                if how == "in place":
                    os.ftruncate(editor["fd"], 0)
                    os.pwrite(editor["fd"], editor["text"], 0)
                    os.close(editor["fd"])
                else:
                    copy = target.with_name(f".{TARGET}.editor-swap")
                    copy.write_bytes(editor["text"])
                    os.replace(copy, target)
        return real_peek(dir_fd, name)

    monkeypatch.setattr(checked_writes, "peek", peek)  # the writes' own look
    monkeypatch.setattr(journal, "peek", peek)  # and the restore's

    def gate(_workspace: Path) -> GateResult:
        editor["reverting"] = True  # a red gate: the save lands inside the revert's write
        return GateResult(green=green, gate="test", summary="simulated " + ("green" if green else "red"))

    try:
        decision = accept(ws, WORLD, gate=gate)
    except DecisionRefused as refused:
        decision = refused
    assert "saved" in editor, f"the step {step} was never reached"
    _assert_the_save_kept(ws, before, outside, outside_before, editor["saved"], decision)


def test_a_save_that_lands_during_a_red_gate_never_gets_the_verdict_reverted(tmp_path: Path) -> None:
    """The issue's case: the change stays in the tree under the save, so "reverted" would be a lie."""
    ws, _ = statekit.copy_case(TEMPLATE, tmp_path)

    def gate(workspace: Path) -> GateResult:
        _save(workspace / TARGET, "by rename")
        return GateResult(green=False, gate="test", summary="red")

    decision = accept(ws, WORLD, gate=gate)
    assert decision.unresolved and not decision.reverted and decisions(ws, WORLD) == []


# ── one verdict per proposal ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("verdict", ["reject", "accept"])
def test_a_verdict_recorded_while_an_accept_waited_for_the_lock_is_the_only_one(tmp_path: Path, verdict: str,
                                                                               monkeypatch) -> None:
    """The accept read the proposal before another process recorded its verdict under the lock."""
    import core.apply.applier as applier

    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    before, outside_before = snapshot(ws), snapshot(outside)
    results: list[object] = []
    waiting = threading.Event()
    real_lock = applier.workspace_lock

    def lock_after_reading(*args, **kwargs):  # the accept has read the open proposal: now it waits
        waiting.set()
        return real_lock(*args, **kwargs)

    monkeypatch.setattr(applier, "workspace_lock", lock_after_reading)

    def racing_accept() -> None:
        try:
            results.append(accept(ws, WORLD, lock_timeout=30,
                                  gate=lambda p: GateResult(green=True, gate="test", summary="green")))
        except DecisionRefused as exc:
            results.append(exc)

    with workspace_lock(ws):  # another process's verdict, taken under the lock as every verdict is
        thread = threading.Thread(target=racing_accept)
        thread.start()
        assert waiting.wait(30)
        Trace(trace_path(ws)).proposal_decided(recipe_id=WORLD, verdict=verdict, by="human",
                                               flows_green=verdict == "accept", reverted=False)
    thread.join(60)
    [result] = results
    assert isinstance(result, DecisionRefused) and result.reason == "closed", result
    assert snapshot(ws) == before and snapshot(outside) == outside_before
    assert len(decisions(ws, WORLD)) == 1


def test_a_reject_after_a_running_accept_is_refused_not_recorded_twice(tmp_path: Path) -> None:
    ws, _ = statekit.copy_case(TEMPLATE, tmp_path)
    started, finish = threading.Event(), threading.Event()
    outcome: list[object] = []

    def gate(_workspace: Path) -> GateResult:
        started.set()
        finish.wait(30)
        return GateResult(green=True, gate="test", summary="green")

    thread = threading.Thread(target=lambda: outcome.append(accept(ws, WORLD, gate=gate)))
    thread.start()
    assert started.wait(30)
    rejected: list[object] = []
    other = threading.Thread(target=lambda: rejected.append(_try(lambda: reject(ws, WORLD, lock_timeout=30))))
    other.start()
    finish.set()
    thread.join(60)
    other.join(60)
    assert outcome[0].flows_green
    assert isinstance(rejected[0], DecisionRefused) and "already accepted" in str(rejected[0])
    assert [d["verdict"] for d in decisions(ws, WORLD)] == ["accept"]


def _try(call):
    try:
        return call()
    except DecisionRefused as exc:
        return exc
