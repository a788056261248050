"""Which sessions belong to a workspace (core/transcripts/scope.py) and what a pass does with the others:
left out and counted through `--dir`, `mining.transcript_dirs` and default discovery alike; read on
purpose only with the opt-in, and then only for suggestions; a change of scope neither loses nor
double-counts (issue 23 item 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from builders import prompt, tool_result, tool_use, uid
from conftest import jsonl
from core.kitsoki.config import ConfigError, load_config
from core.mining.passes import run_pass
from core.mining.watermark import kitsoki_slug, load_state
from core.proposals.proposer import run_proposer
from core.sidecar import WorkspaceSidecar
from core.transcripts.discover import claude_slug, discover
from core.transcripts.scope import checkouts, split_by_scope, within, workspace_scope

REPO = Path(__file__).resolve().parent.parent


def test_inside_means_the_folder_or_below_never_a_sibling():
    assert within("/home/u/app", "/home/u/app") and within("/home/u/app/src/x", "/home/u/app")
    assert not within("/home/u/app-other", "/home/u/app") and not within("/home/u", "/home/u/app")
    assert within("/home/u/app/./src/../lib", "/home/u/app")
    assert within("c:\\Users\\Me\\App\\src", "C:/Users/me/app") and not within("C:\\Users\\me\\apps", "C:\\Users\\me\\app")
    assert not within("C:\\Users\\me\\app", "/Users/me/app")


def _git(*args, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo_with_worktrees(tmp_path) -> tuple[Path, Path, Path]:
    """A real repository (made by git) with a workspace in a subfolder, a linked worktree beside it
    and one under .claude/worktrees, and one removed by hand (its folder gone, git's record kept)."""
    main = tmp_path / "app"
    (main / "svc").mkdir(parents=True)
    (main / "svc" / ".kitsoki.yaml").write_text("mining:\n  enabled: true\n")
    _git("init", "-q", "-b", "main", cwd=main)
    _git("add", ".", cwd=main)
    _git("commit", "-qm", "init", cwd=main)
    _git("worktree", "add", "-q", "-b", "feature", str(tmp_path / "app-feature"), cwd=main)
    _git("worktree", "add", "-q", "-b", "agent", str(main / ".claude" / "worktrees" / "eloquent"), cwd=main)
    _git("worktree", "add", "-q", "-b", "gone", str(tmp_path / "app-gone"), cwd=main)
    subprocess.run(["rm", "-rf", str(tmp_path / "app-gone")], check=True)
    return main, main / "svc", tmp_path


def test_checkouts_are_what_git_worktree_list_says_read_from_the_files(repo_with_worktrees):
    main, ws, tmp = repo_with_worktrees
    listed = [Path(line.split(" ", 1)[1]) for line in _git("worktree", "list", "--porcelain", cwd=main).splitlines()
              if line.startswith("worktree ")]
    assert {p / "svc" for p in listed} | {ws} == set(checkouts(ws))
    assert tmp / "app-gone" / "svc" in checkouts(ws)  # a removed worktree's sessions are still the project's
    # From inside a linked worktree, the same family.
    assert set(checkouts(tmp / "app-feature" / "svc")) == set(checkouts(ws))
    assert checkouts(tmp) == [tmp]  # no repository: the folder alone


def _session(path: Path, cwd: str, ask: str, cmd: str, sid: str, *, ts: str = "2026-03-01T10:00:00.000Z") -> Path:
    a, b, c = uid(), uid(), uid()
    return jsonl(path, [prompt(a, None, ask, session=sid, cwd=cwd, ts=ts),
                        tool_use(b, a, f"m{sid}", f"t{sid}", "Bash", {"command": cmd}, session=sid, cwd=cwd, ts=ts),
                        tool_result(c, b, f"t{sid}", "ok", session=sid, cwd=cwd, ts=ts)])


def _history(home: Path, ws: Path, feature: Path) -> Path:
    """~/.claude/projects as Claude Code keeps it: this workspace, a folder inside it, its worktree,
    a sibling whose slug starts the same, and two strangers' JavaScript projects."""
    projects = home / ".claude" / "projects"
    places = {"own": ws, "inside": ws / "internal" / "api", "worktree": feature, "sibling": Path(f"{ws}-other"),
              "js1": home / "src" / "shop", "js2": home / "src" / "blog"}
    for i, (name, cwd) in enumerate(places.items()):
        js = name.startswith("js") or name == "sibling"
        for n in range(2):
            sid = f"{name}-{n}"
            _session(projects / claude_slug(cwd) / f"{sid}.jsonl", str(cwd),
                     "build it" if js else "build the service", "npm run build" if js else "go build ./...", sid,
                     ts=f"2026-03-0{i + 1}T1{n}:00:00.000Z")
    return projects


def _names(paths) -> list[str]:
    return sorted(Path(p).stem for p in paths)


def test_default_discovery_finds_the_workspace_its_subfolders_and_worktrees(repo_with_worktrees):
    main, ws, tmp = repo_with_worktrees
    _history(tmp / "home", ws, tmp / "app-feature" / "svc")
    units = discover(ws, home=tmp / "home", env={})
    assert _names(u.trunk for u in units) == ["inside-0", "inside-1", "own-0", "own-1", "worktree-0", "worktree-1"]
    done = subprocess.run([sys.executable, "-m", "server.cli", "sessions", "--repo", str(ws), "--json"],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "HOME": str(tmp / "home")})
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["sessions"]) == 6


