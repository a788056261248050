#!/usr/bin/env python3
"""Apply-gate overhead benchmark: what apply_delta itself costs around the flow gate.

    python tests/bench/apply.py [--runs N] [--files N] [--json]

The gate returns green (or red) instantly, so the figure is the applier's own work: the lock,
the staleness check, the journal (written with fsync), the atomic writes (each fsynced with its
directory), and on the revert path the restore. Three reloads are measured: none
(`reload=lambda p: None`), core.kitsoki.config.load_config (`.kitsoki.yaml` only) and
core.kitsoki.story.load_workspace (config and stories: what an accept really reloads with).
Target: keep median < 50 ms. Runs in a temp dir (on the same filesystem as $TMPDIR, whose fsync
cost dominates); not part of the unit test run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from core.apply import GateResult, apply_delta  # noqa: E402
from core.kitsoki.config import load_config  # noqa: E402
from core.kitsoki.story import load_workspace  # noqa: E402

TARGET_MS = 50.0
GREEN = GateResult(green=True, gate="bench", summary="instant green")
RED = GateResult(green=False, gate="bench", summary="instant red")


def make_workspace(root: Path, files: int) -> list[str]:
    """A small kitsoki workspace: .kitsoki.yaml, one story app.yaml and a few flow fixtures."""
    (root / ".kitsoki.yaml").write_text("root:\n  import: dev-story\n")
    story = root / "stories" / "demo"
    (story / "flows").mkdir(parents=True)
    (story / "app.yaml").write_text("app: demo\n" + "".join(f"# line {i}\n" for i in range(200)))
    for i in range(files):
        (story / "flows" / f"f{i}.yaml").write_text(f"test_kind: flow\napp: ../app.yaml\n# {i}\n")
    return [".kitsoki.yaml", "stories/demo/app.yaml"]


def one_run(root: Path, targets: list[str], gate_result: GateResult, reload, n: int) -> float:
    changes = {rel: (root / rel).read_bytes() + f"# edit {n}\n".encode() for rel in targets}
    changes["stories/demo/new/extra.yaml"] = b"test_kind: flow\n"  # a new file in a new dir
    expected = {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in targets}
    expected["stories/demo/new/extra.yaml"] = None
    started = time.perf_counter()
    outcome = apply_delta(root, f"{n & 0xffffffffffffffff:016x}", changes, expected, gate=lambda p: gate_result, reload=reload)
    elapsed = (time.perf_counter() - started) * 1000
    assert outcome.flows_green == gate_result.green
    if outcome.flows_green:  # undo outside the timing, so every run starts from the same tree
        (root / "stories/demo/new/extra.yaml").unlink()
        (root / "stories/demo/new").rmdir()
    return elapsed


def measure(path: str, reload_name: str, runs: int, files: int) -> dict:
    reload = {"load_config": load_config, "load_workspace": load_workspace}.get(reload_name, lambda p: None)
    gate_result = GREEN if path == "keep" else RED
    with tempfile.TemporaryDirectory(prefix="kitsoki-miner-bench-") as tmp:
        root = Path(tmp).resolve()
        targets = make_workspace(root, files)
        one_run(root, targets, gate_result, reload, -1)  # warm imports and caches
        times = [one_run(root, targets, gate_result, reload, n) for n in range(runs)]
    times.sort()
    return {"path": path, "reload": reload_name, "runs": runs,
            "median_ms": round(statistics.median(times), 3),
            "p90_ms": round(times[min(len(times) - 1, int(len(times) * 0.9))], 3),
            "max_ms": round(times[-1], 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--files", type=int, default=5, help="flow fixtures in the workspace")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    rows = [measure(path, reload, args.runs, args.files)
            for path in ("keep", "revert") for reload in ("none", "load_config", "load_workspace")]
    if args.json:
        print(json.dumps({"target_ms": TARGET_MS, "results": rows}, indent=2))
    else:
        print(f"{'path':<8}{'reload':<13}{'median ms':>10}{'p90 ms':>10}{'max ms':>10}")
        for row in rows:
            print(f"{row['path']:<8}{row['reload']:<13}{row['median_ms']:>10.2f}{row['p90_ms']:>10.2f}"
                  f"{row['max_ms']:>10.2f}")
    keep = rows[0]
    print(f"overhead keep median {keep['median_ms']:.2f} ms (target < {TARGET_MS:.0f} ms)")
    return 0 if keep["median_ms"] < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
