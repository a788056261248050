"""Flow gates fail closed: green only when the flows demonstrably ran and passed.

The kitsoki gate runs against tests/sim/kitsoki_sim.py, a SIMULATION of the real binary written
from its CLI contract (named `kitsoki` on a temporary PATH; see its docstring for what it
reproduces and how a test sets each fixture's outcome). The built-in gate runs against a fake
`core.flows` module injected into sys.modules, and against the real runner on small stories.
"""

from __future__ import annotations

import os
import subprocess
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
from core.apply.scoped_gate import gate_preview, scoped_gate
from sim.kitsoki_sim import install


FLOW = "test_kind: flow\napp: ../app.yaml\ninitial_state: desk\nturns:\n  - intent: {{ name: go }}\n    expect_state: {state}\n"


def story(root: Path, name: str, *, imports: str | None = None, flows: dict[str, str] | None = None) -> Path:
    """A small real story: a desk with a `go` intent into a room (imports: another story's folder)."""
    folder = root / "stories" / name
    (folder / "flows").mkdir(parents=True, exist_ok=True)
    text = (f"app: {{ id: {name}, version: 0.1.0 }}\nintents:\n  go: {{ examples: [go] }}\nroot: desk\n"
            "states:\n  desk:\n    on:\n      go: [{ target: room }]\n  room: {}\n")
    if imports:
        text += f"imports:\n  sub:\n    source: ../{imports}\n    entry: desk\n"
    (folder / "app.yaml").write_text(text)
    for file, body in (flows if flows is not None else {"go.yaml": FLOW.format(state="room")}).items():
        (folder / "flows" / file).write_text(body)
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """demo (imported by other), other, and lone: three stories with one passing flow each."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".kitsoki.yaml").write_text("story_dirs: [./stories]\n")
    story(root, "demo")
    story(root, "other", imports="demo")
    story(root, "lone")
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


# ── the kitsoki gate, against the simulation of the binary ──────────────────────────────────


@pytest.fixture
def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """tests/sim/kitsoki_sim.py as `kitsoki` on a temporary PATH; returns a function giving the
    logged calls ({argv, cwd, kitsoki_repo, app, glob} each)."""
    bindir = tmp_path / "bin"
    install(bindir)
    log = tmp_path / "kitsoki-sim.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("KITSOKI_SIM_LOG", str(log))
    monkeypatch.delenv("KITSOKI_REPO", raising=False)
    monkeypatch.delenv("KITSOKI_SIM_OUTCOMES", raising=False)
    monkeypatch.delenv("KITSOKI_SIM_BROKEN", raising=False)

    def calls() -> list[dict]:
        return [orjson.loads(line) for line in log.read_text().splitlines()]

    return calls


def outcomes(monkeypatch: pytest.MonkeyPatch, table: dict[str, str]) -> None:
    monkeypatch.setenv("KITSOKI_SIM_OUTCOMES", orjson.dumps(table).decode())


APP = Path("stories/demo/app.yaml")


def test_kitsoki_pass_is_green_and_passes_absolute_paths(ws, sim) -> None:
    result = kitsoki_gate(APP, "stories/demo/flows/*.yaml", timeout_s=30)(ws)
    assert result.green and result.gate == "kitsoki"
    assert result.summary == "kitsoki test flows stories/demo/app.yaml: 1/1 flows pass"
    (call,) = sim()
    argv = call["argv"]
    assert argv[:3] == ["test", "flows", str(ws / APP)]
    assert argv[3:5] == ["--flows", str(ws / "stories/demo/flows/*.yaml")]
    assert argv[5] == "--json" and not Path(argv[6]).exists()  # the temp report is cleaned up
    assert "--kitsoki-repo" not in argv and "--fail-fast" not in argv
    [run] = result.runs
    assert (run.status, run.passed) == ("passed", ["stories/demo/flows/go.yaml"])
    turn = result.report["Results"][0]["Turns"][0]
    assert "View" not in turn and "Events" not in turn and turn["NewState"] == "room"


def test_kitsoki_without_a_glob_leaves_the_default(ws, sim) -> None:
    assert kitsoki_gate(APP, None, timeout_s=30)(ws).green
    assert "--flows" not in sim()[0]["argv"] and sim()[0]["glob"] == str(ws / "stories/demo/flows/*.yaml")


def test_kitsoki_exit_1_is_red_with_file_turn_lines(ws, sim, monkeypatch) -> None:
    (ws / "stories/demo/flows/sad.yaml").write_text(FLOW.format(state="room"))
    outcomes(monkeypatch, {"sad.yaml": "fail"})
    result = kitsoki_gate(APP, None, timeout_s=30)(ws)
    assert not result.green and not result.held
    assert result.summary == "kitsoki test flows stories/demo/app.yaml: 1 of 2 flows failed"
    assert result.failures == ["stories/demo/flows/sad.yaml turn 1: kitsoki_sim: simulated failure"]
    assert result.runs[0].failed == ["stories/demo/flows/sad.yaml"]


@pytest.mark.parametrize(("setup", "summary_part"), [
    ({"glob": "stories/demo/flows/none-*.yaml"}, 'could not run the flows (exit 2): kitsoki test flows: no flow '
                                                 'fixtures matched'),
    ({"outcome": "fatal"}, "could not run the flows (exit 2): kitsoki test flows: run flow"),
    ({"outcome": "recording-miss"}, "could not run the flows (exit 2): kitsoki test flows: run flow"),
    ({"broken": "no-json"}, "exited 0 and wrote no report"),
    ({"broken": "garbled"}, "the JSON report does not parse"),
    ({"broken": "exit1-green"}, "exited 1 though its report has no failure"),
    ({"app": "stories/missing/app.yaml"}, "could not run the flows (exit 2): kitsoki test flows: load app"),
])
def test_kitsoki_that_could_not_run_is_red(ws, sim, monkeypatch, setup, summary_part) -> None:
    if "outcome" in setup:
        outcomes(monkeypatch, {"*": setup["outcome"]})
    if "broken" in setup:
        monkeypatch.setenv("KITSOKI_SIM_BROKEN", setup["broken"])
    result = kitsoki_gate(Path(setup.get("app", APP)), setup.get("glob"), timeout_s=30)(ws)
    assert not result.green and not result.held and result.runs[0].status == "error"
    assert summary_part in result.summary, result.summary


def test_results_null_is_no_flow_ran_never_red_or_green(ws, sim) -> None:
    (ws / "stories/demo/flows/go.yaml").write_text("description: a file with no flow document\n")
    result = kitsoki_gate(APP, None, timeout_s=30)(ws)
    assert result.report["Results"] == [] and not result.green and result.held and not result.gated
    assert result.runs[0].status == "not run"
    assert result.summary.endswith("no flow ran (the matched files hold no test_kind: flow document)")


def test_an_all_skipped_report_is_not_green(ws, sim, monkeypatch) -> None:
    outcomes(monkeypatch, {"*": "recording-miss"})
    result = kitsoki_gate(APP, None, timeout_s=30, allow_missing_recording=True)(ws)
    assert "--allow-missing-recording" in sim()[0]["argv"]
    assert not result.green and result.held
    assert result.runs[0].not_run == ["stories/demo/flows/go.yaml: skipped (its recording is missing)"]


def test_kitsoki_timeout_is_red_and_ends_the_process(ws, sim, monkeypatch) -> None:
    outcomes(monkeypatch, {"*": "hang"})
    started = time.monotonic()
    result = kitsoki_gate(APP, None, timeout_s=1.0)(ws)
    assert time.monotonic() - started < 10
    assert not result.green and result.summary.endswith("timed out after 1s")


def test_report_failures_without_turn_detail_still_names_the_file() -> None:
    report = {"Results": [{"File": "f.yaml", "Passed": False, "Turns": []},
                          {"File": "s.yaml", "Passed": False, "Skipped": True}], "Passed": 0, "Failed": 1}
    assert report_failures(report) == ["f.yaml: failed"]


# ── the scoped gate: exactly the apps a change reaches, one kitsoki call each ────────────────


def apps_run(calls: list[dict], ws: Path) -> list[str]:
    return sorted(os.path.relpath(call["app"], ws) for call in calls)


def test_an_edit_runs_its_app_and_its_importers_not_the_others(ws, sim) -> None:
    result = scoped_gate(GateSettings(kind="kitsoki"), changed=["stories/demo/app.yaml"])(ws)
    assert result.green, result.summary
    assert apps_run(sim(), ws) == ["stories/demo/app.yaml", "stories/other/app.yaml"]
    assert [(r.app, r.why, r.status) for r in result.runs] == [
        ("stories/demo/app.yaml", "edited", "passed"),
        ("stories/other/app.yaml", "imports stories/demo/app.yaml", "passed")]
    assert {call["glob"] for call in sim()} == {str(ws / "stories/demo/flows/*.yaml"),
                                                str(ws / "stories/other/flows/*.yaml")}


def test_gate_scope_own_runs_only_the_edited_app(ws, sim) -> None:
    result = scoped_gate(GateSettings(kind="kitsoki", scope="own"), changed=["stories/demo/app.yaml"])(ws)
    assert result.green and apps_run(sim(), ws) == ["stories/demo/app.yaml"]


def test_a_skipped_story_is_not_run_and_the_answer_says_so(ws, sim) -> None:
    result = scoped_gate(GateSettings(kind="kitsoki", skip=["other"]), changed=["stories/demo/app.yaml"])(ws)
    assert result.green and apps_run(sim(), ws) == ["stories/demo/app.yaml"]
    assert result.skipped == ["stories/other/app.yaml: miner.flow_gate.skip lists other "
                              "(imports stories/demo/app.yaml)"]
    assert "not gated: stories/other/app.yaml" in result.summary


def test_each_app_gets_its_own_glob(ws, sim) -> None:
    (ws / "stories/demo/flows/smoke-a.yaml").write_text(FLOW.format(state="room"))
    settings = GateSettings(kind="kitsoki", flows={"stories/demo": "flows/smoke-*.yaml"})
    result = scoped_gate(settings, changed=["stories/demo/app.yaml"])(ws)
    assert result.green
    globs = {os.path.relpath(c["app"], ws): os.path.relpath(c["glob"], ws) for c in sim()}
    assert globs == {"stories/demo/app.yaml": "stories/demo/flows/smoke-*.yaml",
                     "stories/other/app.yaml": "stories/other/flows/*.yaml"}
    assert result.runs[0].passed == ["stories/demo/flows/smoke-a.yaml"]
    string_glob = scoped_gate(GateSettings(kind="kitsoki", flows="flows/smoke-*.yaml"),
                              changed=["stories/demo/app.yaml"])(ws)
    assert [(r.app, r.status) for r in string_glob.runs] == [("stories/demo/app.yaml", "passed"),
                                                             ("stories/other/app.yaml", "not run")]


def test_one_red_app_is_red_and_names_it_and_the_others_still_ran(ws, sim, monkeypatch) -> None:
    outcomes(monkeypatch, {"*/other/flows/*": "fail"})
    result = scoped_gate(GateSettings(kind="kitsoki"), changed=["stories/demo/app.yaml"])(ws)
    assert not result.green and not result.held
    assert [(r.app, r.status) for r in result.runs] == [("stories/demo/app.yaml", "passed"),
                                                        ("stories/other/app.yaml", "failed")]
    assert result.failures == ["stories/other/flows/go.yaml turn 1: kitsoki_sim: simulated failure"]
    assert len(sim()) == 2, "without fail_fast every app runs"


def test_fail_fast_stops_starting_apps_after_the_first_red(ws, sim, monkeypatch) -> None:
    outcomes(monkeypatch, {"*/demo/flows/*": "fail"})
    result = scoped_gate(GateSettings(kind="kitsoki", fail_fast=True, jobs=1), changed=["stories/demo/app.yaml"])(ws)
    assert not result.green and len(sim()) == 1 and "--fail-fast" in sim()[0]["argv"]
    assert result.runs[1].status == "not run" and "fail_fast" in result.runs[1].not_run[0]


def test_apps_run_at_once_up_to_the_cores(ws, sim, monkeypatch) -> None:
    """Two apps whose kitsoki calls each take 1.5 s more: with two jobs they overlap."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core")
    import core.apply.gates as gates

    run = gates._run

    def slowed(argv, cwd, timeout_s):
        time.sleep(1.5)
        return run(argv, cwd, timeout_s)

    monkeypatch.setattr(gates, "_run", slowed)
    started = time.monotonic()
    result = scoped_gate(GateSettings(kind="kitsoki", jobs=2), changed=["stories/demo/app.yaml"])(ws)
    assert result.green and len(sim()) == 2
    assert time.monotonic() - started < 2.9, "the two calls overlapped"


