#!/usr/bin/env python3
"""Built-in flow runner: conformance on kitsoki's own CI flows, and its speed.

    python tests/bench/flows.py [--workspace DIR] [--runs N] [--json]

Runs the flows kitsoki's CI runs (stories/*/app.yaml of ../shared/kitsoki-workspace, less
repo-bakeoff and bench-bugfix; each app's flows/*.yaml, as `kitsoki test flows <app.yaml>` does)
with the built-in runner in this one process, and prints:

* the pass figure, the not-supported reasons with their counts, the flows that fail only because
  the copy leaves out their Starlark script (kitsoki fails them here too), and every other flow
  that FAILS (kitsoki passes them all, so such a failure is a bug of ours);
* the wall time of the whole run (loading the stories, reading the fixtures, running them;
  median of --runs), the loader's share (loading each app alone, once, before the runs), and a bare
  YAML parse of the same files (libyaml, no model) measured in the same process. Target (issue 26):
  under 2 s.

Exit 1 when a flow fails or the run takes 2 s or more. Not part of the unit test run (the
conformance test, tests/test_flows_conformance.py, checks the figures without timing them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from core.flows.conformance import ci_apps, conformance  # noqa: E402
from core.kitsoki.story import load_story  # noqa: E402

TARGET_S = 2.0
DEFAULT_WORKSPACE = HERE.parent.parent.parent / "shared" / "kitsoki-workspace"


def files_of(workspace: Path) -> list[Path]:
    """Every YAML file the run reads: each app with its includes, then its fixtures."""
    out: list[Path] = []
    for app in ci_apps(workspace):
        try:
            out.extend(load_story(app, workspace).files)
        except Exception:  # a story that does not load still has its app.yaml parsed
            out.append(app)
        out.extend(sorted((app.parent / "flows").glob("*.yaml")))
    return out


def story_load(workspace: Path) -> float:
    """The loader's share: loading every CI app once (core.kitsoki, not the runner)."""
    started = time.perf_counter()
    for app in ci_apps(workspace):
        try:
            load_story(app, workspace)
        except Exception:
            pass
    return time.perf_counter() - started


def bare_parse(paths: list[Path]) -> float:
    started = time.perf_counter()
    for path in paths:
        for _ in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader):
            pass
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    workspace = options.workspace.resolve()

    loading = story_load(workspace)  # first, while any parse cache of the loader is cold
    runs = [conformance(workspace) for _ in range(max(1, options.runs))]
    result = runs[-1]
    wall = statistics.median(run.seconds for run in runs)
    paths = files_of(workspace)
    parse = statistics.median(bare_parse(paths) for _ in range(max(1, options.runs)))
    figures = {**result.as_dict(), "seconds": round(wall, 3), "bare_yaml_parse_seconds": round(parse, 3),
               "ratio_to_bare_parse": round(wall / parse, 1) if parse else None, "yaml_files": len(paths),
               "story_loading_seconds": round(loading, 3),
               "target_seconds": TARGET_S}
    if options.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"kitsoki CI flows ({result.apps} apps): {result.passed}/{result.total} pass "
              f"({100 * result.rate:.1f}%), {sum(result.unsupported.values())} not supported "
              f"({result.needs_loader()} of them need the loader), {len(result.failed)} fail")
        print("not supported by the built-in runner:")
        for reason, count in result.unsupported.most_common():
            print(f"  {count:4}  {reason}")
        if result.without_script:
            print(f"failing only for a Starlark script this copy leaves out (kitsoki fails them here too): "
                  f"{len(result.without_script)}")
            for file, scripts in result.without_script.items():
                print(f"  {file}  (needs {', '.join(scripts)})")
        print(f"failing flows: {len(result.failed) or 'none'}")
        for failed in result.failed:
            print(f"  {failed.File}")
            for failure in failed.failures()[:3]:
                print(f"      {failure[:300]}")
        print(f"time: {wall:.2f} s for all of them (median of {len(runs)}), loading the stories alone (the "
              f"loader, cold) {loading:.2f} s; bare YAML parse of the same {len(paths)} files {parse:.2f} s "
              f"(x{wall / parse:.1f}); target < {TARGET_S:.0f} s")
    return 1 if result.failed or wall >= TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
