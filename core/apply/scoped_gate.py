"""The flow gate of one accept: run exactly the flows of the apps the change reaches, and say what ran.

`scoped_gate(settings, changed, before)` is the Gate an accept runs after its delta is written: it
loads the tree after the edit, asks core.apply.gate_scope which apps the change reaches, runs each
app's flows (kitsoki: one `kitsoki test flows` call per app, several at once up to the number of
cores; built-in: core.flows in process, one app after another, since the runner is CPU-bound
Python), and folds the per-app answers into one GateResult:

- an app that failed, or could not run (exit 2, timeout, no or bad report): red, the change is
  reverted. With `fail_fast` the apps not started yet are reported as not run.
- otherwise green means every flow in scope ran and passed. A flow that did not run (beyond the
  built-in runner, skipped by kitsoki) holds the change, naming each such flow and why: the flow
  that did not run may be the one that would fail (a negated guard in fix-tests was "1/1 pass,
  4 not run" where kitsoki fails 1 of 5). With the built-in runner, the apps holding such flows are
  run again with the real kitsoki when its binary is there (`miner.flow_gate.kitsoki`, on PATH);
  its verdict stands for them.
- no flow ran: held. When no flow exercises the change at all (no fixture in scope, or only files
  without a flow document: kitsoki's `Results: null`), `miner.ungated: allow` keeps it after the
  structural checks (core.apply.gate_checks) with `gated: false`. When flows exist but none could
  run here (every one skipped, or beyond the built-in runner), it is held whatever `ungated` says:
  the flows that would judge it exist, and keeping the change unjudged could keep a regression.

The root flows (`flows/*.yaml` beside `.kitsoki.yaml`) run against the synthesized root: for the
kitsoki gate it is written, as `kitsoki materialize` would emit it, to a temp folder outside the
workspace and passed as the app.

`gate_preview` says, before an accept, what this will run, from the same scope on the tree the
accept would produce (the staged bytes standing in for the live files).
"""

from __future__ import annotations

import contextvars
import fnmatch
import os
import shlex
import tempfile
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import yaml

from core.apply.gate_checks import structural_checks
from core.apply.gate_scope import AppInScope, GateScope, compute_scope
from core.apply.gates import (
    ROOT_APP,
    UNSUPPORTED_PREFIX,
    FlowRun,
    Gate,
    GatePreview,
    GateResult,
    GateSettings,
    _never_raises,
    _red,
    builtin_gate,
    kitsoki_gate,
    loaded_after_edit,
    resolved_kind,
)
from core.kitsoki.imports import find_repo_root
from core.kitsoki.model import Workspace

STOPPED = "not started: an earlier app was red (miner.flow_gate.fail_fast)"


def kitsoki_repo_for(workspace: Path, settings: GateSettings, model: Workspace | None = None) -> str | None:
    """What `--kitsoki-repo` is given: the checkout our loader read `@kitsoki/dev-story` from
    (core.kitsoki.workspace.workspace_sources: the setting, else $KITSOKI_REPO, else ~/.kitsoki/repo,
    else a kitsoki checkout around the workspace), passed explicitly so kitsoki reads the same one
    whatever it has since written to ~/.kitsoki/repo; None when our loader used the summary we
    carry (kitsoki then uses its embedded library)."""
    from core.kitsoki.workspace import workspace_sources

    if settings.kitsoki_repo:
        repo = Path(settings.kitsoki_repo)
        return str(repo if repo.is_absolute() else Path(workspace) / repo)
    sources = workspace_sources(Path(workspace), model.config if model is not None else None)
    if sources.kitsoki_repo is not None:
        return str(sources.kitsoki_repo)
    root = find_repo_root(Path(workspace))
    return str(root) if root is not None else None