def test_kitsoki_repo_is_passed_when_the_environment_or_the_settings_name_one(ws, sim, monkeypatch, tmp_path) -> None:
    repo = tmp_path / "kitsoki-checkout"
    (repo / "stories").mkdir(parents=True)
    monkeypatch.setenv("KITSOKI_REPO", str(repo))
    assert scoped_gate(GateSettings(kind="kitsoki", scope="own"), changed=["stories/demo/app.yaml"])(ws).green
    argv = sim()[-1]["argv"]
    assert argv[argv.index("--kitsoki-repo") + 1] == str(repo) and sim()[-1]["kitsoki_repo"] == str(repo)
    monkeypatch.delenv("KITSOKI_REPO")
    settings = GateSettings(kind="kitsoki", scope="own", kitsoki_repo="../kitsoki-checkout")
    assert scoped_gate(settings, changed=["stories/demo/app.yaml"])(ws).green
    argv = sim()[-1]["argv"]
    assert argv[argv.index("--kitsoki-repo") + 1] == str(ws / "../kitsoki-checkout")


def test_an_app_without_fixtures_is_not_run_and_no_flow_at_all_is_held(ws, sim) -> None:
    for flow in (ws / "stories/lone/flows").iterdir():
        flow.unlink()
    result = scoped_gate(GateSettings(kind="kitsoki"), changed=["stories/lone/app.yaml"])(ws)
    assert sim() == [], "kitsoki exits 2 for an app without fixtures: it is not called"
    assert not result.green and result.held and not result.gated
    assert result.summary.startswith("held: no flow exercises this change (stories/lone/app.yaml)")
    assert result.would_exercise == ["a flow in stories/lone/flows/*.yaml (edited)"]
    kept = scoped_gate(GateSettings(kind="kitsoki", ungated="allow"), changed=["stories/lone/app.yaml"])(ws)
    assert kept.green and not kept.gated and "structural checks" in kept.summary
    assert "stories/lone/app.yaml loads" in kept.checks


