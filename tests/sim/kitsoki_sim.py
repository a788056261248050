#!/usr/bin/env python3
"""kitsoki_sim: a SIMULATION of the `kitsoki` binary's `test flows` command, for the gate tests.

It is not kitsoki. It is written from kitsoki's CLI contract (cmd/kitsoki/test_flows.go, main.go,
resolver.go and internal/testrunner/flows.go RunFlows / PrintFlowReport at commit 1f4abf0e,
reference/kitsoki-real.md §3) and reproduces what a caller can observe:

- `kitsoki [--kitsoki-repo R] test flows <app.yaml> [--flows GLOB] [--json FILE] [--fail-fast]
  [--allow-missing-recording] [--v] [--recording F] [--trace-out F] [--semantic-routing]`; flags
  may come anywhere, as `--f v` or `--f=v`. A wrong argument count or an unknown flag is a cobra
  usage error: "Error: ..." and the usage on stderr, exit 1.
- `--kitsoki-repo` is made absolute and exported as KITSOKI_REPO; `@kitsoki/<name>` imports of the
  app then resolve to $KITSOKI_REPO/stories/<name>/app.yaml (missing: a load error), else to the
  embedded library (always there).
- the default glob is `<app dir>/flows/*.yaml` when that folder exists, else `flows/*.yaml` when
  ./flows exists, else `<app without .yaml>-flows/*.yaml`.
- a fatal error (the app does not load: no app.id, an @kitsoki/ import missing from KITSOKI_REPO,
  a `host.agent.task` whose `with:` lacks acceptance.schema; a bad glob, no file matched, a fixture
  that does not parse, a recording miss without --allow-missing-recording) prints
  `kitsoki test flows: <err>` on stderr, writes no JSON and exits 2.
- each matched file is split on "\\n---"; documents whose test_kind is not `flow` are skipped; files
  but no flow document give `"Results": null` and exit 0.
- the report is `{Results, Passed, Failed}` with Go's field names, indented by two spaces, no
  trailing newline; Skipped results count in neither total; the text report is PrintFlowReport's;
  exit 1 when Failed > 0; --fail-fast stops after the first file with a failure.

What the real binary computes by running the state machine, the simulation is told per fixture
file by KITSOKI_SIM_OUTCOMES, a JSON object {fnmatch pattern (on the path as matched, or its base
name): outcome}, first match wins, default "pass":
  pass | fail | recording-miss (Skipped with --allow-missing-recording, else fatal) | fatal |
  hang (sleeps until killed) | judge (the verdict of kitsoki-miner's built-in runner, core.flows:
  faithful only for flows that runner supports).
KITSOKI_SIM_BROKEN simulates a binary that breaks the contract, for the gate's fail-closed checks:
no-json (ignores --json: exits as usual, writes no report), garbled (writes half a report),
exit1-green (exits 1 with a report that has no failure).
Each call is appended to $KITSOKI_SIM_LOG as a JSON line {argv, cwd, kitsoki_repo, app, glob, app_text}.
"""

from __future__ import annotations

import fnmatch
import glob as globlib
import json
import os
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
USAGE = """Usage:
  kitsoki test flows <app.yaml> [flags]

Flags:
      --allow-missing-recording   treat recording misses as skips rather than failures
      --fail-fast                 stop at first flow failure
      --flows string              glob for flow fixture files (default: <app-dir>/flows/*.yaml)
  -h, --help                      help for flows
      --json string               write JSON report to this file
      --recording string          override the recording path declared in fixture files
      --trace-out string          write the run's authoritative JSONL trace to this path
      --v                         verbose per-turn output
"""
STRING_FLAGS = {"flows", "json", "recording", "trace-out", "kitsoki-repo"}
BOOL_FLAGS = {"fail-fast", "v", "allow-missing-recording", "semantic-routing"}


class Fatal(Exception):
    pass


def usage_error(message: str) -> None:
    sys.stderr.write(f"Error: {message}\n{USAGE}\n")
    sys.exit(1)


def parse(argv: list[str]) -> tuple[list[str], dict]:
    args: list[str] = []
    flags: dict = {}
    i = 0
    while i < len(argv):
        item = argv[i]
        if item == "--":
            args.extend(argv[i + 1:])
            break
        if item.startswith("--"):
            name, eq, value = item[2:].partition("=")
            if name in STRING_FLAGS:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        usage_error(f"flag needs an argument: --{name}")
                    value = argv[i]
                flags[name] = value
            elif name in BOOL_FLAGS:
                flags[name] = (value or "true") == "true"
            else:
                usage_error(f"unknown flag: --{name}")
        else:
            args.append(item)
        i += 1
    return args, flags


