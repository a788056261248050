"""Conformance of the built-in runner on kitsoki's own CI flows (../shared/kitsoki-workspace).

kitsoki passes every one of these flows at the workspace's commit. The built-in runner must never
fail one of them (a flow it cannot judge says `not supported by the built-in runner: <what>`),
and it must pass at least as many as the last closing note recorded. Timing is the benchmark's
(tests/bench/flows.py), not this test's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.flows.conformance import conformance

WORKSPACE = Path(__file__).resolve().parent.parent.parent / "shared" / "kitsoki-workspace"

from core.kitsoki.story import Story

LOADER_COMPOSES = hasattr(Story, "definition")
"""The loader hands the runner kitsoki's composed definition (imports folded, phases expanded)."""
RECORDED_PASSED = 309 if LOADER_COMPOSES else 111
"""Flows passed when issue 16's runner work was closed: 310 of 345 with the loader of issue 14
(0 fail, the rest declined with a reason), 111 with the loader before it (223 need imports/`*`).
309 since the loader refuses, as kitsoki does in this copy, the two apps whose Starlark scripts the
copy leaves out (dogfood-marathon's happy_two_cases passed on stubs where kitsoki exits 2)."""
RECORDED_TOTAL = 345


@pytest.fixture(scope="module")
def report():
    if not WORKSPACE.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    return conformance(WORKSPACE)


def test_no_ci_flow_fails(report):
    assert [(r.File, r.failures()[:3]) for r in report.failed] == []
    # kitsoki refuses these two here too: the copy leaves out their Starlark scripts
    assert "dogfood-marathon" in report.refused and set(report.refused) <= {"dogfood-marathon", "starlark-enrich"}


def test_pass_rate_does_not_drop(report):
    assert report.total >= RECORDED_TOTAL
    assert report.passed >= RECORDED_PASSED, report.as_dict()
    assert report.rate >= RECORDED_PASSED / RECORDED_TOTAL


def test_every_flow_not_passed_says_what_is_not_supported(report):
    assert report.passed + sum(report.unsupported.values()) + len(report.failed) + sum(report.refused.values()) \
        == report.total
    assert all(reason.strip() for reason in report.unsupported)