def test_the_preview_names_what_the_gate_runs(ws, sim) -> None:
    settings = GateSettings(kind="kitsoki")
    preview = gate_preview(ws, settings, ["stories/demo/app.yaml"])
    result = scoped_gate(settings, changed=["stories/demo/app.yaml"])(ws)
    ran = sorted(f for run in result.runs for f in run.passed)
    assert preview.runs == ran == ["stories/demo/flows/go.yaml", "stories/other/flows/go.yaml"]
    assert preview.apps == ["stories/demo/app.yaml (edited): 1 flows",
                            "stories/other/app.yaml (imports stories/demo/app.yaml): 1 flows"]


# ── choose_gate ──────────────────────────────────────────────────────────────────────────────

APPS = [Path("stories/demo/app.yaml"), Path("stories/other/app.yaml")]


def test_auto_prefers_a_configured_command(ws, sim) -> None:
    result = choose_gate(ws, GateSettings(command=["true"]), changed=["stories/demo/app.yaml"])(ws)
    assert result.green and result.gate == "command" and sim() == []


def test_auto_uses_kitsoki_when_on_path(ws, sim) -> None:
    result = choose_gate(ws, GateSettings(), changed=["stories/lone/app.yaml"])(ws)
    assert result.green and result.gate == "kitsoki" and apps_run(sim(), ws) == ["stories/lone/app.yaml"]


