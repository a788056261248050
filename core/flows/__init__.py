"""Built-in runner for kitsoki flow fixtures: a documented subset, fail closed.

`run_flows(workspace)` finds the fixtures (`<story>/flows/*.yaml` of every story plus
`<workspace>/flows/*.yaml`, or a glob), runs a story's own fixtures against that story (as
kitsoki does, whatever their `app:` says) and the others against the story their `app:` names,
and returns kitsoki's report (`FlowReport`, the `kitsoki test flows --json` shape);
`run_app_flows(app.yaml)` is `kitsoki test flows <app.yaml>`;
`format_text` prints it as kitsoki does. Nothing here raises for what the files contain: a
workspace that does not load, a fixture that does not parse, a feature the subset does not
implement — each is a failed flow with a message a person can act on. Zero fixtures is a
report with no results, which `FlowReport.green` (and every gate) treats as red.

The boxes: fixtures (reading flow files), app (the story as the runner sees it), expressions
(kitsoki's expr-lang), machine (one turn), decisions (where an emit chain rests for a human),
hosts (stubs, cassettes, dispatch), builtins (kitsoki's builtin handlers a `host_bindings` flow
reaches), starlark (host.starlark.run and its interpreter), orchestrator (the host-dispatching
session), jobs and clock (background jobs, fake time, timeouts), views and pongo (what a turn
shows), ids (the ids kitsoki draws), runner (one fixture, both paths, every assertion), report,
conformance (kitsoki's own CI flows).
"""

from __future__ import annotations

import glob as globlib
import os
from pathlib import Path

from core.flows.fixtures import UNSUPPORTED, FixtureFile, FlowFixture, load_fixture_file, unsupported
from core.flows.report import (
    NO_FIXTURES,
    SESSION_TURN,
    FlowReport,
    FlowResult,
    TurnResult,
    format_text,
)
from core.flows.values import go_quote
from core.flows.workdir import running_in
from core.kitsoki.config import CONFIG_FILE, ConfigIssue
from core.kitsoki.story import Story, WorkspaceError, load_story, load_workspace
from core.quiet import fewer_collections

__all__ = [
    "NO_FIXTURES",
    "UNSUPPORTED",
    "FlowReport",
    "FlowResult",
    "TurnResult",
    "discover_fixtures",
    "format_text",
    "run_app_flows",
    "run_fixture_file",
    "run_story_flows",
    "run_flows",
]

FLOWS_DIR = "flows"


@fewer_collections()
def run_flows(workspace: Path, glob: str | None = None) -> FlowReport:
    """Run the workspace's flow fixtures (or those `glob`, relative to the workspace, matches)."""
    workspace = Path(workspace)
    try:
        loaded = load_workspace(workspace)
    except WorkspaceError as exc:
        return FlowReport.of([_failed(CONFIG_FILE, [_issue_text(workspace, issue) for issue in exc.issues])])
    stories = _Stories(workspace, loaded.stories)
    results: list[FlowResult] = []
    # A story refused at load still has its flows: each fails with why it does not load.
    with running_in(workspace):
        for path in discover_fixtures(workspace, loaded.stories, glob, [r.app.parent for r in loaded.refused]):
            results.extend(_run_file(path, workspace, stories))
    return FlowReport.of(results)


@fewer_collections()
def run_app_flows(app_yaml: Path, workspace: Path | None = None, glob: str | None = None) -> FlowReport:
    """kitsoki's `test flows <app.yaml>`: the story's flows/*.yaml (or `glob`, relative to the
    story folder), every document run against that story whatever its `app:` says."""
    app_yaml = Path(app_yaml)
    root = Path(workspace) if workspace is not None else app_yaml.parent
    stories = _Stories(root, [])
    story, problems = stories.load(_normal(app_yaml), go_quote(str(app_yaml)))
    pattern = glob or f"{FLOWS_DIR}/*.yaml"
    pattern = pattern if os.path.isabs(pattern) else str(app_yaml.parent / pattern)
    results: list[FlowResult] = []
    # Without a workspace this is `kitsoki test flows <app.yaml>` where the person stands: their cwd.
    with running_in(workspace):
        for path in (Path(match) for match in sorted(globlib.glob(pattern, recursive=True))):
            if path.is_file():
                results.extend(_run_file(path, root, stories, story=story, story_problems=problems))
    return FlowReport.of(results)


@fewer_collections()
def run_story_flows(story: Story, glob: str, workspace: Path) -> FlowReport:
    """The fixtures `glob` (relative to the workspace) matches, every document run against `story`:
    the project's root flows against the synthesized root instance, as the kitsoki gate runs them
    against the root written out as `kitsoki materialize` emits it."""
    stories = _Stories(Path(workspace), [])
    pattern = glob if os.path.isabs(glob) else str(Path(workspace) / glob)
    results: list[FlowResult] = []
    with running_in(workspace):
        for path in (Path(match) for match in sorted(globlib.glob(pattern, recursive=True))):
            if path.is_file():
                results.extend(_run_file(path, Path(workspace), stories, story=story))
    return FlowReport.of(results)


def run_fixture_file(path: Path, workspace: Path | None = None) -> list[FlowResult]:
    """Run every document of one fixture file; `app:` is resolved against the file.

    With a workspace the story must lie inside it, and `File` is workspace-relative.
    """
    path = Path(path)
    root = Path(workspace) if workspace is not None else None
    with running_in(root):
        return _run_file(path, root, _Stories(root, []))


