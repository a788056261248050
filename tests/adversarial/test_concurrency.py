"""Things happening at the same time as an accept: an edit typed while the gate runs, a second
accept, a recovery or a proposer in another process, many trace writers.

Pass rule: no edit of the person's is lost (a revert keeps a file changed while the gate ran, and
the accept then stays unsettled, said on every command until the person settles it: never a
"reverted" verdict over a tree that still holds the change), exactly one of two racing accepts
proceeds and the other writes nothing, a live accept's journal is never "recovered" under it, and
no trace line is lost or shares a turn.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import statekit
from statekit import ROOT, decisions, no_journal_left, snapshot

from core.apply import GateResult, command_gate, recover
from core.apply.journal import journal_dir
from core.locks import WorkspaceBusy
from core.mining.service import trace_path
from core.apply.resolve import resolve_accept
from core.attention import attention
from core.proposals.decide import DecisionRefused, accept, reject
from core.proposals.proposer import run_proposer
from core.trace import Trace

pytestmark = pytest.mark.adversarial("concurrency")

_TMP = Path(tempfile.mkdtemp(prefix="kitsoki-miner-concurrency-"))
atexit.register(shutil.rmtree, _TMP, True)
TEMPLATE = statekit.build_template(_TMP / "template")
WORLD, BINDING = TEMPLATE["cards"]["world"], TEMPLATE["cards"]["binding"]
TYPED = b"# typed by the person while the gate ran\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return statekit.copy_case(TEMPLATE, tmp_path)[0]


def _typing_gate(green: bool):
    def gate(workspace: Path) -> GateResult:
        config = workspace / ".kitsoki.yaml"
        config.write_bytes(config.read_bytes() + TYPED)
        return GateResult(green=green, gate="test", summary="simulated person typing during the gate")
    return gate


def test_an_edit_typed_while_a_red_gate_runs_is_kept_and_left_for_the_person(ws: Path) -> None:
    draft = statekit.after_bytes(TEMPLATE, "world")[".kitsoki.yaml"]
    before = (ws / ".kitsoki.yaml").read_bytes()
    decision = accept(ws, WORLD, gate=_typing_gate(False))
    assert decision.unresolved and not decision.reverted and decision.kept_edits == [".kitsoki.yaml"]
    assert ".kitsoki.yaml was kept as it is" in decision.failure and f"resolve {WORLD}" in decision.failure
    assert (ws / ".kitsoki.yaml").read_bytes() == draft + TYPED, "the person's typing was reverted away"
    assert decisions(ws, WORLD) == [], "a verdict was recorded over a tree that still holds the change"
    [line] = attention(ws)  # said on every command until settled
    assert WORLD in line and ".kitsoki.yaml" in line and "now other" in line
    with pytest.raises(DecisionRefused, match="not settled"):
        reject(ws, WORLD)  # one verdict per proposal: the person settles the accept first
    result = resolve_accept(ws, WORLD, "restore")
    assert result.restored == [".kitsoki.yaml"] and (ws / ".kitsoki.yaml").read_bytes() == before
    assert (ws / result.saved[".kitsoki.yaml"]).read_bytes() == draft + TYPED, "the typing was not kept anywhere"
    assert no_journal_left(ws) and attention(ws) == []
    assert [(d["flows_green"], d["reverted"]) for d in decisions(ws, WORLD)] == [(False, True)]


def test_an_edit_typed_by_a_real_red_command_gate_is_kept_and_a_keep_is_recorded(ws: Path) -> None:
    draft = statekit.after_bytes(TEMPLATE, "world")[".kitsoki.yaml"]
    gate = command_gate(["sh", "-c", "printf '# typed\\n' >> .kitsoki.yaml; exit 1"], 30.0)
    decision = accept(ws, WORLD, gate=gate)
    assert decision.unresolved and decision.kept_edits == [".kitsoki.yaml"]
    assert (ws / ".kitsoki.yaml").read_bytes() == draft + b"# typed\n"
    resolve_accept(ws, WORLD, "keep")
    assert (ws / ".kitsoki.yaml").read_bytes() == draft + b"# typed\n" and no_journal_left(ws)
    assert [(d["flows_green"], d["reverted"]) for d in decisions(ws, WORLD)] == [(True, False)]


def test_an_edit_typed_while_a_green_gate_runs_stays(ws: Path) -> None:
    draft = statekit.after_bytes(TEMPLATE, "world")[".kitsoki.yaml"]
    decision = accept(ws, WORLD, gate=_typing_gate(True))
    assert decision.flows_green and (ws / ".kitsoki.yaml").read_bytes() == draft + TYPED


def test_a_red_gate_that_deleted_the_target_leaves_it_deleted_and_says_so(ws: Path) -> None:
    def gate(workspace: Path) -> GateResult:
        (workspace / ".kitsoki.yaml").unlink()
        return GateResult(green=False, gate="test", summary="red")
    decision = accept(ws, WORLD, gate=gate)
    assert decision.unresolved and decision.kept_edits == [".kitsoki.yaml"] and "deleted" in decision.failure
    assert not (ws / ".kitsoki.yaml").exists()


SLOW_ACCEPT = r"""
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from core.apply import GateResult
from core.proposals.decide import accept
def gate(p):
    print("gating", flush=True)
    time.sleep(float(sys.argv[4]))
    return GateResult(green=True, gate="test", summary="slow green")
