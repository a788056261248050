#!/usr/bin/env python3
"""`kitsoki-miner propose` as a person runs it: a fresh CLI process, cold (no state) and again (nothing changed).

    python tests/bench/propose.py [--repo KITSOKI_CHECKOUT] [--workspace DIR] [--recipes 50] [--more 100]
                                  [--runs 3] [--before TREE] [--json]

Targets (issue 26), each on a copy (propose writes its state into the workspace):

- kitsoki's own repository (`--repo`, a checkout of constructorfabric/Kitsoki; skipped without it), 4 recipes:
  cold < 2 s, the second run (nothing changed) < 0.5 s;
- a copy of ../shared/kitsoki-workspace with `--recipes` recipes (cold < 3 s at 50) and with `--more` recipes:
  the cost of each extra recipe, (cold(more) - cold(recipes)) / (more - recipes), < 30 ms;
- accept (a fresh `kitsoki-miner accept` after a propose) of the workspace copy's rung-1 world value, which no
  flow there can exercise (dev-story's rooms are not in the copy), so it is held: < 0.5 s + the flows that run.
  Its answer, every byte of the tree after it and the state it recorded must be the same for every run and code
  ("accepted" in the output).

The recipes are written straight into `.artifacts/mining/recipes.json`, deterministically: three settings,
one ask kitsoki already models and distinct new asks ("rotate the signing keys", ...), so most of them are
drafted, validated (with their proofs run on both trees) and staged. Baseline, in a fresh process in the same
rounds: a bare PyYAML-C parse of the workspace's YAML files (`yaml.load_all(..., CSafeLoader)`).

`--before TREE` (`git archive <commit> core server | tar -x -C TREE`) runs that code in the same rounds; the
digest of what each run staged (outcomes, every drafted file, each proposal less its time and signature) must
be the same for both, or the script says so and exits 1. Medians of `--runs`; the workspace's cold runs also
report their process's CPU (user + system: `ws_cold_cpu_s`, `per_recipe_cpu_ms`), steadier than wall on a
shared machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
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
sys.path.insert(0, str(REPO))

DEFAULT_WORKSPACE = REPO.parent / "shared" / "kitsoki-workspace"
TARGETS = {"repo_cold_s": 2.0, "repo_warm_s": 0.5, "ws_cold_s": 3.0, "per_recipe_ms": 30.0}
VERBS = ["regenerate", "rotate", "rebuild", "publish", "archive", "audit", "summarize", "translate", "benchmark",
         "profile", "vendor", "prune", "compress", "snapshot", "backfill", "reindex", "deduplicate", "lint", "sign",
         "mirror"]
THINGS = ["the api client", "the signing keys", "the docs site", "the release notes", "the fixtures",
          "the changelog", "the sbom", "the screenshots", "the search index", "the flaky tests", "the demo video",
          "the metrics dashboard", "the translations", "the dependency lockfile", "the coverage report",
          "the db snapshot", "the wasm bundle", "the cli completions", "the man pages", "the schema docs"]


def recipes_json(count: int) -> bytes:
    """`count` recipes as a mining pass writes them (the same for the same count)."""
    from core.mining.recipes import Instance, Phrasing, Recipe, RecipesFile, recipe_id

    def make(n, kind, title, phrasings=(), iface=None, value=None):
        return Recipe(id=recipe_id(kind, title), kind=kind, title=title, priority=5.0 + (n % 7) / 10, sessions=3,
                      phrasings=[Phrasing(text=t, count=c) for t, c in phrasings], action_signature=["Bash: make"],
                      instances=[Instance(session=f"s{n}-{k}", path=f"/t/s{n}-{k}.jsonl", line_start=1, line_end=2)
                                 for k in range(3)], determinism="deterministic", iface=iface, value=value)

    out = [make(0, "world", "release from trunk", iface="base_branch", value="trunk"),
           make(1, "binding", "tickets in GitHub", iface="ticket", value="gh"),
           make(2, "world", "tests with go test", iface="test_cmd", value="go test ./..."),
           make(3, "intent", "open a pull request", phrasings=[("open a pull request after fixing", 4)])]
    pairs = [(verb, thing) for verb in VERBS for thing in THINGS]
    random.Random(1).shuffle(pairs)
    for n, (verb, thing) in enumerate(pairs[:max(0, count - len(out))]):
        title = f"{verb} {thing}"
        out.append(make(n + 4, "intent", title, phrasings=[(title, 3), (f"please {title}", 2), (f"{title} again", 1)]))
    return RecipesFile(recipes=out[:count]).model_dump_json(indent=2).encode()


def fresh_copy(source: Path, into: Path, recipes: bytes) -> Path:
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(source, into, symlinks=True, ignore=shutil.ignore_patterns(".artifacts", ".git"))
    for path in [into, *into.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    state = into / ".artifacts" / "mining"
    state.mkdir(parents=True)
    (state / "recipes.json").write_bytes(recipes)
    return into


CPU: list[float] = []
"""The CPU (user + system) of the last `propose` process: on a shared, loaded machine it moves far less than
the wall time does."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def propose(code: Path, workspace: Path, env: dict) -> tuple[float, dict]:
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "server.cli", "propose", "--repo", str(workspace), "--json"],
                          cwd=code, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    CPU[:] = [_children_cpu() - cpu]
    if done.returncode != 0:
        raise SystemExit(f"propose failed in {workspace} ({code}): {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def accept(code: Path, workspace: Path, env: dict, rid: str) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "server.cli", "accept", rid, "--repo", str(workspace), "--json"],
                          cwd=code, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    try:
        return wall, json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"accept failed in {workspace} ({code}): {done.stderr[-2000:]}") from None


