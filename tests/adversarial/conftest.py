"""The adversarial suite's mode and its per-group tally (see README.md beside this file)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import orjson
import pytest

FULL = os.environ.get("KITSOKI_ADVERSARIAL", "").lower() == "full"
REPORT = os.environ.get("KITSOKI_ADVERSARIAL_REPORT")


def adversarial_cases(cases: list, fast: int = 12) -> list:
    """Every case in full mode; otherwise an evenly spread sample of `fast`, first and last included."""
    cases = list(cases)
    if FULL or len(cases) <= fast:
        return cases
    step = (len(cases) - 1) / (fast - 1)
    picked = sorted({round(i * step) for i in range(fast)})
    return [cases[i] for i in picked]


_tally: dict[str, Counter] = {}


def _group(item: pytest.Item) -> str:
    marker = item.get_closest_marker("adversarial")
    return marker.args[0] if marker and marker.args else "ungrouped"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        counts = _tally.setdefault(_group(item), Counter())
        counts["tried"] += 1
        if report.outcome == "passed":
            counts["survived"] += 1


def pytest_sessionfinish(session, exitstatus):
    if REPORT:
        Path(REPORT).write_bytes(orjson.dumps({g: dict(c) for g, c in sorted(_tally.items())}))