def test_named_apps_are_gated_as_named(ws, sim) -> None:
    result = choose_gate(ws, GateSettings(kind="kitsoki"), APPS)(ws)
    assert result.green and apps_run(sim(), ws) == [str(a) for a in APPS]


def test_kitsoki_binary_missing_is_red(ws) -> None:
    settings = GateSettings(kind="kitsoki", kitsoki="/nonexistent/kitsoki")
    result = choose_gate(ws, settings, changed=["stories/demo/app.yaml"])(ws)
    assert not result.green and not result.held and "gate crashed" in result.failures[0] + result.summary


def test_command_kind_needs_a_command() -> None:
    with pytest.raises(ValueError, match="kind 'command' needs a command"):
        GateSettings(kind="command")
    with pytest.raises(ValueError, match="GateSettings.command"):  # one built by hand, unvalidated
        choose_gate(Path("."), GateSettings.model_construct(kind="command", command=None), [])


@pytest.mark.parametrize("bad", [{"timeout_s": 0}, {"timeout_s": -1}, {"comand": ["make"]},
                                 {"command": []}, {"command": [""]}, {"jobs": 0}, {"scope": "all"},
                                 {"ungated": "yes"}, {"skip": [""]}])
def test_gate_settings_refuse_what_would_make_every_accept_misbehave(bad) -> None:
    with pytest.raises(ValueError):
        GateSettings(**bad)


def test_auto_falls_back_to_builtin(ws, fake_flows) -> None:
    settings = GateSettings(kitsoki="kitsoki-not-on-any-path-xyz")
    result = choose_gate(ws, settings, changed=["stories/lone/app.yaml"])(ws)
    assert result.gate == "builtin" and result.green
    assert fake_flows["calls"] == [(ws, "stories/lone/flows/*.yaml")]


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



# ── builtin gate: flows it cannot run, and the real runner on small stories ─────────────────

