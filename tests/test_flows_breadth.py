"""Breadth of the built-in runner (issue 24 item 6): features kitsoki's own stories use, each on a
small fixture story under tests/fixtures/flows/<story>.

Every verdict and failure text in EXPECTED is the one the real kitsoki binary printed for the same
files (`kitsoki test flows stories/<story>/app.yaml --json`, at the commit the shared workspace was
taken from), so these tests hold the runner to kitsoki's verdicts, not to our reading of them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.flows import UNSUPPORTED, run_app_flows

FIXTURES = Path(__file__).parent / "fixtures" / "flows"

EXPECTED: dict[str, dict[str, tuple[bool, list[list[str]]]]] = {
    # Background jobs whose on_complete picks the next room with a templated target; the room it
    # enters keeps what its on_enter writes (an increment, a host bind) as kitsoki's replay does.
    "relay": {
        # a foreground call's delay is a real sleep (only a job's context carries the fake clock)
        "foreground_delay.yaml": (True, [[]]),
        "green_first.yaml": (True, [[], []]),
        "red_after_limit.yaml": (True, [[]]),
        "wrong_expectation.yaml": (False, [['expect_state: got "green", want "red"',
                                            'expect_world["rounds"]: got 0 (uint64), want 1 (uint64)']]),
    },
}


def _story(name: str, tmp_path: Path) -> Path:
    workspace = tmp_path / name
    shutil.copytree(FIXTURES / name, workspace)
    return workspace / "stories" / name / "app.yaml"


@pytest.mark.parametrize("story", sorted(EXPECTED))
def test_verdicts_are_kitsokis(story, tmp_path):
    report = run_app_flows(_story(story, tmp_path))
    got = {Path(r.File).name: (r.Passed, [sorted(t.Failures) for t in r.Turns]) for r in report.Results}
    want = {name: (passed, [sorted(turn) for turn in turns]) for name, (passed, turns) in EXPECTED[story].items()}
    assert got == want


def test_real_sleeps_near_kitsokis_drain_deadline_are_declined(tmp_path):
    # Inside advance_clock kitsoki gives the wait 5 s of real time: report's 4 s foreground sleep
    # (after the 4 s check job) comes close enough to race it, so the runner declines.
    app = _story("relay", tmp_path)
    flow = app.parent / "flows" / "green_first.yaml"
    flow.write_text(flow.read_text().replace('delay: "1s"', 'delay: "4s"').replace('"2s"', '"5s"'))
    (result,) = [r for r in run_app_flows(app).Results if r.File.endswith("green_first.yaml")]
    assert not result.Passed
    assert result.failures()[0].startswith(f"{UNSUPPORTED}: foreground host_handlers delays sleeping 4s")
