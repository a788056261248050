#!/usr/bin/env python3
"""Loading a real kitsoki workspace: cold load, warm propose, and the accept's own overhead.

    python tests/bench/load.py [--workspace DIR] [--runs N] [--json]

On a copy of ../shared/kitsoki-workspace (kitsoki's own 41 stories; the copy because propose and
accept write into it), with no KITSOKI_REPO (dev-story comes from the library we carry):

- cold load: `load_workspace` in a fresh interpreter, against a bare PyYAML-C parse
  (`yaml.load_all(..., CSafeLoader)`) of the same files, also in a fresh interpreter, the two
  alternated in the same run; target ratio of the medians <= 3;
- warm propose: `run_proposer` a second time over the same recipes with nothing changed;
  target < 0.5 s;
- accept overhead: `accept` of a raised rung-1 proposal with a simulated gate that answers green
  at once (so the figure is everything but the flow gate); target < 0.3 s.

Medians of N runs. Not part of the unit test run (`make bench` runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
os.environ.pop("KITSOKI_REPO", None)

import yaml  # noqa: E402

from core.apply import GateResult  # noqa: E402
from core.kitsoki.story import load_workspace  # noqa: E402
from core.mining.recipes import Instance, Phrasing, Recipe, recipe_id  # noqa: E402
from core.proposals.decide import accept  # noqa: E402
from core.proposals.proposer import run_proposer  # noqa: E402

DEFAULT_WORKSPACE = HERE.parent.parent.parent / "shared" / "kitsoki-workspace"
COLD_RATIO_TARGET = 3.0
WARM_PROPOSE_TARGET_S = 0.5
ACCEPT_OVERHEAD_TARGET_S = 0.3


def simulated_green_gate(apps):  # a named stand-in for the flow gate: answers green at once
    return GateResult(green=True, gate="simulated", summary="simulated green gate (benchmark)")


def recipes() -> list[Recipe]:
    def make(kind, title, phrasings=(), iface=None, value=None):
        return Recipe(id=recipe_id(kind, title), kind=kind, title=title, priority=5.0, sessions=3,
                      phrasings=[Phrasing(text=t, count=n) for t, n in phrasings], action_signature=["Bash: make"],
                      instances=[Instance(session=f"s{i}", path=f"/t/s{i}.jsonl", line_start=1, line_end=2)
                                 for i in range(3)], determinism="deterministic", iface=iface, value=value)
    return [
        make("world", "release from trunk", iface="base_branch", value="trunk"),
        make("binding", "tickets in GitHub", iface="ticket", value="gh"),
        make("world", "tests with go test", iface="test_cmd", value="go test ./..."),
        make("intent", "fix the login crash", phrasings=[("fix the login crash", 3)]),
        make("intent", "open a pull request", phrasings=[("open a pull request after fixing", 4)]),
        make("intent", "rotate the signing keys", phrasings=[("rotate the signing keys", 3)]),
        make("intent", "pick row 3", phrasings=[("pick row 3", 2)]),
    ]


def bare_parse(files: list[Path]) -> float:
    started = time.perf_counter()
    for path in files:
        list(yaml.load_all(path.read_bytes(), Loader=yaml.CSafeLoader))
    return time.perf_counter() - started


def in_fresh_process(what: str, root: Path, files: list[Path]) -> float:
    """Seconds for `what` (bare | cold) in a new interpreter: nothing cached, no heap left over."""
    listing = root.parent / "files.txt"
    listing.write_text("\n".join(str(path) for path in files))
    done = subprocess.run([sys.executable, __file__, "--child", what, str(root), str(listing)], check=True,
                          capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return float(done.stdout.strip().splitlines()[-1])


def child(what: str, root: Path, listing: Path) -> None:
    files = [Path(line) for line in listing.read_text().splitlines() if line]
    if what == "bare":
        print(bare_parse(files))
        return
    started = time.perf_counter()
    load_workspace(root)
    print(time.perf_counter() - started)


def measure(workspace: Path, runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="kitsoki-bench-load-") as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(workspace, root, symlinks=True, ignore=shutil.ignore_patterns(".artifacts"))
        for path in root.rglob("*"):
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)
        model = load_workspace(root)
        files = [path for path in model.files() if path.suffix in (".yaml", ".yml")]
        cold, bare = [], []
        for _ in range(runs):  # alternate, each in a fresh process, so both see the same machine
            bare.append(in_fresh_process("bare", root, files))
            cold.append(in_fresh_process("cold", root, files))
        started = time.perf_counter()
        load_workspace(root)
        warm_load = time.perf_counter() - started

        batch = recipes()
        started = time.perf_counter()
        first = run_proposer(root, batch)
        cold_propose = time.perf_counter() - started
        warm = []
        for _ in range(runs):
            started = time.perf_counter()
            run_proposer(root, batch)
            warm.append(time.perf_counter() - started)

        raised = [o.recipe_id for o in first.outcomes if o.result == "raised"]
        rung1 = next(o.recipe_id for o in first.outcomes if o.result == "raised" and o.kind == "world")
        started = time.perf_counter()
        decision = accept(root, rung1, gate=simulated_green_gate)
        accept_s = time.perf_counter() - started
        assert decision.flows_green and not decision.reverted, decision
    ratio = statistics.median(cold) / statistics.median(bare)
    return {
        "files": len(files), "stories": len(model.stories),
        "bare_pyyaml_c_s": round(statistics.median(bare), 4), "cold_load_s": round(statistics.median(cold), 4),
        "cold_ratio": round(ratio, 2), "cold_ratio_target": COLD_RATIO_TARGET, "warm_load_s": round(warm_load, 4),
        "cold_propose_s": round(cold_propose, 3), "warm_propose_s": round(statistics.median(warm), 4),
        "warm_propose_target_s": WARM_PROPOSE_TARGET_S, "raised": len(raised),
        "accept_overhead_s": round(accept_s, 4), "accept_overhead_target_s": ACCEPT_OVERHEAD_TARGET_S,
        "ok": ratio <= COLD_RATIO_TARGET and statistics.median(warm) < WARM_PROPOSE_TARGET_S
        and accept_s < ACCEPT_OVERHEAD_TARGET_S,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--child", nargs=3, metavar=("WHAT", "ROOT", "FILES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return 0
    if not args.workspace.is_dir():
        print(f"no workspace at {args.workspace}", file=sys.stderr)
        return 2
    row = measure(args.workspace, args.runs)
    if args.json:
        print(json.dumps(row, indent=2))
    else:
        print(f"{row['files']} files, {row['stories']} stories")
        print(f"cold load      {row['cold_load_s']:.3f} s = {row['cold_ratio']:.2f} x bare PyYAML-C "
              f"{row['bare_pyyaml_c_s']:.3f} s (target <= {COLD_RATIO_TARGET:g} x); warm load {row['warm_load_s']:.4f} s")
        print(f"propose        cold {row['cold_propose_s']:.3f} s, warm {row['warm_propose_s']:.4f} s "
              f"(target < {WARM_PROPOSE_TARGET_S} s); {row['raised']} raised")
        print(f"accept         {row['accept_overhead_s']:.4f} s without the flow gate "
              f"(target < {ACCEPT_OVERHEAD_TARGET_S} s)")
        print("OK" if row["ok"] else "MISSED A TARGET")
    return 0 if row["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