@pytest.mark.parametrize("how", ["dir", "transcript_dirs", "default"])
def test_other_projects_are_left_out_and_counted_every_way(repo_with_worktrees, how):
    """Pointing at ~/.claude/projects (what a person tries when a pass reads nothing) mines this
    workspace only: the strangers' `npm run build` never becomes this project's build_cmd."""
    main, ws, tmp = repo_with_worktrees
    home = tmp / "home"
    projects = _history(home, ws, tmp / "app-feature" / "svc")
    if how == "transcript_dirs":
        (ws / ".kitsoki.yaml").write_text(f"mining:\n  enabled: true\n  transcript_dirs: [{json.dumps(str(projects))}]\n")
    args = ["mine", "--repo", str(ws), "--json", "--seed"] + (["--dir", str(projects)] if how == "dir" else [])
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["pass"]["sessions"] == 6
    # the sibling's and the strangers' (default discovery never lists the strangers' folders)
    assert result["pass"]["other_projects"] == (2 if how == "default" else 6)
    values = {r["value"] for r in result["recipes"] if r["kind"] == "world"}
    assert "go build ./..." in values and "npm run build" not in values
    text = subprocess.run([sys.executable, "-m", "server.cli", *[a for a in args if a != "--json"]],
                          capture_output=True, text=True, cwd=REPO, env=env).stdout
    assert f"other projects: {result['pass']['other_projects']} sessions left out" in text


def test_mine_status_says_why_nothing_was_read(tmp_path):
    """The status an editor shows: every session found belongs to another project, and what to do."""
    ws = tmp_path / "ws"
    ws.mkdir()
    d = tmp_path / "projects"
    _session(d / "-x" / "a.jsonl", "/home/dev/elsewhere", "build it", "npm run build", "a")
    (ws / ".kitsoki.yaml").write_text(f"mining:\n  enabled: true\n  transcript_dirs: [{json.dumps(str(d))}]\n")
    sidecar = WorkspaceSidecar(ws, watch=False, home=tmp_path / "no-home", env={}, workers=1)
    sidecar.start()
    try:
        sidecar.miner.run_now(timeout=30)
        status = sidecar.status()
        assert status.last_pass.sessions == 0 and status.last_pass.other_projects == 1
        assert "belong to other projects" in status.note and "mining.project_paths" in status.note
    finally:
        sidecar.stop()