def default_glob(app: str) -> str:
    app_dir = os.path.dirname(app)
    if os.path.isdir(os.path.join(app_dir, "flows")):
        return os.path.join(app_dir, "flows", "*.yaml")
    if os.path.isdir("flows"):
        return os.path.join("flows", "*.yaml")
    return os.path.splitext(app)[0] + "-flows/*.yaml"


def load_app(app: str) -> None:
    try:
        text = Path(app).read_text(encoding="utf-8")
    except OSError as exc:
        raise Fatal(f'load app "{app}": load {app}: open {app}: {exc.strerror.lower()}') from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise Fatal(f'load app "{app}": {exc}') from None
    if not isinstance(document, dict) or not isinstance(document.get("app"), dict) or not document["app"].get("id"):
        raise Fatal(f'load app "{app}": app.id is required')
    # One of kitsoki's load-time checks, for the gate's "a change kitsoki cannot load" cases
    # (internal/app/loader.go:2084-2098): host.agent.task with a `with:` and no acceptance.schema.
    for name, state in _states(document.get("states")):
        for index, effect in enumerate(state.get("on_enter") or []):
            if isinstance(effect, dict) and effect.get("invoke") == "host.agent.task" and isinstance(effect.get("with"), dict):
                schema = (effect["with"].get("acceptance") or {}).get("schema") if isinstance(
                    effect["with"].get("acceptance"), dict) else None
                if not isinstance(schema, str) or not schema.strip():
                    raise Fatal(f'load app "{app}": {app}: state "{name}" on_enter[{index}]: host.agent.task requires '
                                "acceptance.schema to be set in the with: block")
    repo = os.environ.get("KITSOKI_REPO", "")
    for alias, spec in (document.get("imports") or {}).items():
        source = spec.get("source", "") if isinstance(spec, dict) else ""
        if source.startswith("@kitsoki/") and repo:
            name = source[len("@kitsoki/"):]
            candidate = os.path.join(repo, "stories", name, "app.yaml")
            if not os.path.exists(candidate):
                raise Fatal(f'load app "{app}": import {alias}: KITSOKI_REPO={repo}: story "{name}" not found '
                            f"(looked for {candidate})")


def _states(states, prefix: str = ""):
    for name, state in (states or {}).items() if isinstance(states, dict) else ():
        if isinstance(state, dict):
            path = f"{prefix}.{name}" if prefix else name
            yield path, state
            yield from _states(state.get("states"), path)


def outcome_of(path: str) -> str:
    table = json.loads(os.environ.get("KITSOKI_SIM_OUTCOMES") or "{}")
    for pattern, outcome in table.items():
        if fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(os.path.basename(path), pattern):
            return outcome
    return "pass"


def judged(path: str, index: int) -> tuple[bool, list[dict]]:
    """The built-in runner's verdict on the index-th flow document of `path`, turn by turn."""
    sys.path.insert(0, str(REPO))
    from core.flows import run_fixture_file

    results = run_fixture_file(Path(path))
    if index >= len(results):
        return False, [{"TurnIndex": -1, "Passed": False, "NewState": "", "View": "", "Events": None,
                        "Failures": ["kitsoki_sim: the built-in runner found no such flow document"]}]
    result = results[index]
    return result.Passed, [{"TurnIndex": t.TurnIndex, "Passed": t.Passed, "Failures": t.Failures or None,
                            "NewState": t.NewState, "View": "", "Events": None} for t in result.Turns]