def root_app_yaml(model: Workspace) -> str:
    """The synthesized root as an app.yaml, in the shape `kitsoki materialize` emits (one import of
    dev-story with the overrides' bindings and world, the instance-level agent plugin and routing
    model kitsoki gives it)."""
    from core.kitsoki.build import plain
    from core.kitsoki.workspace import synthesize_root

    definition = plain(synthesize_root(Path(model.path), model.config))
    document: dict[str, Any] = {
        "app": definition["app"],
        "agent_plugins": {"agent.local_llm": {"plugin": "builtin.local_llm", "model": "qwen2.5-1.5b-instruct",
                                              "grammar": True}},
        "routing": {"embedding": {"model": "nomic-embed-text-v1.5"}},
        "hosts": list(definition["hosts"]),
        "imports": definition["imports"],
    }
    for key in ("world", "intents"):
        if definition.get(key):
            document[key] = definition[key]
    document["root"] = definition["root"]
    return "# The synthesized project root, written by kitsoki-miner's flow gate for its root flows.\n" + \
        yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def _not_run(app: AppInScope, why: str) -> FlowRun:
    return FlowRun(app=app.app, why=app.why, flows=app.flows, status="not run",
                   not_run=[f"{file}: {why}" for file in app.files], summary=f"{app.app}: {why}")