def digest(workspace: Path, report: dict) -> str:
    """What a run staged, without when or under which key: outcomes, drafted files, proposals."""
    h = hashlib.sha256()
    outcomes = [{k: o.get(k) for k in ("recipe_id", "result", "reason", "classification", "score")}
                for o in report["outcomes"]]
    h.update(json.dumps(outcomes, sort_keys=True).encode().replace(str(workspace).encode(), b"<ws>"))
    state = workspace / ".artifacts" / "mining"
    for path in sorted(p for p in state.rglob("*") if p.is_file() and p.parent != state):
        rel = path.relative_to(state).as_posix()
        data = path.read_bytes()
        if path.name == "proposal.json":
            body = json.loads(data)
            for key in ("mac", "drafted_at"):
                body.pop(key, None)
            data = json.dumps(body, sort_keys=True).encode()
        h.update(rel.encode() + b"\0" + data.replace(str(workspace).encode(), b"<ws>") + b"\0")
    return h.hexdigest()


def accepted_digest(workspace: Path, code: Path, report: dict, answer: dict) -> str:
    """What an accept answered and left: its answer, every byte of the tree, and the state it recorded."""
    h = hashlib.sha256(digest(workspace, report).encode())
    text = json.dumps(answer, sort_keys=True).replace(str(workspace), "<ws>").replace(str(code), "<code>")
    h.update(text.encode())
    for path in sorted(p for p in workspace.rglob("*") if p.is_file() and ".artifacts" not in p.parts):
        h.update(path.relative_to(workspace).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def bare_parse_s(workspace: Path) -> float:
    files = [p for top in (".kitsoki.yaml", ".kitsoki", "stories") for p in [workspace / top, *(workspace / top).rglob("*")]
             if p.suffix in (".yaml", ".yml") and p.is_file()]  # what the loader may read
    listing = workspace.parent / f"{workspace.name}-yaml.txt"
    listing.write_text("\n".join(map(str, files)))
    code = ("import sys,time,yaml\nfiles=open(sys.argv[1]).read().splitlines()\nt=time.perf_counter()\n"
            "for f in files:\n  try: list(yaml.load_all(open(f,'rb').read(), Loader=yaml.CSafeLoader))\n  except yaml.YAMLError: pass\n"
            "print(time.perf_counter()-t)")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(listing)], check=True, capture_output=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path, default=os.environ.get("KITSOKI_SRC") and Path(os.environ["KITSOKI_SRC"]))
    ap.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    ap.add_argument("--recipes", type=int, default=50)
    ap.add_argument("--more", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cases", nargs="+", default=["repo", "ws", "accept"], choices=["repo", "ws", "accept"],
                    help="repo: kitsoki's repository; ws: the workspace at --recipes and --more; accept: a held accept")
    a = ap.parse_args(argv)
    codes = {"now": REPO} | ({"before": a.before.resolve()} if a.before else {})
    cases = []
    if a.repo and "repo" in a.cases:
        cases.append(("repo", a.repo, 4))
    if "ws" in a.cases:
        cases += [("ws", a.workspace, a.recipes), ("ws_more", a.workspace, a.more)]
    if "accept" in a.cases:
        cases.append(("accept", a.workspace, 4))
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in codes}
    bare: dict[str, list[float]] = {}
    digests: dict[tuple[str, str], set[str]] = {}
    with tempfile.TemporaryDirectory(prefix="kitsoki-bench-propose-") as tmp:
        env = {**os.environ, "KITSOKI_MINER_KEY_DIR": str(Path(tmp) / "key"), "HOME": str(Path(tmp) / "home")}
        env.pop("KITSOKI_REPO", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has its bytecode: compile it once, first
        for code in codes.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", "core", "server"], cwd=code, env=env,
                           capture_output=True)
        uptime = [os.getloadavg()[0]]
        for run in range(a.runs):
            for case, source, count in cases:
                data = recipes_json(count)
                order = list(codes.items())
                if run % 2:
                    order.reverse()
                for name, code in order:
                    ws = fresh_copy(source, Path(tmp) / f"{case}-{name}", data)
                    if name == "now":
                        bare.setdefault(case, []).append(bare_parse_s(ws))
                    cold, report = propose(code, ws, env)
                    cold_cpu = CPU[0]
                    digests.setdefault((case, name), set()).add(digest(ws, report))
                    if case == "accept":  # the world value: rung 1, no flow here can exercise it, so it is held
                        wall, answer = accept(code, ws, env, report["raised"][0])
                        digests.setdefault(("accepted", name), set()).add(accepted_digest(ws, code, report, answer))
                        figures[name].setdefault("accept_s", []).append(wall)
                        figures[name].setdefault("accept_held", []).append(float(bool(answer.get("held"))))
                        figures[name].setdefault("accept_flows", []).append(float(len(answer.get("flows") or [])))
                        continue
                    warm, _ = propose(code, ws, env)
                    figures[name].setdefault(f"{case}_cold_s", []).append(cold)
                    figures[name].setdefault(f"{case}_cold_cpu_s", []).append(cold_cpu)
                    figures[name].setdefault(f"{case}_warm_s", []).append(warm)
                    figures[name].setdefault(f"{case}_raised", []).append(len(report["raised"]))
        uptime.append(os.getloadavg()[0])
    out: dict = {"load_average": uptime, "bare_parse_s": {k: statistics.median(v) for k, v in bare.items()}}
    for name, table in figures.items():
        medians = {key: statistics.median(values) for key, values in table.items()}
        if "ws_more_cold_s" in medians:
            medians["per_recipe_ms"] = 1000 * (medians["ws_more_cold_s"] - medians["ws_cold_s"]) / max(1, a.more - a.recipes)
            medians["per_recipe_cpu_ms"] = (1000 * (medians["ws_more_cold_cpu_s"] - medians["ws_cold_cpu_s"])
                                            / max(1, a.more - a.recipes))
        out[name] = medians
    same = {case: len({d for (c, _), ds in digests.items() if c == case for d in ds}) == 1
            for case in [c for c, _, _ in cases] + (["accepted"] if "accept" in a.cases else [])}
    out["same_output"] = same
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"load average {uptime[0]:.2f} -> {uptime[1]:.2f}; bare PyYAML-C parse of the same files: "
              + ", ".join(f"{k} {v:.3f} s" for k, v in out["bare_parse_s"].items()))
        for name in codes:
            m = out[name]
            print(f"[{name}]")
            if "repo_cold_s" in m:
                print(f"  kitsoki repo, 4 recipes: cold {m['repo_cold_s']:.2f} s (target < {TARGETS['repo_cold_s']} s, "
                      f"{m['repo_cold_s'] / out['bare_parse_s']['repo']:.1f}x bare parse), again {m['repo_warm_s']:.2f} s "
                      f"(target < {TARGETS['repo_warm_s']} s)")
            if "ws_cold_s" in m:
                print(f"  workspace, {a.recipes} recipes ({m['ws_raised']:.0f} raised): cold {m['ws_cold_s']:.2f} s "
                      f"(target < {TARGETS['ws_cold_s']} s; CPU {m['ws_cold_cpu_s']:.2f} s), again {m['ws_warm_s']:.2f} s")
                print(f"  workspace, {a.more} recipes ({m['ws_more_raised']:.0f} raised): cold {m['ws_more_cold_s']:.2f} s, "
                      f"again {m['ws_more_warm_s']:.2f} s; per extra recipe {m['per_recipe_ms']:.0f} ms (target < "
                      f"{TARGETS['per_recipe_ms']:.0f} ms; CPU {m['per_recipe_cpu_ms']:.0f} ms)")
            if "accept_s" in m:
                print(f"  workspace, accept of the world value (rung 1, held: {m['accept_held']:.0f}, flows run: "
                      f"{m['accept_flows']:.0f}): {m['accept_s']:.2f} s (target < 0.5 s + the flows that run)")
        print("same output (digests of outcomes, drafts and proposals, every run and code): "
              + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
