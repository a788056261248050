"""Every benchmark script still imports and parses its arguments (they are not run by `make test`,
so an import broken by a refactor would otherwise only show at the next `make bench`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if p.name != "adversarial.py")  # that one is pytest's --help


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bench_script_answers_help(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60,
                          cwd=BENCH.parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
