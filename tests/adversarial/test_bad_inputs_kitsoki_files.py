"""Planted kitsoki files: special files, dangling links, includes that leave the story, numbers that are not.

Pass rule for every case: loading the workspace refuses what was planted with a message naming the
planted file (and, for a value, its file:line:col), within the test's lifetime (a FIFO never blocks the
read), with no traceback and nothing written. A planted config raises a ConfigError / WorkspaceError; a
planted story file refuses that story alone (kitsoki's discovery skips a story that does not load).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.kitsoki.config import CONFIG_FILE, ConfigError, load_config
from core.kitsoki.story import WorkspaceError, load_workspace

pytestmark = pytest.mark.adversarial("bad-inputs")

APP = "app: { id: t }\nroot: a\nintents:\n  go: {}\ninclude: [rooms/*.yaml]\nstates:\n  a:\n    on:\n      go: [{ target: a }]\n"
ROOM = "states:\n  b: {}\n"


def workspace(root: Path) -> Path:
    (root / "stories" / "t" / "rooms").mkdir(parents=True)
    (root / CONFIG_FILE).write_text("story_dirs: [./stories]\n")
    (root / "stories" / "t" / "app.yaml").write_text(APP)
    (root / "stories" / "t" / "rooms" / "main.yaml").write_text(ROOM)
    return root


def refusal_text(root: Path) -> str:
    """What loading `root` refuses: the error, or the refused stories' reasons (the rest loads)."""
    try:
        model = load_workspace(root, env={})
    except WorkspaceError as exc:
        return str(exc)
    assert model.refused, "nothing was refused"
    return "\n".join(f"{issue.file}:{issue.line}:{issue.column}: {issue.message}"
                     for refusal in model.refused for issue in refusal.issues)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


SPECIAL = {"fifo": (_fifo, "named pipe (FIFO)"), "directory": (_directory, "directory")}


@pytest.mark.parametrize("kind", sorted(SPECIAL))
@pytest.mark.parametrize("where", [CONFIG_FILE, "stories/t/app.yaml", "stories/t/rooms/main.yaml"])
def test_a_special_file_where_a_kitsoki_file_belongs_is_refused_by_name(tmp_path, kind, where):
    root = workspace(tmp_path)
    target = root / where
    target.unlink()
    plant, words = SPECIAL[kind]
    plant(target)
    before = tree(root)
    text = refusal_text(root)
    assert str(target) in text and words in text
    assert tree(root) == before


def test_a_fifo_config_does_not_hang_a_fresh_process(tmp_path):
    root = workspace(tmp_path)
    (root / CONFIG_FILE).unlink()
    os.mkfifo(root / CONFIG_FILE)
    code = ("import sys; from pathlib import Path; from core.kitsoki.story import load_workspace, WorkspaceError\n"
            "try:\n    load_workspace(Path(sys.argv[1]), env={})\nexcept WorkspaceError as e:\n    print(e); sys.exit(3)\n")
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 3 and "named pipe (FIFO)" in done.stdout and "Traceback" not in done.stderr


def test_a_dangling_symlink_config_is_refused_never_read_as_defaults(tmp_path):
    root = workspace(tmp_path)
    (root / CONFIG_FILE).unlink()
    os.symlink(tmp_path / "gone.yaml", root / CONFIG_FILE)
    with pytest.raises(ConfigError) as caught:
        load_config(root)
    [issue] = caught.value.issues
    assert issue.file == str(root / CONFIG_FILE) and "symbolic link" in issue.message and "gone.yaml" in issue.message


def test_an_include_glob_that_follows_a_room_symlinked_outside_the_story_is_refused(tmp_path):
    root = workspace(tmp_path / "ws")
    outside = tmp_path / "secret.yaml"
    outside.write_text("states:\n  c: {}\n")
    os.symlink(outside, root / "stories" / "t" / "rooms" / "evil.yaml")
    text = refusal_text(root)
    assert "evil.yaml" in text and "outside the story folder" in text and str(outside) in text


@pytest.mark.parametrize("value", ["1e400", "-1e400", ".nan", ".inf", "-.inf", ".NaN"])
def test_a_threshold_that_is_not_a_finite_number_is_refused_with_its_place(tmp_path, value):
    root = workspace(tmp_path)
    (root / CONFIG_FILE).write_text(f"mining:\n  enabled: true\n  priority_threshold: {value}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(root)
    [issue] = caught.value.issues
    assert (issue.file, issue.line, issue.column, issue.key) == (str(root / CONFIG_FILE), 3, 23,
                                                                   "mining.priority_threshold")
    assert "finite" in issue.message or "not a number" in issue.message
    assert f"{root / CONFIG_FILE}:3:23: mining.priority_threshold:" in str(caught.value)
