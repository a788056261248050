#!/usr/bin/env python3
"""`kitsoki-miner flows` on a whole repository, as a person runs it: a fresh CLI process, cold.

    python tests/bench/flows_repo.py [--repo KITSOKI_CHECKOUT] [--workspace DIR ...] [--runs 3]
                                     [--before TREE] [--json]

Issue 26's row "built-in runner, whole repository (438 flow documents)": target < 4 s. Each tree (kitsoki's
repository, `--repo`, default $KITSOKI_SRC, else /work/kitsoki-src; each `--workspace`, default
../shared/kitsoki-workspace) is copied once without `.git` and `.artifacts` (the runner never writes into it;
the copy keeps the checkout out of reach all the same), then `python -m server.cli flows --repo COPY --json` runs
in a fresh process per round. Printed per tree and code: the wall time and the CPU time (user + system of the
process, from getrusage: the machine is shared, and CPU is what another tenant's load inflates least), medians
of --runs, the pass figure, and beside them a bare PyYAML-C parse of the same YAML files (stories, includes,
fixtures) in a fresh process of the same round.

`--before TREE` (`git archive <commit> core server | tar -x -C TREE`) runs that code in the same rounds,
alternating; the report each run prints (kitsoki's `--json` shape: every flow's verdict, turns, failures and
views) must be byte-identical across runs and code, or the script says so and exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_WORKSPACE = REPO.parent / "shared" / "kitsoki-workspace"
TARGET_S = 4.0


def copy_tree(source: Path, into: Path) -> Path:
    shutil.copytree(source, into, symlinks=True, ignore=shutil.ignore_patterns(".git", ".artifacts"))
    return into


def run(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall, CPU of the child, the finished process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def bare_parse(tree: Path, env: dict) -> tuple[float, float]:
    files = [p for p in tree.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
             and not ({"node_modules", ".git"} & set(p.parts))]
    listing = tree.parent / f"{tree.name}-yaml.txt"
    listing.write_text("\n".join(map(str, files)))
    code = ("import sys,yaml\nfor f in open(sys.argv[1]).read().splitlines():\n"
            "  try: list(yaml.load_all(open(f,'rb').read(), Loader=yaml.CSafeLoader))\n"
            "  except Exception: pass\n")
    wall, cpu, _ = run([sys.executable, "-c", code, str(listing)], tree.parent, env)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_repo = os.environ.get("KITSOKI_SRC") or ("/work/kitsoki-src" if Path("/work/kitsoki-src").is_dir() else None)
    ap.add_argument("--repo", type=Path, default=default_repo and Path(default_repo))
    ap.add_argument("--workspace", type=Path, action="append")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    trees = ([("repo", a.repo)] if a.repo else []) + \
        [(f"ws{n}" if n else "ws", ws) for n, ws in enumerate(a.workspace or [DEFAULT_WORKSPACE])]
    codes = {"now": REPO} | ({"before": a.before.resolve()} if a.before else {})
    figures: dict = {name: {tree: {"wall": [], "cpu": []} for tree, _ in trees} for name in codes}
    bare: dict = {tree: {"wall": [], "cpu": []} for tree, _ in trees}
    outputs: dict[str, set[str]] = {tree: set() for tree, _ in trees}
    passed: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kitsoki-bench-flows-") as tmp:
        env = {**os.environ, "HOME": str(Path(tmp) / "home")}
        for key in ("KITSOKI_REPO", "PYTHONDONTWRITEBYTECODE"):  # an install has its bytecode: compile it once
            env.pop(key, None)
        for code in codes.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", "core", "server"], cwd=code, env=env,
                           capture_output=True)
        copies = {tree: copy_tree(source, Path(tmp) / tree) for tree, source in trees}
        load = [os.getloadavg()[0]]
        for round_ in range(a.runs):
            for tree, _ in trees:
                order = list(codes.items())
                if round_ % 2:
                    order.reverse()
                for name, code in order:
                    wall, cpu, done = run([sys.executable, "-m", "server.cli", "flows", "--repo", str(copies[tree]),
                                           "--json"], code, env)
                    if done.returncode not in (0, 1):
                        raise SystemExit(f"flows failed on {tree} ({code}): {done.stderr.decode()[-2000:]}")
                    figures[name][tree]["wall"].append(wall)
                    figures[name][tree]["cpu"].append(cpu)
                    outputs[tree].add(hashlib.sha256(done.stdout).hexdigest())
                    report = json.loads(done.stdout)
                    passed[tree] = f"{report['Passed']}/{report['Passed'] + report['Failed']}"
                wall, cpu = bare_parse(copies[tree], env)
                bare[tree]["wall"].append(wall)
                bare[tree]["cpu"].append(cpu)
        load.append(os.getloadavg()[0])
    med = statistics.median
    out: dict = {"load_average": load, "passed": passed,
                 "bare_parse": {t: {k: med(v) for k, v in f.items()} for t, f in bare.items()},
                 "same_output": {tree: len(found) == 1 for tree, found in outputs.items()}}
    for name in codes:
        out[name] = {t: {k: med(v) for k, v in f.items()} for t, f in figures[name].items()}
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"load average {load[0]:.2f} -> {load[1]:.2f}; target: wall < {TARGET_S} s")
        for tree, _ in trees:
            b = out["bare_parse"][tree]
            print(f"{tree} ({passed[tree]} flows pass; bare PyYAML-C parse {b['wall']:.2f} s wall, {b['cpu']:.2f} s CPU)")
            for name in codes:
                f = out[name][tree]
                print(f"  [{name}] wall {f['wall']:.2f} s ({f['wall'] / b['wall']:.1f}x bare parse), CPU {f['cpu']:.2f} s")
        print("same report (every run and code): "
              + ", ".join(f"{t} {'yes' if v else 'NO'}" for t, v in out["same_output"].items()))
    return 0 if all(out["same_output"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
