"""Shared test helpers: the real corpus in ../shared (CI always has it) and fixture builders."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"

if not os.environ.get("KITSOKI_MINER_KEY_DIR"):  # core.authn's signing key: never the user's own in tests
    os.environ["KITSOKI_MINER_KEY_DIR"] = tempfile.mkdtemp(prefix="kitsoki-miner-test-key-")
    atexit.register(shutil.rmtree, os.environ["KITSOKI_MINER_KEY_DIR"], True)


def pytest_collection_modifyitems(config, items):
    if CORPUS.is_dir():
        return
    skip = pytest.mark.skip(reason=f"{CORPUS} is not present")
    for item in items:
        if "corpus" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def corpus() -> Path:
    return CORPUS


def jsonl(path: Path, records: list, *, trailing_newline: bool = True) -> Path:
    """Write records (dicts, or raw bytes/str lines as given) as a JSONL file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for rec in records:
        if isinstance(rec, bytes):
            lines.append(rec)
        elif isinstance(rec, str):
            lines.append(rec.encode())
        else:
            lines.append(orjson.dumps(rec))
    data = b"\n".join(lines)
    path.write_bytes(data + (b"\n" if trailing_newline else b""))
    return path


CLI = [sys.executable, "-m", "server.cli"]


# --- the adversarial suite's mode and its per-group tally (tests/adversarial/README.md) ----------
# Here, not in tests/adversarial/conftest.py: every folder's conftest is imported as the module
# `conftest`, so a second one would shadow this file's helpers for `from conftest import ...`.

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