NOT_SUPPORTED = "not supported by the built-in runner: host_handlers"


def unsupported_result(file: str) -> dict:
    return {"File": file, "Passed": False, "Turns": [{"TurnIndex": -1, "Passed": False, "Failures": [NOT_SUPPORTED]}]}


NO_KITSOKI = GateSettings(kind="builtin", scope="own", kitsoki="kitsoki-not-installed-here").kitsoki
ADVICE = ("the built-in runner cannot run them and kitsoki is not here: put `kitsoki-not-installed-here` on PATH or "
          "set miner.flow_gate.kitsoki to run them")


def test_a_flow_the_builtin_runner_cannot_run_holds_the_change_naming_it(ws, fake_flows) -> None:
    # Green means every flow in scope ran and passed: "1/1 pass, 1 not run" is not green.
    fake_flows["report"] = FlowReport(Results=[{"File": "stories/demo/flows/go.yaml", "Passed": True, "Turns": []},
                                               unsupported_result("stories/demo/flows/handlers.yaml")],
                                      Passed=1, Failed=1)  # the runner counts it failed: the gate does not
    for ungated in ("hold", "allow"):
        result = scoped_gate(GateSettings(kind="builtin", scope="own", ungated=ungated, kitsoki=NO_KITSOKI),
                             changed=["stories/demo/app.yaml"])(ws)
        assert not result.green and result.held and not result.gated and result.failures == []
        [run] = result.runs
        assert run.passed == ["stories/demo/flows/go.yaml"] and run.failed == []
        assert run.not_run == [f"stories/demo/flows/handlers.yaml: {NOT_SUPPORTED}"]
        assert result.summary == ("held: 1 of 2 flows in scope did not run, so a green would not prove the change "
                                  f"(1 passed) ({ADVICE}): stories/demo/flows/handlers.yaml: {NOT_SUPPORTED}")


def test_when_every_scoped_flow_is_unsupported_the_change_is_held_whatever_ungated_says(ws, fake_flows) -> None:
    fake_flows["report"] = FlowReport(Results=[unsupported_result("stories/demo/flows/go.yaml")], Passed=0, Failed=1)
    for ungated in ("hold", "allow"):
        result = scoped_gate(GateSettings(kind="builtin", scope="own", ungated=ungated, kitsoki=NO_KITSOKI),
                             changed=["stories/demo/app.yaml"])(ws)
        assert not result.green and result.held and not result.gated
        assert result.summary == (f"held: none of the 1 flows that exercise this change could run here ({ADVICE}): "
                                  f"{NOT_SUPPORTED}")


def test_flows_the_builtin_runner_cannot_run_are_run_by_kitsoki_when_it_is_here(ws, fake_flows, sim,
                                                                               monkeypatch) -> None:
    """The issue's case: the built-in runner passes 1 and cannot run 4; kitsoki fails one of those."""
    fake_flows["report"] = FlowReport(Results=[{"File": "stories/demo/flows/go.yaml", "Passed": True, "Turns": []},
                                               unsupported_result("stories/demo/flows/handlers.yaml")],
                                      Passed=1, Failed=1)
    (ws / "stories/demo/flows/handlers.yaml").write_text(FLOW.format(state="desk"))
    outcomes(monkeypatch, {"handlers.yaml": "fail"})
    red = scoped_gate(GateSettings(kind="builtin", scope="own"), changed=["stories/demo/app.yaml"])(ws)
    assert not red.green and not red.held
    assert red.failures == ["stories/demo/flows/handlers.yaml turn 1: kitsoki_sim: simulated failure"]
    [run] = red.runs
    assert "run with kitsoki: the built-in runner cannot run 1 of them" in run.summary
    assert [c["app"] for c in sim()] == [str(ws / "stories/demo/app.yaml")]
    outcomes(monkeypatch, {})
    green = scoped_gate(GateSettings(kind="builtin", scope="own"), changed=["stories/demo/app.yaml"])(ws)
    assert green.green and green.gated and green.runs[0].not_run == []


def test_the_builtin_gate_runs_only_the_scoped_apps(ws) -> None:
    (ws / "stories/lone/flows/go.yaml").write_text(FLOW.format(state="desk"))  # red, but out of scope
    result = scoped_gate(GateSettings(kind="builtin"), changed=["stories/demo/app.yaml"])(ws)
    assert result.green
    assert [(r.app, r.passed) for r in result.runs] == [("stories/demo/app.yaml", ["stories/demo/flows/go.yaml"]),
                                                        ("stories/other/app.yaml", ["stories/other/flows/go.yaml"])]
    red = scoped_gate(GateSettings(kind="builtin"), changed=["stories/lone/app.yaml"])(ws)
    assert not red.green and red.failures[0].startswith("stories/lone/flows/go.yaml turn 1: expect_state")