def discover_fixtures(workspace: Path, stories: list[Story], glob: str | None = None,
                      refused_dirs: list[Path] = ()) -> list[Path]:
    """Fixture files in run order: the glob's matches (sorted), or each story's flows/*.yaml
    (those of `refused_dirs`, stories that do not load, too) then the workspace's flows/*.yaml,
    each file once."""
    workspace = Path(workspace)
    if glob is not None:
        pattern = glob if os.path.isabs(glob) else str(workspace / glob)
        candidates = [Path(match) for match in sorted(globlib.glob(pattern, recursive=True))]
    else:
        candidates = []
        for folder in [story.dir for story in stories] + list(refused_dirs):
            candidates.extend(Path(match) for match in sorted(globlib.glob(str(folder / FLOWS_DIR / "*.yaml"))))
        candidates.extend(Path(match) for match in sorted(globlib.glob(str(workspace / FLOWS_DIR / "*.yaml"))))
    seen: set[Path] = set()
    found = []
    for candidate in candidates:
        key = _normal(candidate)
        if key not in seen and candidate.is_file():
            seen.add(key)
            found.append(candidate)
    return found


# --- internals --------------------------------------------------------------------------------


def _normal(path: Path) -> Path:
    return Path(os.path.normpath(Path(path).absolute()))


def _inside(path: Path, root: Path) -> bool:
    try:
        _normal(path).relative_to(_normal(root))
    except ValueError:
        return False
    return True


def _display(path: Path, workspace: Path | None) -> str:
    if workspace is not None and _inside(path, workspace):
        return _normal(path).relative_to(_normal(workspace)).as_posix()
    return str(path)


def _issue_text(workspace: Path, issue: ConfigIssue) -> str:
    where = f"{_display(Path(issue.file), workspace)}:{issue.line}:{issue.column}"
    return f"{where}: {issue.key}: {issue.message}" if issue.key else f"{where}: {issue.message}"


def _failed(file: str, failures: list[str]) -> FlowResult:
    return FlowResult(File=file, Passed=False, Turns=[TurnResult(TurnIndex=SESSION_TURN, Passed=False,
                                                                 Failures=failures)])


class _Stories:
    """The stories fixtures may name: the workspace's, loaded once, plus any app loaded on demand."""

    def __init__(self, workspace: Path | None, stories: list[Story]) -> None:
        self.workspace = workspace
        self.known: dict[Path, Story | list[str]] = {_normal(story.path): story for story in stories}
        self.routers: dict = {}

    def for_fixture(self, fixture: FlowFixture) -> tuple[Story | None, list[str]]:
        home = _normal(fixture.file.parent.parent / "app.yaml")
        if fixture.file.parent.name == FLOWS_DIR and home in self.known:
            # A story's own flows/ run against it, as `kitsoki test flows <app.yaml>` runs them
            # (kitsoki ignores `app:`).
            return self.load(home, "(the story's app.yaml)")
        if fixture.app:
            app = _normal(fixture.file.parent / fixture.app)
            shown = go_quote(fixture.app)
        else:
            # No app: the fixture must sit in a story's flows/ folder.
            if fixture.file.parent.name != FLOWS_DIR:
                return None, ["app: not set, and the fixture is not in a story's flows/ folder"]
            app = _normal(fixture.file.parent.parent / "app.yaml")
            shown = "(the story's app.yaml)"
        if self.workspace is not None and not _inside(app, self.workspace):
            return None, [f"app: {shown} resolves outside the workspace ({app})"]
        return self.load(app, shown)

    def load(self, app: Path, shown: str) -> tuple[Story | None, list[str]]:
        if app not in self.known:
            if not app.is_file():
                self.known[app] = [f"app: {shown} does not exist ({_display(app, self.workspace)})"]
            else:
                try:
                    self.known[app] = load_story(app, self.workspace)
                except WorkspaceError as exc:
                    root = self.workspace or app.parent
                    if exc.issues and all(_WILDCARD_ISSUE in issue.message for issue in exc.issues):
                        self.known[app] = [unsupported('on: "*" (needs the loader)')]
                    else:
                        self.known[app] = ([f"app: {shown} does not load:"]
                                           + [_issue_text(root, i) for i in exc.issues])
        story = self.known[app]
        return (story, []) if isinstance(story, Story) else (None, list(story))



_WILDCARD_ISSUE = 'transition on "*"'
"""The current loader refuses `on: "*"`, which kitsoki allows (the loader issue folds it in)."""


def _run_file(path: Path, workspace: Path | None, stories: _Stories, story: Story | None = None,
              story_problems: list[str] | None = None) -> list[FlowResult]:
    from core.flows.runner import run_fixture  # here: `core.flows.yaml12` alone must not load the runner

    shown = _display(path, workspace)
    loaded: FixtureFile = load_fixture_file(path)
    if loaded.problem is not None:
        return [_failed(shown, [loaded.problem])]
    results = []
    for fixture in loaded.fixtures:
        if fixture.skipped:
            continue
        if fixture.problems:
            results.append(_failed(shown, list(fixture.problems)))
            continue
        if story is not None or story_problems:
            target, problems = story, list(story_problems or [])
        else:
            target, problems = stories.for_fixture(fixture)
        if target is None:
            results.append(_failed(shown, problems))
            continue
        results.append(run_fixture(fixture, target, shown, stories.routers))
    return results