def _run_kitsoki(workspace: Path, model: Workspace, scope: GateScope, targets: list[AppInScope],
                 settings: GateSettings) -> list[tuple[FlowRun, list[str]]]:
    repo = kitsoki_repo_for(workspace, settings, model)
    jobs = max(1, min(len(targets), settings.jobs or os.cpu_count() or 1, os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(prefix="kitsoki-miner-root-") as tmp:
        def gate_for(app: AppInScope) -> Gate:
            path = app.path
            if app.app == ROOT_APP:
                path = Path(tmp) / "app.yaml"
                path.write_text(root_app_yaml(model), encoding="utf-8")
            return kitsoki_gate(path, app.flows, settings.timeout_s, settings.kitsoki, kitsoki_repo=repo,
                                fail_fast=settings.fail_fast, allow_missing_recording=settings.allow_missing_recording,
                                app_label=app.app)

        results: dict[int, GateResult] = {}
        pending = list(enumerate(targets))
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="kitsoki-miner-gate") as pool:
            running: dict[Future, int] = {}
            red = False
            while pending or running:
                while pending and len(running) < jobs and not (red and settings.fail_fast):
                    index, app = pending.pop(0)
                    context = contextvars.copy_context()  # the apply journal's spawn listener rides along
                    running[pool.submit(context.run, gate_for(app), workspace)] = index
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    index = running.pop(future)
                    results[index] = future.result()
                    red = red or not (results[index].green or results[index].held)
    runs = []
    for index, app in enumerate(targets):
        if index in results:
            run = results[index].runs[0] if results[index].runs else FlowRun(
                app=app.app, flows=app.flows, status="error", summary=results[index].summary)
            runs.append((run.model_copy(update={"why": app.why, "flows": app.flows,
                                                "duration_s": results[index].duration_s}), results[index].failures))
        else:
            runs.append((_not_run(app, STOPPED), []))
    return runs


def _run_builtin(workspace: Path, targets: list[AppInScope], settings: GateSettings,
                 model: Workspace | None = None) -> list[tuple[FlowRun, list[str]]]:
    runs = []
    red = False
    for app in targets:
        if red and settings.fail_fast:
            runs.append((_not_run(app, STOPPED), []))
            continue
        if app.app == ROOT_APP:
            root = model.root_instance if model is not None else None
            if root is None or root.open_world:  # dev-story from our summary: its rooms are not known here
                runs.append((_not_run(app, f"{UNSUPPORTED_PREFIX}: a root flow needs dev-story's rooms, and only "
                                           "the summary of dev-story we carry is here (set KITSOKI_REPO to a kitsoki "
                                           "checkout, or run it with kitsoki)"), []))
                continue
            result = builtin_gate(app.flows, settings.timeout_s, app=app.app, label=app.app, story=root)(workspace)
        else:
            result = builtin_gate(app.flows, settings.timeout_s, app=app.app,
                                  label=app.app)(workspace)  # the gate is named "builtin" beside it
        run = result.runs[0] if result.runs else FlowRun(app=app.app, flows=app.flows, status="error",
                                                         summary=result.summary)
        runs.append((run.model_copy(update={"why": app.why, "duration_s": result.duration_s}), result.failures))
        red = red or run.status in ("failed", "error")
    return runs


def judge_scope(workspace: Path, model: Workspace, scope: GateScope, settings: GateSettings, changed: list[str],
                kind: str) -> GateResult:
    """Run the scope's flows and fold the answers (module docstring)."""
    targets = [app for app in scope.apps if app.files]
    idle = [FlowRun(app=app.app, why=app.why, flows=app.flows, status="not run",
                    summary=f"{app.app}: no fixture matches {app.flows}") for app in scope.apps if not app.files]
    ran = (_run_kitsoki(workspace, model, scope, targets, settings) if kind == "kitsoki"
           else _run_builtin(workspace, targets, settings, model)) if targets else []
    if kind == "builtin":
        ran = _kitsoki_for_what_builtin_cannot_run(workspace, model, scope, targets, ran, settings)
    order = {app.app: i for i, app in enumerate(scope.apps)}
    runs = sorted([run for run, _ in ran] + idle, key=lambda run: order.get(run.app, len(order)))
    details = [line for _, lines in ran for line in lines]
    common: dict[str, Any] = {"runs": runs, "skipped": scope.skipped, "unprovable": scope.unprovable}
    skipped_note = f"; not gated: {', '.join(scope.skipped)}" if scope.skipped else ""
    if scope.unprovable and runs:
        skipped_note += f"; not exercisable by a flow: {'; '.join(scope.unprovable)}"
    bad = [run for run in runs if run.status in ("failed", "error")]
    if bad:
        failures = details or [f"{run.app}: {run.summary}" for run in bad]
        return _red(kind, "; ".join(run.summary for run in bad) + _tally(runs) + skipped_note, failures, **common)
    not_run = [line for run in runs for line in run.not_run]
    if not_run and any(run.status == "passed" for run in runs):
        # Green would prove nothing about the flows that did not run: hold, naming them.
        passed = sum(len(run.passed) for run in runs)
        advice = _not_run_advice(kind, settings)
        shown = "; ".join(not_run[:5]) + (f"; and {len(not_run) - 5} more" if len(not_run) > 5 else "")
        return GateResult(green=False, gate=kind, held=True, gated=False,
                          would_exercise=[f"the {len(not_run)} flows in scope that did not run, run where they can "
                                          f"run{advice}"],
                          summary=f"held: {len(not_run)} of {len(not_run) + passed} flows in scope did not run, so a "
                                  f"green would not prove the change ({passed} passed){advice}: {shown}" + skipped_note,
                          **common)
    if any(run.status == "passed" for run in runs):
        ran = [run for run in runs if run.status == "passed"]
        return GateResult(green=True, gate=kind, summary="; ".join(run.summary for run in ran) + _tally(runs) + skipped_note,
                          **common)
    # No fixture in scope, or only files without a flow document (kitsoki's `Results: null`):
    # nothing exercises the change. Flows that exist but did not run are another matter (below).
    if all(run.status == "not run" and not run.not_run for run in runs):
        what = ", ".join(scope.root.entries()) if scope.root and scope.root.entries() else \
            ", ".join(changed) or "the change"
        would = scope.would_exercise or [f"a flow in {app.flows} ({app.why})" for app in scope.apps]
        nothing_can = "; ".join(scope.unprovable)
        if settings.ungated == "allow":
            passed, problems = structural_checks(model, changed)
            if problems:
                return _red(kind, "not gated (no flow exercises this change) and a structural check failed: "
                            + "; ".join(problems), problems, gated=False, would_exercise=would, checks=passed,
                            **common)
            return GateResult(green=True, gate=kind, gated=False, would_exercise=would, checks=passed,
                              summary=f"not gated: no flow {'can exercise' if nothing_can and not would else 'exercises'}"
                                      f" this change ({nothing_can if nothing_can and not would else what}); kept after the "
                                      f"structural checks (miner.ungated: allow): {'; '.join(passed)}" + skipped_note,
                              **common)
        if not would and nothing_can:
            return GateResult(green=False, gate=kind, held=True, gated=False,
                              summary=f"held: no flow can exercise this change under kitsoki's rules ({nothing_can}); "
                                      "set miner.ungated: allow to keep such changes after the structural checks"
                              + skipped_note, **common)
        return GateResult(green=False, gate=kind, held=True, gated=False, would_exercise=would,
                          summary=f"held: no flow exercises this change ({what}); it would be exercised by "
                                  f"{'; or '.join(would)} (or set miner.ungated: allow to keep such changes after "
                                  f"the structural checks)" + skipped_note, **common)
    reasons = sorted({line.split(": ", 1)[1] for run in runs for line in run.not_run if ": " in line})
    count = sum(len(run.not_run) for run in runs)
    advice = _not_run_advice(kind, settings)
    return GateResult(green=False, gate=kind, held=True, gated=False,
                      would_exercise=[f"the {count} flows in scope, run where they can run{advice}"],
                      summary=f"held: none of the {count} flows that exercise this change could run here"
                              f"{advice}: " + "; ".join(reasons[:5]) + skipped_note, **common)


def _not_run_advice(kind: str, settings: GateSettings) -> str:
    if kind != "builtin":
        return ""
    return (f" (the built-in runner cannot run them and kitsoki is not here: put `{settings.kitsoki}` on PATH or "
            "set miner.flow_gate.kitsoki to run them)")


def _kitsoki_available(settings: GateSettings) -> bool:
    import shutil

    return shutil.which(settings.kitsoki) is not None


def _kitsoki_for_what_builtin_cannot_run(workspace: Path, model: Workspace, scope: GateScope,
                                         targets: list[AppInScope], ran: list[tuple[FlowRun, list[str]]],
                                         settings: GateSettings) -> list[tuple[FlowRun, list[str]]]:
    """The built-in runner's answers, with each app that holds a flow it could not run (and no red
    flow of its own) run again with the real kitsoki when the binary is there."""
    if not _kitsoki_available(settings):
        return ran
    again = [i for i, (run, _) in enumerate(ran) if run.not_run and run.status not in ("failed", "error")
             and UNSUPPORTED_PREFIX in " ".join(run.not_run)]
    if not again:
        return ran
    redone = _run_kitsoki(workspace, model, scope, [targets[i] for i in again], settings)
    out = list(ran)
    for i, (run, lines) in zip(again, redone):
        note = "run with kitsoki: the built-in runner cannot run " + ("all of them" if not ran[i][0].passed else
                                                                      f"{len(ran[i][0].not_run)} of them")
        out[i] = (run.model_copy(update={"summary": f"{run.summary} ({note})"}), lines)
    return out


def _tally(runs: list[FlowRun]) -> str:
    not_run = sum(len(run.not_run) for run in runs)
    idle = [run.app for run in runs if run.status == "not run" and not run.not_run]
    parts = []
    if not_run:
        parts.append(f"{not_run} flows not run")
    if idle:
        parts.append(f"no fixture for {', '.join(idle)}")
    return f" ({'; '.join(parts)})" if parts else ""


def scoped_gate(settings: GateSettings, *, changed: list[str], before: dict[str, bytes | None] | None = None,
                apps: list[Path] | None = None) -> Gate:
    """The Gate of an accept changing `changed` (module docstring). `apps` gates exactly those
    app.yaml files (workspace-relative or absolute) instead of the scope of `changed`."""
    kind = resolved_kind(settings)

    def run(workspace: Path) -> GateResult:
        from core.kitsoki.story import load_workspace

        model = loaded_after_edit(workspace)  # the applier's reload, a moment ago: the same tree
        if not isinstance(model, Workspace) or Path(model.path) != Path(workspace):
            model = load_workspace(workspace)
        broken = model.newly_refused(None, [Path(workspace) / c for c in changed])
        if broken and apps is None:  # a story the change reads does not load: kitsoki would exit 2 on it
            lines = [f"{os.path.relpath(r.app, workspace)} does not load: {r.reason()}" for r in broken]
            return _red(kind, "; ".join(lines), lines,
                        runs=[FlowRun(app=os.path.relpath(r.app, workspace), status="error",
                                      summary=f"does not load: {r.reason()}") for r in broken])
        if apps is not None:
            scope = explicit_scope(workspace, apps, settings)
        else:
            scope = compute_scope(model, changed, settings, before)
        result = judge_scope(workspace, model, scope, settings, changed, kind)
        source = model.dev_story
        if source is not None:
            result.dev_story = f"{source.kind}: {source.path}" + (f" ({source.message})" if source.message else "")
            if kind == "kitsoki":
                repo = kitsoki_repo_for(workspace, settings, model)
                result.dev_story += f"; kitsoki ran with --kitsoki-repo {repo}" if repo else \
                    "; kitsoki used its embedded library"
        return result

    return _never_raises(kind, run)


def explicit_scope(workspace: Path, apps: list[Path], settings: GateSettings) -> GateScope:
    from core.apply.gate_scope import app_glob, matched

    scope = GateScope()
    for app in apps:
        path = app if Path(app).is_absolute() else Path(workspace) / app
        rel = os.path.relpath(path, workspace)
        glob = app_glob(settings, os.path.relpath(path.parent, workspace))
        scope.apps.append(AppInScope(app=rel, path=path, why="named", flows=glob, files=matched(workspace, glob)))
    return scope


def gate_preview(workspace: Path, settings: GateSettings, changed: list[str],
                 staged: dict[str, bytes] | None = None) -> GatePreview:
    """What an accept of a proposal changing `changed` (with these staged bytes) will run."""
    from core.kitsoki.story import load_workspace

    kind = resolved_kind(settings)
    if kind == "command":
        return GatePreview(kind="command", runs=[shlex.join(settings.command or [])])
    workspace = Path(workspace)
    before: dict[str, bytes | None] = {}
    for rel in changed:
        try:
            before[rel] = (workspace / rel).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            before[rel] = None
        except OSError:
            before[rel] = b""
    overlay = {str(Path(os.path.abspath(workspace / rel))): data for rel, data in (staged or {}).items()}
    model = load_workspace(workspace, overlay=overlay or None)
    scope = compute_scope(model, changed, settings, before)
    for app in scope.apps:  # a fixture the accept would add (the proposal's proof) runs with the rest
        for rel in staged or {}:
            if rel not in app.files and fnmatch.fnmatchcase(rel, app.flows) and rel.endswith((".yaml", ".yml")):
                app.files = sorted([*app.files, rel])
    apps = [f"{app.app} ({app.why}): {len(app.files)} flows" for app in scope.apps]
    if scope.exercised:
        note = None
        if kind == "builtin":
            note = ("a flow the built-in runner cannot run holds the change (never green)"
                    + (", unless kitsoki runs it" if _kitsoki_available(settings) else ""))
        return GatePreview(kind=kind, runs=scope.flow_files, note=note, apps=apps, skipped=scope.skipped)
    from core.proposals.wording import ungated_note

    allow = settings.ungated == "allow"
    return GatePreview(kind=kind, runs=[], note=ungated_note(allow), apps=apps, skipped=scope.skipped,
                       held=not allow, gated=False,
                       would_exercise=scope.would_exercise or ["a flow of the app it changes"])