def test_a_root_flow_is_not_run_by_the_builtin_runner_so_a_rung_1_change_it_alone_exercises_is_held(ws) -> None:
    (ws / ".kitsoki.yaml").write_text("story_dirs: [./stories]\nroot:\n  overrides:\n    world:\n      test_cmd: pytest\n")
    (ws / "flows").mkdir()
    (ws / "flows/landing.yaml").write_text("test_kind: flow\ninitial_state: root.landing\nturns: []\n")
    result = scoped_gate(GateSettings(kind="builtin"), changed=[".kitsoki.yaml"],
                         before={".kitsoki.yaml": b"story_dirs: [./stories]\n"})(ws)
    assert not result.green and result.held
    [run] = result.runs
    assert (run.app, run.why, run.status) == ("<root>", "the root instance (root.overrides.world.test_cmd)", "not run")
    assert run.not_run == ["flows/landing.yaml: not supported by the built-in runner: a root flow needs dev-story's "
                           "rooms, and only the summary of dev-story we carry is here (set KITSOKI_REPO to a kitsoki "
                           "checkout, or run it with kitsoki)"]


def test_root_flows_run_against_the_synthesized_root_written_as_kitsoki_materialize_emits_it(ws, sim) -> None:
    (ws / ".kitsoki.yaml").write_text("story_dirs: [./stories]\nroot:\n  overrides:\n    world:\n      test_cmd: pytest\n")
    (ws / "flows").mkdir()
    (ws / "flows/landing.yaml").write_text("test_kind: flow\ninitial_state: root.landing\nturns: []\n")
    result = scoped_gate(GateSettings(kind="kitsoki"), changed=[".kitsoki.yaml"],
                         before={".kitsoki.yaml": b"story_dirs: [./stories]\n"})(ws)
    assert result.green and result.gated and result.runs[0].passed == ["flows/landing.yaml"]
    [call] = sim()
    assert not call["app"].startswith(str(ws)) and call["glob"] == str(ws / "flows/*.yaml")
    import yaml

    root = yaml.safe_load(call["app_text"])
    assert root["root"] == "root" and root["imports"]["root"]["source"] == "@kitsoki/dev-story"
    assert root["imports"]["root"]["world_in"] == {"test_cmd": "{{ world.test_cmd }}"}
    assert root["world"] == {"test_cmd": {"type": "string", "default": "pytest"}}
    assert "agent.local_llm" in root["agent_plugins"] and "host.gh.ticket" in root["hosts"]


KITSOKI_WS = Path(__file__).resolve().parents[2] / "shared" / "kitsoki-workspace"
ROOT_BINDING_FLOW = """test_kind: flow
initial_state: root.landing
host_handlers:
  host.gh.ticket: { data: { tickets: [] } }
turns:
  - intent: { name: root__go_ticket_search }
    expect_state: root.ticket_search
    expect_host_calls:
      - { handler: host.gh.ticket.search, times: 1 }
"""
ROOT_WORLD_FLOW = """test_kind: flow
initial_state: root.landing
turns:
  - advance_clock: 1s
    expect_world: { base_branch: develop }
"""


def test_with_dev_story_here_the_builtin_runner_runs_root_flows_against_the_root_instance(ws, monkeypatch) -> None:
    """Rung 1 is exercised by a flow run against the synthesized root: it sees the world override and
    the binding (these two flows pass under the real kitsoki, against the root `kitsoki materialize`
    emits, and fail without the overrides, with the same failure texts as below)."""
    if not (KITSOKI_WS / "stories" / "dev-story").is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    monkeypatch.setenv("KITSOKI_REPO", str(KITSOKI_WS))
    (ws / "flows").mkdir()
    (ws / "flows/binding.yaml").write_text(ROOT_BINDING_FLOW)
    (ws / "flows/world.yaml").write_text(ROOT_WORLD_FLOW)
    overrides = "root:\n  overrides:\n    world:\n      base_branch: develop\n    bindings:\n      ticket: host.gh.ticket\n"
    before = "story_dirs: [./stories]\n"
    (ws / ".kitsoki.yaml").write_text(before + overrides)
    settings = GateSettings(kind="builtin", kitsoki="kitsoki-not-installed-here")
    result = scoped_gate(settings, changed=[".kitsoki.yaml"], before={".kitsoki.yaml": before.encode()})(ws)
    assert result.green and result.gated, result.summary
    assert [(r.app, r.passed) for r in result.runs] == [("<root>", ["flows/binding.yaml", "flows/world.yaml"])]
    (ws / ".kitsoki.yaml").write_text(before + "root:\n  overrides:\n    world:\n      test_cmd: pytest\n")
    red = scoped_gate(settings, changed=[".kitsoki.yaml"], before={".kitsoki.yaml": before.encode()})(ws)
    assert not red.green and not red.held
    assert red.failures == ["flows/binding.yaml turn 1: expect_host_calls: host.gh.ticket.search expected 1 invocations, "
                            "got 0",
                            'flows/world.yaml turn 1: expect_world["base_branch"]: got <nil> (<nil>), want develop (string)']


