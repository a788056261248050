"""Flow gates fail closed: green only when the flows demonstrably ran and passed.

The kitsoki gate is exercised against `fake_kitsoki`, a simulation of the real binary (a small
Python script named `kitsoki` on a temporary PATH) that writes the JSON report shape of
reference §2 and uses its exit codes. The built-in gate runs against a fake `core.flows` module
injected into sys.modules (the real runner is written elsewhere).
"""

from __future__ import annotations

import os
import sys
import time
import types
from pathlib import Path

import orjson
import pytest
from builders import assert_gone
from pydantic import BaseModel

from core.apply.gates import (
    GateResult,
    GateSettings,
    builtin_gate,
    choose_gate,
    command_gate,
    kitsoki_gate,
    report_failures,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "stories" / "demo" / "flows").mkdir(parents=True)
    (root / "stories" / "demo" / "app.yaml").write_text("app: demo\n")
    (root / "stories" / "other").mkdir(parents=True)
    (root / "stories" / "other" / "app.yaml").write_text("app: other\n")
    return root


# ── command gate ─────────────────────────────────────────────────────────────────────────────


def test_command_gate_green_runs_in_the_workspace(ws: Path) -> None:
    (ws / "marker").write_text("x")
    result = command_gate(["sh", "-c", "test -f marker"], timeout_s=10)(ws)
    assert result == GateResult(green=True, gate="command", summary="sh -c 'test -f marker' exited 0",
                                duration_s=result.duration_s)
    assert result.duration_s > 0


def test_command_gate_red_carries_the_output_tail(ws: Path) -> None:
    script = "for i in $(seq 1 30); do echo line $i; done; echo oops >&2; exit 3"
    result = command_gate(["sh", "-c", script], timeout_s=10)(ws)
    assert not result.green and result.gate == "command"
    assert result.summary.endswith("exited 3")
    assert len(result.failures) == 20
    assert result.failures[-1] == "oops" and result.failures[-2] == "line 30"


