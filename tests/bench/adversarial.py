"""The adversarial suite in full mode: every case, tried/survived per group.

    .venv/bin/python tests/bench/adversarial.py [pytest args...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "tally.json"
        env = {**os.environ, "KITSOKI_ADVERSARIAL": "full", "KITSOKI_ADVERSARIAL_REPORT": str(report)}
        code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                str(ROOT / "tests" / "adversarial"), *sys.argv[1:]], cwd=ROOT, env=env)
        tally = orjson.loads(report.read_bytes()) if report.exists() else {}
    print(f"\n{'group':<18} {'tried':>7} {'survived':>9}")
    for group, counts in tally.items():
        print(f"{group:<18} {counts.get('tried', 0):>7} {counts.get('survived', 0):>9}")
    total = sum(c.get("tried", 0) for c in tally.values())
    ok = sum(c.get("survived", 0) for c in tally.values())
    print(f"{'all':<18} {total:>7} {ok:>9}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