print(accept(Path(sys.argv[2]), sys.argv[3], gate=gate).flows_green, flush=True)
"""


def _slow_accept(ws: Path, recipe_id: str, seconds: float = 1.5) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", SLOW_ACCEPT, str(ROOT), str(ws), recipe_id, str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "gating"
    return proc


def test_two_accepts_at_once_one_proceeds_the_other_writes_nothing(ws: Path) -> None:
    first = _slow_accept(ws, WORLD)
    try:
        journal_during = sorted(p.name for p in journal_dir(ws).iterdir())
        with pytest.raises(WorkspaceBusy):
            accept(ws, BINDING)
        assert sorted(p.name for p in journal_dir(ws).iterdir()) == journal_during
        assert first.stdout.readline().strip() == "True"
    finally:
        first.wait(timeout=30)
    assert decisions(ws, BINDING) == [] and len(decisions(ws, WORLD)) == 1
    assert no_journal_left(ws)


def test_recovery_during_a_live_accept_never_restores_under_it(ws: Path) -> None:
    draft = statekit.after_bytes(TEMPLATE, "world")[".kitsoki.yaml"]
    first = _slow_accept(ws, WORLD)
    try:
        with pytest.raises(WorkspaceBusy):
            recover(ws, Trace(trace_path(ws)))
        assert (ws / ".kitsoki.yaml").read_bytes() == draft, "recovery touched a live accept's file"
        assert first.stdout.readline().strip() == "True"
    finally:
        first.wait(timeout=30)
    assert (ws / ".kitsoki.yaml").read_bytes() == draft


def test_a_proposer_during_an_accept_waits_and_never_restages_the_decided_recipe(ws: Path) -> None:
    first = _slow_accept(ws, WORLD, 1.0)
    try:
        report = run_proposer(ws, lock_timeout=30)
    finally:
        first.wait(timeout=30)
    outcome = next(o for o in report.outcomes if o.recipe_id == WORLD)
    assert outcome.result in ("open", "decided", "already-modeled"), outcome
    assert len(decisions(ws, WORLD)) == 1
    events = [e for e in Trace(trace_path(ws)).events() if e.payload.get("recipe_id") == WORLD]
    assert events[-1].kind == "mining.proposal_decided", "the decided recipe was raised again"


APPENDER = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from core.trace import Trace
t = Trace(Path(sys.argv[2]))
for i in range(int(sys.argv[3])):
    t.append("mining.stress", {"who": sys.argv[4], "i": i})
"""


def test_many_trace_writers_lose_no_line_and_share_no_turn(tmp_path: Path) -> None:
    path = tmp_path / ".artifacts" / "mining" / "trace.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(ROOT), str(path), "40", f"p{n}"]) for n in range(2)]
    trace = Trace(path)
    threads = [threading.Thread(target=lambda n=n: [trace.append("mining.stress", {"who": f"t{n}", "i": i})
                                                   for i in range(40)]) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    events = list(Trace(path).events("mining.stress"))
    assert len(events) == 5 * 40
    assert len({e.turn for e in events}) == len(events)
    assert {(e.payload["who"], e.payload["i"]) for e in events} == {
        (w, i) for w in ("p0", "p1", "t0", "t1", "t2") for i in range(40)}


def test_the_workspace_lock_holds_between_processes_when_busy_waiting(ws: Path) -> None:
    first = _slow_accept(ws, WORLD, 0.8)
    started = time.monotonic()
    try:
        decision = accept(ws, BINDING, lock_timeout=30)  # waits for the first, then finds it stale
    except Exception as exc:  # noqa: BLE001 - the refusal is the expected outcome
        decision = exc
    finally:
        first.wait(timeout=30)
    assert time.monotonic() - started >= 0.3
    assert len(decisions(ws, WORLD)) == 1
    assert snapshot(ws)  # the tree is readable and whole
    assert no_journal_left(ws)
    assert decision is not None