def test_a_story_importing_dev_story_never_gates_a_root_override(ws) -> None:
    """`kitsoki test flows <story>` never reads .kitsoki.yaml: an importer's flows run the same with and
    without a root override, so they are not in the scope of one (gated: true would be vacuous)."""
    (ws / "stories/imp/flows").mkdir(parents=True)
    (ws / "stories/imp/app.yaml").write_text(
        "app: { id: imp }\nimports:\n  core: { source: '@kitsoki/dev-story', entry: landing, "
        "world_in: { test_cmd: 'pytest' } }\nroot: core\n")
    (ws / "stories/imp/flows/go.yaml").write_text("test_kind: flow\ninitial_state: core.landing\nturns: []\n")
    (ws / ".kitsoki.yaml").write_text("story_dirs: [./stories]\nroot:\n  overrides:\n    world:\n      test_cmd: make\n")
    before = b"story_dirs: [./stories]\n"
    scope_result = scoped_gate(GateSettings(kind="builtin"), changed=[".kitsoki.yaml"],
                               before={".kitsoki.yaml": before})(ws)
    assert not scope_result.green and scope_result.held and not scope_result.gated
    assert [run.app for run in scope_result.runs] == ["<root>"]
    assert "no flow exercises this change (root.overrides.world.test_cmd)" in scope_result.summary


def test_a_root_synonym_is_held_as_no_flow_can_exercise_it(ws) -> None:
    (ws / "flows").mkdir()
    (ws / "flows/landing.yaml").write_text("test_kind: flow\ninitial_state: root.landing\nturns: []\n")
    (ws / ".kitsoki.yaml").write_text("story_dirs: [./stories]\nroot:\n  overrides:\n    synonyms:\n"
                                      "      start: [kick it off]\n")
    result = scoped_gate(GateSettings(kind="builtin"), changed=[".kitsoki.yaml"],
                         before={".kitsoki.yaml": b"story_dirs: [./stories]\n"})(ws)
    assert not result.green and result.held and not result.gated and result.runs == []
    assert result.summary.startswith("held: no flow can exercise this change under kitsoki's rules "
                                     "(root.overrides.synonyms.start: no kitsoki flow can exercise a phrasing")
    kept = scoped_gate(GateSettings(kind="builtin", ungated="allow"), changed=[".kitsoki.yaml"],
                       before={".kitsoki.yaml": b"story_dirs: [./stories]\n"})(ws)
    assert kept.green and not kept.gated and kept.summary.startswith("not gated: no flow can exercise this change")


def test_a_fatal_runtime_error_aborts_the_app_run_as_kitsoki_does(ws) -> None:
    """kitsoki's `test flows` returns an error on a cyclic emit chain (depth 24): exit 2, no report.
    The built-in gate says the same: the app could not run, red, never a plain failed flow."""
    (ws / "stories/demo/app.yaml").write_text(
        "app: { id: demo }\nintents:\n  go: {}\n  spin: {}\nroot: desk\nstates:\n  desk:\n    on:\n"
        "      go: [{ target: la }]\n  la:\n    on_enter: [{ emit_intent: spin }]\n    on:\n      spin: [{ target: lb }]\n"
        "  lb:\n    on_enter: [{ emit_intent: spin }]\n    on:\n      spin: [{ target: la }]\n")
    (ws / "stories/demo/flows/go.yaml").write_text(FLOW.format(state="la"))
    result = scoped_gate(GateSettings(kind="builtin", scope="own"), changed=["stories/demo/app.yaml"])(ws)
    assert not result.green and not result.held
    [run] = result.runs
    assert run.status == "error"
    assert "could not run the flows: kitsoki aborts the app run here (exit 2): stories/demo/flows/go.yaml: turn 1: " \
           "emit_intent: dispatch exceeded max depth (24)" in result.summary
    from conftest import CLI

    done = subprocess.run([*CLI, "flows", "--repo", str(ws), "--flows", "stories/demo/flows/*.yaml"],
                          capture_output=True, text=True, cwd=ws)
    assert done.returncode == 2 and "kitsoki aborts that app's run here (exit 2, no report)" in done.stderr


