#!/usr/bin/env python3
"""Flow-gate benchmark on kitsoki's own workspace: what a gated accept costs, scoped vs everything.

    python tests/bench/gate.py [--runs N] [--kitsoki BINARY] [--json]

On a copy of ../shared/kitsoki-workspace (the shared tree stays untouched), with a rung-2 edit of
stories/off-ramp-demo (one example added to an intent: its one flow passes), it times:

- accept, built-in gate: core.proposals.decide.accept end to end (load, checks, apply, the scoped
  gate, record), cold (a fresh copy: nothing cached) and warm (a second accept in the same process);
- accept, kitsoki gate: the same through `kitsoki test flows` (default: tests/sim/kitsoki_sim.py, the
  simulation, on PATH; `--kitsoki` names another binary on PATH or a path);
- preview: core.sidecar.planned_gate, what the editors ask before an accept;
- baseline, in the same run: core.flows.run_flows over every story of the workspace, which is what
  the gate ran for any accept before it was scoped (every flow document of every story). The ratio is the figure.

Not part of the unit test run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from core.flows import run_flows  # noqa: E402
from core.kitsoki.workspace import clear_caches  # noqa: E402
from core.proposals.decide import accept  # noqa: E402
from core.proposals.drafter import Draft  # noqa: E402
from core.proposals.proposer import run_proposer  # noqa: E402
from core.sidecar import planned_gate  # noqa: E402
from sim.kitsoki_sim import install  # noqa: E402
from test_proposals import recipe  # noqa: E402

SOURCE = REPO.parent / "shared" / "kitsoki-workspace"
APP = "stories/off-ramp-demo/app.yaml"


def stage(ws: Path, n: int) -> str:
    """A rung-2 proposal adding one example to off-ramp-demo's browse intent (a simulated drafter)."""
    text = (ws / APP).read_text()
    new = text.replace('examples: ["browse", "catalogue",', f'examples: ["browse", "catalogue", "list stories {n}",', 1)

    def drafter(recipe_, mapping, model, inventory, read):
        return Draft(kind="intent", target="root-instance", rung=2, title=f"list stories {n}", files={APP: new.encode()},
                     summary_markdown="A benchmark proposal from a simulated drafter, long enough for the schema.")

    r = recipe("intent", f"list stories {n}", phrasings=[("frobnicate the quux widget", 3)])
    report = run_proposer(ws, [r], drafter=drafter)
    assert [o.result for o in report.outcomes] == ["raised"], report.outcomes
    return r.id


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kitsoki", default=None, help="a kitsoki binary (default: the simulation)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not SOURCE.is_dir():
        print(f"{SOURCE} is not here", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="kitsoki-miner-gate-bench-"))
    bindir = tmp / "bin"
    if args.kitsoki:
        bindir.mkdir()
        (bindir / "kitsoki").symlink_to(shutil.which(args.kitsoki) or os.path.abspath(args.kitsoki))
    else:
        install(bindir)
    os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    figures: dict[str, list[float]] = {k: [] for k in ("accept_builtin_cold_s", "accept_builtin_warm_s",
                                                       "accept_kitsoki_warm_s", "preview_warm_s",
                                                       "baseline_all_flows_builtin_s")}
    answers = {}
    for run in range(args.runs):
        ws = tmp / f"run{run}" / "kitsoki"
        shutil.copytree(SOURCE, ws)
        rid = stage(ws, 1)
        clear_caches()  # cold: the accept parses and loads every story again
        seconds, decision = timed(lambda: accept(ws, rid, gate_kind="builtin"))
        figures["accept_builtin_cold_s"].append(seconds)
        answers["builtin"] = decision.ran_lines()
        rid = stage(ws, 2)
        figures["preview_warm_s"].append(timed(lambda: planned_gate(ws, rid))[0])
        seconds, decision = timed(lambda: accept(ws, rid, gate_kind="builtin"))
        figures["accept_builtin_warm_s"].append(seconds)
        rid = stage(ws, 3)
        seconds, decision = timed(lambda: accept(ws, rid, gate_kind="kitsoki"))
        figures["accept_kitsoki_warm_s"].append(seconds)
        answers["kitsoki"] = decision.ran_lines()
        assert decision.flows_green, decision.failure
        seconds, report = timed(lambda: run_flows(ws))
        figures["baseline_all_flows_builtin_s"].append(seconds)
        answers["baseline"] = [f"{len(report.Results)} flows, {report.Passed} passed, {report.Failed} failed"]
    medians = {k: round(statistics.median(v), 4) for k, v in figures.items()}
    medians["ratio_baseline_over_scoped_warm"] = round(
        medians["baseline_all_flows_builtin_s"] / medians["accept_builtin_warm_s"], 1)
    out = {"workspace": str(SOURCE), "edit": APP, "runs": args.runs,
           "kitsoki": args.kitsoki or "tests/sim/kitsoki_sim.py (simulation)", "median": medians, "ran": answers}
    shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for key, value in medians.items():
            print(f"{key:36} {value}")
        for key, lines in answers.items():
            print(f"{key}: " + "; ".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