def run_file(path: str, flags: dict) -> list[dict]:
    data = Path(path).read_text(encoding="utf-8", errors="replace")
    results = []
    flow_index = 0
    for doc in data.split("\n---"):
        doc = doc.strip()
        if not doc:
            continue
        try:
            fixture = yaml.safe_load(doc)
        except yaml.YAMLError as exc:
            raise Fatal(f'run flow "{path}": parse fixture in "{path}": {exc}') from None
        if not isinstance(fixture, dict) or fixture.get("test_kind") != "flow":
            continue
        turns = fixture.get("turns") or []
        outcome = outcome_of(path)
        if outcome == "hang":
            time.sleep(3600)
        if outcome == "fatal":
            raise Fatal(f'run flow "{path}": fixture in "{path}": host_cassette and host_handlers are mutually exclusive')
        if outcome == "recording-miss":
            if flags.get("allow-missing-recording"):
                results.append({"File": path, "Passed": False, "Turns": None, "Skipped": True})
                flow_index += 1
                continue
            raise Fatal(f'run flow "{path}": load recording "{path}.recording.jsonl": no such file or directory')
        if outcome == "judge":
            passed, rows = judged(path, flow_index)
            results.append({"File": path, "Passed": passed, "Turns": rows, "Skipped": False})
            flow_index += 1
            continue
        passed, failures = outcome != "fail", ([] if outcome != "fail" else ["kitsoki_sim: simulated failure"])
        rows = []
        for i, turn in enumerate(turns):
            last = i == len(turns) - 1
            ok = passed or not last
            state = turn.get("expect_state", "") if isinstance(turn, dict) else ""
            rows.append({"TurnIndex": i, "Passed": ok, "Failures": None if ok else failures, "NewState": state,
                         "View": "", "Events": None})
        if not passed and not rows:
            rows.append({"TurnIndex": -1, "Passed": False, "Failures": failures, "NewState": "", "View": "",
                         "Events": None})
        results.append({"File": path, "Passed": passed, "Turns": rows, "Skipped": False})
        flow_index += 1
    return results


def print_report(report: dict) -> None:
    lines = []
    for r in report["Results"] or []:
        status = "SKIP" if r["Skipped"] else "PASS" if r["Passed"] else "FAIL"
        lines.append(f"{status:<6}  {os.path.basename(r['File'])}")
        for t in r["Turns"] or []:
            mark = "  ok  " if t["Passed"] else "  FAIL"
            lines.append(f"  {mark}  [session]" if t["TurnIndex"] < 0 else f"  {mark}  turn {t['TurnIndex'] + 1} → {t['NewState']}")
            lines.extend(f"      ✗ {f}" for f in t["Failures"] or [])
    if lines:
        print("\n".join(lines))
    print(f"\nSummary: {report['Passed']}/{report['Passed'] + report['Failed']} flows pass")
    print("FAIL" if report["Failed"] else "PASS")


def install(bindir: Path) -> Path:
    """Put this simulation on a PATH folder as `kitsoki` (run with the current interpreter)."""
    bindir.mkdir(parents=True, exist_ok=True)
    exe = bindir / "kitsoki"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
    exe.chmod(0o755)
    return exe


def main(argv: list[str]) -> int:
    args, flags = parse(argv)
    if "kitsoki-repo" in flags:
        os.environ["KITSOKI_REPO"] = os.path.abspath(flags["kitsoki-repo"])
    if args[:2] != ["test", "flows"]:
        usage_error(f"unknown command {' '.join(args[:2])!r} for the kitsoki simulation")
    if len(args) != 3:
        usage_error(f"accepts 1 arg(s), received {len(args) - 2}")
    app = args[2]
    glob = flags.get("flows") or default_glob(app)
    log = os.environ.get("KITSOKI_SIM_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            try:
                app_text = Path(app).read_text(encoding="utf-8")[:8000]
            except OSError:
                app_text = None
            fh.write(json.dumps({"argv": argv, "cwd": os.getcwd(), "kitsoki_repo": os.environ.get("KITSOKI_REPO"),
                                 "app": app, "glob": glob, "app_text": app_text}) + "\n")
    try:
        load_app(app)
        files = sorted(globlib.glob(glob))
        if not files:
            raise Fatal(f'no flow fixtures matched "{glob}"')
        report: dict = {"Results": None, "Passed": 0, "Failed": 0}
        for path in files:
            results = run_file(path, flags)
            if results:
                report["Results"] = (report["Results"] or []) + results
            for r in results:
                if not r["Skipped"]:
                    report["Passed" if r["Passed"] else "Failed"] += 1
            if flags.get("fail-fast") and report["Failed"]:
                break
        broken = os.environ.get("KITSOKI_SIM_BROKEN", "")
        if flags.get("json") and broken != "no-json":
            text = json.dumps(report, indent=2, ensure_ascii=False)
            try:
                Path(flags["json"]).write_text(text[: len(text) // 2] if broken == "garbled" else text, encoding="utf-8")
            except OSError as exc:
                raise Fatal(f"write JSON report: {exc}") from None
        if broken == "exit1-green":
            print_report(report)
            return 1
    except Fatal as exc:
        sys.stderr.write(f"kitsoki test flows: {exc}\n")
        return 2
    print_report(report)
    return 1 if report["Failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