def test_command_gate_timeout_kills_the_whole_process_group(ws: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    gate = command_gate(["sh", "-c", f'sleep 30 & echo $! > "{pidfile}"; wait'], timeout_s=0.5)
    started = time.monotonic()
    result = gate(ws)
    assert time.monotonic() - started < 5
    assert not result.green and result.summary.endswith("timed out after 0.5s")
    assert_gone(int(pidfile.read_text()))


def test_a_gate_that_cannot_start_is_red_not_raised(ws: Path) -> None:
    result = command_gate(["/nonexistent/make", "test"], timeout_s=10)(ws)
    assert not result.green and result.summary.startswith("gate crashed: FileNotFoundError")


def test_a_gate_killed_by_a_signal_says_so(ws: Path) -> None:
    result = command_gate(["sh", "-c", "kill -TERM $$"], timeout_s=10)(ws)
    assert not result.green and result.summary.endswith("killed by SIGTERM")


# ── kitsoki gate, against a simulation of the binary ─────────────────────────────────────────

FAKE_KITSOKI = '''\
#!{python}
"""fake_kitsoki: a simulation of `kitsoki test flows` for the gate tests (not the real binary)."""
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_KITSOKI_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
mode = os.environ.get("FAKE_KITSOKI_MODE", "pass")
if os.path.basename(args[2]) != "app.yaml" or args[:2] != ["test", "flows"]:
    sys.exit(2)
if "other" in args[2] and os.environ.get("FAKE_KITSOKI_OTHER"):
    mode = os.environ["FAKE_KITSOKI_OTHER"]
out = args[args.index("--json") + 1]
turn_ok = {{"TurnIndex": 0, "Passed": True, "Failures": [], "NewState": "mine", "View": "big", "Events": [1, 2]}}
if mode == "pass":
    report = {{"Results": [{{"File": "flows/happy.yaml", "Passed": True, "Turns": [turn_ok], "Skipped": False}}],
              "Passed": 1, "Failed": 0}}
    code = 0
elif mode == "fail":
    bad = {{"TurnIndex": 1, "Passed": False, "Failures": ["expected state mine, got idle"], "NewState": "idle"}}
    session = {{"TurnIndex": -1, "Passed": False, "Failures": ["expect_terminal: not terminal"]}}
    report = {{"Results": [{{"File": "flows/happy.yaml", "Passed": True, "Turns": [turn_ok], "Skipped": False}},
                          {{"File": "flows/sad.yaml", "Passed": False, "Turns": [turn_ok, bad, session],
                            "Skipped": False}}],
              "Passed": 1, "Failed": 1}}
    code = 1
elif mode == "exit2":
    print("Error: no flow fixtures matched", file=sys.stderr)
    sys.exit(2)
elif mode == "garbled":
    open(out, "w").write('{{"Results": [')
    sys.exit(0)
elif mode == "noreport":
    sys.exit(0)
elif mode == "empty":
    report, code = {{"Results": [], "Passed": 0, "Failed": 0}}, 0
elif mode == "liar":
    report, code = {{"Results": [{{"File": "f.yaml", "Passed": True, "Turns": []}}], "Passed": 1, "Failed": 0}}, 1
elif mode == "hang":
    import time
    time.sleep(30)
open(out, "w").write(json.dumps(report, indent=2))
print("Summary: done")
sys.exit(code)
'''


@pytest.fixture
def fake_kitsoki(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A simulation of the kitsoki binary on a temporary PATH; returns (path, logged argv lists)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "kitsoki"
    exe.write_text(FAKE_KITSOKI.format(python=sys.executable))
    exe.chmod(0o755)
    log = tmp_path / "kitsoki.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_KITSOKI_LOG", str(log))

    def calls() -> list[list[str]]:
        return [orjson.loads(line) for line in log.read_text().splitlines()]

    return exe, calls


def set_mode(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("FAKE_KITSOKI_MODE", mode)


APP = Path("stories/demo/app.yaml")


def test_kitsoki_pass_is_green_and_passes_absolute_paths(ws, fake_kitsoki, monkeypatch) -> None:
    _, calls = fake_kitsoki
    set_mode(monkeypatch, "pass")
    result = kitsoki_gate(APP, "stories/demo/flows/*.yaml", timeout_s=30)(ws)
    assert result.green and result.gate == "kitsoki"
    assert result.summary == "kitsoki test flows stories/demo/app.yaml: 1/1 flows pass"
    (argv,) = calls()
    assert argv[:3] == ["test", "flows", str(ws / APP)]
    assert argv[3:5] == ["--flows", str(ws / "stories/demo/flows/*.yaml")]
    assert argv[5] == "--json" and not Path(argv[6]).exists()  # the temp report is cleaned up
    turn = result.report["Results"][0]["Turns"][0]
    assert "View" not in turn and "Events" not in turn and turn["NewState"] == "mine"


def test_kitsoki_without_a_glob_leaves_the_default(ws, fake_kitsoki, monkeypatch) -> None:
    _, calls = fake_kitsoki
    set_mode(monkeypatch, "pass")
    assert kitsoki_gate(APP, None, timeout_s=30)(ws).green
    assert "--flows" not in calls()[0]


def test_kitsoki_fail_is_red_with_file_turn_lines(ws, fake_kitsoki, monkeypatch) -> None:
    set_mode(monkeypatch, "fail")
    result = kitsoki_gate(APP, None, timeout_s=30)(ws)
    assert not result.green
    assert result.summary == "kitsoki test flows stories/demo/app.yaml: 1 of 2 flows failed"
    assert result.failures == ["flows/sad.yaml turn 2: expected state mine, got idle",
                               "flows/sad.yaml session: expect_terminal: not terminal"]


@pytest.mark.parametrize(("mode", "summary_part"), [
    ("exit2", "could not run the flows (exit 2): Error: no flow fixtures matched"),
    ("garbled", "the JSON report does not parse"),
    ("noreport", "exited 0 and wrote no report"),
    ("empty", "no flow fixtures matched"),
    ("liar", "exited 1 though its report has no failure"),
])
def test_kitsoki_that_could_not_run_is_red(ws, fake_kitsoki, monkeypatch, mode, summary_part) -> None:
    set_mode(monkeypatch, mode)
    result = kitsoki_gate(APP, None, timeout_s=30)(ws)
    assert not result.green and summary_part in result.summary, result.summary


def test_kitsoki_timeout_is_red(ws, fake_kitsoki, monkeypatch) -> None:
    set_mode(monkeypatch, "hang")
    started = time.monotonic()
    result = kitsoki_gate(APP, None, timeout_s=0.5)(ws)
    assert time.monotonic() - started < 5
    assert not result.green and result.summary.endswith("timed out after 0.5s")


def test_report_failures_without_turn_detail_still_names_the_file() -> None:
    report = {"Results": [{"File": "f.yaml", "Passed": False, "Turns": []},
                          {"File": "s.yaml", "Passed": False, "Skipped": True}], "Passed": 0, "Failed": 1}
    assert report_failures(report) == ["f.yaml: failed"]


# ── choose_gate ──────────────────────────────────────────────────────────────────────────────

APPS = [Path("stories/demo/app.yaml"), Path("stories/other/app.yaml")]


def test_auto_prefers_a_configured_command(ws, fake_kitsoki) -> None:
    _, calls = fake_kitsoki
    result = choose_gate(ws, GateSettings(command=["true"]), APPS)(ws)
    assert result.green and result.gate == "command" and calls() == []


def test_auto_uses_kitsoki_when_on_path_and_runs_every_story(ws, fake_kitsoki, monkeypatch) -> None:
    _, calls = fake_kitsoki
    set_mode(monkeypatch, "pass")
    result = choose_gate(ws, GateSettings(), APPS)(ws)
    assert result.green and result.gate == "kitsoki"
    assert [c[2] for c in calls()] == [str(ws / a) for a in APPS]
    assert result.report["Passed"] == 2 and len(result.report["Results"]) == 2


def test_kitsoki_is_red_when_any_story_is_red_and_stops_there(ws, fake_kitsoki, monkeypatch) -> None:
    _, calls = fake_kitsoki
    set_mode(monkeypatch, "exit2")
    result = choose_gate(ws, GateSettings(kind="kitsoki"), APPS)(ws)
    assert not result.green and "(1 more not run)" in result.summary
    assert len(calls()) == 1


def test_kitsoki_second_story_red(ws, fake_kitsoki, monkeypatch) -> None:
    set_mode(monkeypatch, "pass")
    monkeypatch.setenv("FAKE_KITSOKI_OTHER", "fail")
    result = choose_gate(ws, GateSettings(kind="kitsoki"), APPS)(ws)
    assert not result.green
    assert result.failures[0] == "flows/sad.yaml turn 2: expected state mine, got idle"


def test_kitsoki_with_no_story_is_red(ws, fake_kitsoki) -> None:
    result = choose_gate(ws, GateSettings(kind="kitsoki"), [])(ws)
    assert not result.green and "no story app.yaml" in result.summary


def test_kitsoki_binary_missing_is_red(ws) -> None:
    result = choose_gate(ws, GateSettings(kind="kitsoki", kitsoki="/nonexistent/kitsoki"), APPS)(ws)
    assert not result.green and "gate crashed" in result.summary


def test_command_kind_needs_a_command() -> None:
    with pytest.raises(ValueError, match="kind 'command' needs a command"):
        GateSettings(kind="command")
    with pytest.raises(ValueError, match="GateSettings.command"):  # one built by hand, unvalidated
        choose_gate(Path("."), GateSettings.model_construct(kind="command", command=None), [])


@pytest.mark.parametrize("bad", [{"timeout_s": 0}, {"timeout_s": -1}, {"comand": ["make"]},
                                 {"command": []}, {"command": [""]}])
def test_gate_settings_refuse_what_would_make_every_accept_misbehave(bad) -> None:
    with pytest.raises(ValueError):
        GateSettings(**bad)


def test_auto_falls_back_to_builtin(ws, fake_flows) -> None:
    settings = GateSettings(kitsoki="kitsoki-not-on-any-path-xyz")
    result = choose_gate(ws, settings, APPS)(ws)
    assert result.gate == "builtin" and result.green


# ── builtin gate, against a fake core.flows ──────────────────────────────────────────────────


class FlowReport(BaseModel):
    Results: list[dict]
    Passed: int
    Failed: int


@pytest.fixture
def fake_flows(monkeypatch: pytest.MonkeyPatch):
    """Inject `core.flows` with a run_flows whose behaviour the test sets."""
    module = types.ModuleType("core.flows")
    state = {"report": FlowReport(Results=[{"File": "a.yaml", "Passed": True, "Turns": []}], Passed=1, Failed=0),
             "calls": [], "sleep": 0.0, "raise": None}

    def run_flows(workspace: Path, glob: str | None = None) -> FlowReport:
        state["calls"].append((workspace, glob))
        if state["raise"]:
            raise state["raise"]
        time.sleep(state["sleep"])
        return state["report"]

    module.run_flows = run_flows
    monkeypatch.setitem(sys.modules, "core.flows", module)
    return state


def test_builtin_green(ws, fake_flows) -> None:
    result = builtin_gate("flows/*.yaml")(ws)
    assert result.green and result.gate == "builtin"
    assert fake_flows["calls"] == [(ws, "flows/*.yaml")]


def test_builtin_red_lists_failures(ws, fake_flows) -> None:
    fake_flows["report"] = FlowReport(Results=[{"File": "b.yaml", "Passed": False, "Turns": [
        {"TurnIndex": 2, "Passed": False, "Failures": ["expect_world: x"]}]}], Passed=0, Failed=1)
    result = builtin_gate()(ws)
    assert not result.green and result.failures == ["b.yaml turn 3: expect_world: x"]  # 1-based, as kitsoki prints turns


def test_builtin_zero_fixtures_is_red(ws, fake_flows) -> None:
    fake_flows["report"] = FlowReport(Results=[], Passed=0, Failed=0)
    result = builtin_gate()(ws)
    assert not result.green and result.summary.endswith("no flow fixtures matched")


def test_builtin_exception_is_red(ws, fake_flows) -> None:
    fake_flows["raise"] = RuntimeError("bad fixture")
    result = builtin_gate()(ws)
    assert not result.green and result.summary == "gate crashed: RuntimeError: bad fixture"


def test_builtin_timeout_is_red(ws, fake_flows) -> None:
    fake_flows["sleep"] = 3.0
    started = time.monotonic()
    result = builtin_gate(timeout_s=0.2)(ws)
    assert time.monotonic() - started < 2
    assert not result.green and result.summary.endswith("timed out after 0.2s")


def test_builtin_without_the_runner_is_red(ws, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "core.flows", None)  # import of core.flows raises ImportError
    result = builtin_gate()(ws)
    assert not result.green and result.summary.startswith("gate crashed: ModuleNotFoundError")
    assert "core.flows" in result.summary


def test_builtin_report_of_the_wrong_shape_is_red(ws, fake_flows) -> None:
    fake_flows["report"] = {"results": []}
    result = builtin_gate()(ws)
    assert not result.green and "no Results list" in result.summary

