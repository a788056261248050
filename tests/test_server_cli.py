"""Command-line refusals that must be clear, with nothing written: `mine` outside a workspace (as
`proposals` and `accept` refuse), and path arguments no file system could hold (a 4,096-byte
path, a 300-byte name) refused by argparse naming the argument, never an OSError traceback."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import CLI, ROOT


def run(*args: str, cwd, home) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def tree(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("command", [["mine"], ["mine", "--json"], ["proposals"], ["propose"], ["accept", "abcd"]])
def test_commands_outside_a_workspace_refuse_the_same_way(tmp_path, command):
    here = tmp_path / "not-a-workspace"
    here.mkdir()
    done = run(*command, cwd=here, home=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "no .kitsoki.yaml here or above: pass --repo with a kitsoki workspace\n"
    assert "Traceback" not in done.stderr and tree(here) == [], "nothing written"


def test_mine_with_a_repo_that_is_no_workspace_names_it(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    done = run("mine", "--repo", str(folder), cwd=tmp_path, home=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"no .kitsoki.yaml in {folder}: pass --repo with a kitsoki workspace\n"
    assert tree(folder) == []


def test_mine_with_a_config_that_is_not_a_file_names_the_file(tmp_path):
    (tmp_path / "ws" / ".kitsoki.yaml").mkdir(parents=True)
    done = run("mine", "--repo", str(tmp_path / "ws"), cwd=tmp_path, home=tmp_path)
    assert done.returncode == 2 and ".kitsoki.yaml" in done.stderr and "Traceback" not in done.stderr
    assert tree(tmp_path / "ws") == [".kitsoki.yaml"]


LONG_PATH = "/tmp/" + "a" * 4091  # 4,096 bytes: one more than PATH_MAX allows
LONG_NAME = "/tmp/" + "n" * 300


@pytest.mark.parametrize(("args", "problem"), [
    (["mine", "--repo", LONG_PATH], "a path of 4096 bytes is longer than any file system allows"),
    (["mine", "--dir", LONG_PATH], "a path of 4096 bytes is longer than any file system allows"),
    (["mine", "--dir", LONG_NAME], "a path with a 300-byte name"),
    (["sessions", "--dir", LONG_PATH], "a path of 4096 bytes"),
    (["sessions", "--repo", LONG_NAME], "a path with a 300-byte name"),
    (["proposals", "--repo", LONG_PATH], "a path of 4096 bytes"),
    (["accept", "abcd", "--repo", LONG_NAME], "a path with a 300-byte name"),
    (["runs", "projects", "--dir", LONG_NAME], "a path with a 300-byte name"),
])
def test_paths_no_file_system_holds_are_refused_naming_the_argument(tmp_path, args, problem):
    done = run(*args, cwd=tmp_path, home=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"argument {args[args.index(next(a for a in args if a.startswith('--')))]}" in done.stderr
    assert problem in done.stderr and "Traceback" not in done.stderr
    assert tree(tmp_path) == []