def test_the_kitsoki_gate_reads_the_dev_story_the_loader_read_whatever_kitsoki_wrote_since(ws, sim, monkeypatch,
                                                                                           tmp_path) -> None:
    """~/.kitsoki/repo is rewritten by the real binary to the checkout it last ran in: the gate passes
    the copy our loader resolved explicitly (--kitsoki-repo), and the answer says which it was."""
    home = tmp_path / "home"
    checkout = tmp_path / "checkout"
    (checkout / "stories").mkdir(parents=True)
    (home / ".kitsoki").mkdir(parents=True)
    (home / ".kitsoki" / "repo").write_text(str(checkout))
    monkeypatch.setenv("HOME", str(home))
    result = scoped_gate(GateSettings(kind="kitsoki", scope="own"), changed=["stories/demo/app.yaml"])(ws)
    assert result.green, result.summary
    [call] = sim()
    assert call["kitsoki_repo"] == str(checkout)
    assert result.dev_story.startswith("missing") or "from ~/.kitsoki/repo" in result.dev_story
    assert f"kitsoki ran with --kitsoki-repo {checkout}" in result.dev_story
    monkeypatch.setenv("KITSOKI_REPO", str(tmp_path / "elsewhere"))
    settings = GateSettings(kind="kitsoki", scope="own", kitsoki_repo=str(checkout))
    scoped_gate(settings, changed=["stories/demo/app.yaml"])(ws)
    assert sim()[-1]["kitsoki_repo"] == str(checkout), "the setting wins, for the loader and the gate alike"


def test_a_skipped_flow_holds_the_change_under_the_kitsoki_gate_too(ws, sim, monkeypatch) -> None:
    (ws / "stories/demo/flows/later.yaml").write_text(FLOW.format(state="room"))
    outcomes(monkeypatch, {"later.yaml": "recording-miss"})
    result = scoped_gate(GateSettings(kind="kitsoki", scope="own", allow_missing_recording=True),
                         changed=["stories/demo/app.yaml"])(ws)
    assert not result.green and result.held and not result.gated
    [run] = result.runs
    assert run.passed and run.not_run == ["stories/demo/flows/later.yaml: skipped (its recording is missing)"]
    assert result.summary.startswith("held: 1 of 2 flows in scope did not run, so a green would not prove the change")


BAD_TASK = ("app: { id: demo }\nintents:\n  go: {}\nroot: desk\nstates:\n  desk:\n    on:\n      go: [{ target: room }]\n"
            "  room:\n    on_enter:\n      - invoke: host.agent.task\n        with: { prompt: do it }\n")


def test_a_change_kitsoki_cannot_load_is_red_never_kept(ws, sim) -> None:
    """The issue's first case: a room invoking host.agent.task with only a prompt. Our loader refuses it
    with kitsoki's reason (so the gate is red without running anything), and kitsoki itself exits 2."""
    (ws / "stories/demo/app.yaml").write_text(BAD_TASK)
    result = scoped_gate(GateSettings(kind="kitsoki", scope="own"), changed=["stories/demo/app.yaml"])(ws)
    assert not result.green and not result.held and sim() == []
    assert "stories/demo/app.yaml does not load" in result.summary
    assert "host.agent.task requires acceptance.schema to be set in the with: block" in result.summary
    direct = kitsoki_gate(APP, "stories/demo/flows/*.yaml", timeout_s=30)(ws)
    assert not direct.green and "could not run the flows (exit 2)" in direct.summary


def test_the_gate_judges_the_tree_the_applier_just_reloaded_and_loads_it_itself_otherwise(tmp_path: Path) -> None:
    """apply_delta hands the gate what its reload loaded after the edit (core.apply.gates.tree_after_edit):
    the scoped gate takes that tree instead of loading it a second time, for that workspace only, and
    only while the gate runs."""
    from core.apply.gates import loaded_after_edit, tree_after_edit

    here, other = tmp_path / "ws", tmp_path / "other"
    model = object()
    assert loaded_after_edit(here) is None
    with tree_after_edit(here, model):
        assert loaded_after_edit(here) is model
        assert loaded_after_edit(other) is None
    assert loaded_after_edit(here) is None