def _mixed(tmp_path: Path) -> tuple[Path, Path]:
    """This project builds with go twice; two other projects regenerate their API client with npm
    three times (an ask this project made once)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    d = tmp_path / "t"
    for n in range(2):
        _session(d / f"own{n}.jsonl", str(ws), "build the service", "go build ./...", f"own{n}",
                 ts=f"2026-03-0{n + 1}T10:00:00.000Z")
    _session(d / "own2.jsonl", str(ws), "regenerate the api client", "npm run gen:client", "own2",
             ts="2026-03-03T09:00:00.000Z")
    for n in range(3):
        _session(d / f"js{n}.jsonl", f"/home/dev/js{n % 2}", "regenerate the api client", "npm run gen:client",
                 f"js{n}", ts=f"2026-03-0{n + 3}T10:00:00.000Z")
    return ws, d


def _world(recipes, value):
    return [r for r in recipes if r.kind == "world" and r.value == value]


def test_other_projects_on_purpose_feed_only_a_suggestion(tmp_path):
    ws, d = _mixed(tmp_path)
    (ws / ".kitsoki.yaml").write_text("mining:\n  enabled: true\n  other_projects: true\n")
    assert load_config(ws).mining.other_projects
    report, recipes = run_pass(ws, dirs=[d], home=tmp_path / "no-home", env={}, other_projects=True)
    assert report.sessions == 6 and report.other_projects == 3 and report.reads_other_projects
    [own] = _world(recipes, "go build ./...")
    assert not own.other_projects and own.sessions == 2
    npm = [r for r in recipes if r.other_projects]
    assert npm and all("npm run gen:client" in " ".join(r.action_signature) for r in npm)
    report = run_proposer(ws, recipes)
    raised = [o.recipe_id for o in report.outcomes if o.result == "raised"]
    assert {r.id for r in npm} <= set(raised)
    for recipe in npm:  # what other projects' evidence raises is a dev-story-enrich suggestion, never a change
        proposal = json.loads((ws / ".artifacts" / "mining" / recipe.id / "proposal.json").read_text())
        assert (proposal["kind"], proposal["rung"], proposal["suggestion_only"], proposal["files"]) == (
            "dev-story-enrich", 2, True, [])
        assert proposal["title"].startswith("Seen in other projects' sessions")
    assert "npm" not in (ws / ".kitsoki.yaml").read_text()


def test_the_opt_in_flag_matches_the_config_key(tmp_path):
    ws, d = _mixed(tmp_path)
    (ws / ".kitsoki.yaml").write_text("mining:\n  enabled: true\n")
    run = [sys.executable, "-m", "server.cli", "mine", "--repo", str(ws), "--dir", str(d), "--json"]
    env = {**os.environ, "HOME": str(tmp_path / "no-home")}
    off = json.loads(subprocess.run(run, capture_output=True, text=True, cwd=REPO, env=env, check=True).stdout)
    on = json.loads(subprocess.run(run + ["--other-projects", "--seed"], capture_output=True, text=True, cwd=REPO,
                                   env=env, check=True).stdout)
    assert (off["pass"]["sessions"], off["pass"]["other_projects"], off["pass"]["reads_other_projects"]) == (3, 3, False)
    assert (on["pass"]["sessions"], on["pass"]["reads_other_projects"]) == (6, True)
    assert not any(r["other_projects"] for r in off["recipes"]) and any(r["other_projects"] for r in on["recipes"])


@pytest.mark.parametrize("text,message", [
    ("  other_projects: maybe\n", "mining.other_projects: expected true or false"),
    ("  project_paths: [relative/app]\n", 'mining.project_paths[0]: "relative/app" is not an absolute path'),
    ("  project_paths: /home/dev/app\n", "mining.project_paths: expected a list of strings"),
])
def test_the_opt_in_and_project_paths_fail_fast(tmp_path, text, message):
    (tmp_path / ".kitsoki.yaml").write_text("mining:\n  enabled: true\n" + text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert f".kitsoki.yaml:3:" in str(caught.value) and message in str(caught.value)


def _own_and_other(state) -> tuple[list[str], list[str]]:
    return sorted(Path(p).stem for p in state.files), sorted(Path(p).stem for p in state.others)


def test_a_scope_change_neither_loses_nor_double_counts(tmp_path):
    ws, d = _mixed(tmp_path)
    kw = dict(dirs=[d], home=tmp_path / "no-home", env={})
    slug = kitsoki_slug(ws.resolve())
    # Own only: the others are remembered as others, not read.
    run_pass(ws, **kw)
    state = load_state(ws, slug)
    assert _own_and_other(state) == (["own0", "own1", "own2"], ["js0", "js1", "js2"])
    # Opted in: what was set aside is read now, though older than the watermark.
    report, recipes = run_pass(ws, other_projects=True, **kw)
    assert report.files_read == 3 and _own_and_other(load_state(ws, slug)) == (
        ["js0", "js1", "js2", "own0", "own1", "own2"], [])
    assert any(r.other_projects for r in recipes)
    # Again: nothing new, nothing read twice.
    report, again = run_pass(ws, other_projects=True, **kw)
    assert report.files_read == 0 and [r.id for r in again] == [r.id for r in recipes]
    # Opted out: the other projects' episodes leave, this project's stay, counted once.
    report, recipes = run_pass(ws, **kw)
    state = load_state(ws, slug)
    assert report.files_read == 0 and _own_and_other(state) == (["own0", "own1", "own2"], ["js0", "js1", "js2"])
    assert not any(r.other_projects for r in recipes) and sum(len(m.episodes) for m in state.files.values()) == 3
    [own] = _world(recipes, "go build ./...")
    assert own.sessions == 2


def test_a_worktree_added_later_brings_its_older_sessions(repo_with_worktrees):
    main, ws, tmp = repo_with_worktrees
    d = tmp / "t"
    _session(d / "own.jsonl", str(ws), "build the service", "go build ./...", "own")
    later = tmp / "app-later"
    _session(d / "old-worktree.jsonl", str(later / "svc"), "build the service", "go build ./...", "wt")
    os.utime(d / "old-worktree.jsonl", (1_600_000_000, 1_600_000_000))  # older than anything mined
    kw = dict(dirs=[d], home=tmp / "no-home", env={})
    report, _ = run_pass(ws, **kw)
    assert (report.sessions, report.other_projects) == (1, 1)
    _git("worktree", "add", "-q", "-b", "later", str(later), cwd=main)
    report, recipes = run_pass(ws, **kw)
    assert (report.trigger, report.files_read, report.other_projects) == ("live", 1, 0)
    assert _world(recipes, "go build ./...")[0].sessions == 2


def test_split_reads_only_the_first_lines_of_files_it_does_not_know(tmp_path):
    d = tmp_path / "t"
    _session(d / "a.jsonl", "/work/proj", "x", "make", "a")
    _session(d / "b.jsonl", "/elsewhere", "x", "make", "b")
    scope = workspace_scope("/work/proj")
    units = discover(None, [d])
    split = split_by_scope(units, scope)
    assert _names(u.trunk for u in split.kept) == ["a"] and _names(u.trunk for u in split.other) == ["b"]
    # what a state remembers is believed without reading (b said to be this project's)
    split = split_by_scope(units, scope, {str(d / "b.jsonl"): "/work/proj/sub"})
    assert _names(u.trunk for u in split.kept) == ["a", "b"]


def test_a_session_with_no_folder_belongs_by_the_folder_claude_code_named(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    projects = tmp_path / "home" / ".claude" / "projects"
    jsonl(projects / claude_slug(ws.resolve()) / "s.jsonl", [{"type": "summary", "summary": "x", "leafUuid": "u"}])
    jsonl(projects / (claude_slug(ws.resolve()) + "-other") / "t.jsonl", [{"type": "summary", "summary": "y",
                                                                           "leafUuid": "v"}])
    assert _names(u.trunk for u in discover(ws, home=tmp_path / "home", env={})) == ["s"]
