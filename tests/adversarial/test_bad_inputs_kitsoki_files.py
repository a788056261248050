"""Planted kitsoki files: special files, dangling links, includes that leave the story, numbers that are not.

Pass rule for every case: loading the workspace refuses what was planted with a message naming the
planted file (and, for a value, its file:line:col), within the test's lifetime (a FIFO never blocks the
read), with no traceback and nothing written. A planted config raises a ConfigError / WorkspaceError; a
planted story file refuses that story alone (kitsoki's discovery skips a story that does not load).
"""

from __future__ import annotations

import re

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
    # 1e400 is out of a float's range: yaml.v3 then reads it as a string, as we do now
    assert "finite" in issue.message or "not a number" in issue.message or "expected a number, got a string" \
        in issue.message
    assert f"{root / CONFIG_FILE}:3:23: mining.priority_threshold:" in str(caught.value)


# ── numbers, local files and nesting that used to kill a command ──────────────────────────────
# Through the real command line, on a copy of the mined and proposed demo workspace. Pass rule: no
# traceback and no signal, a message naming the file (file:line:col for a value), exit 0 only when
# the value is one kitsoki would read, and nothing of the project written (an accept writes nothing).

import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import statekit  # noqa: E402
from conftest import FULL, adversarial_cases  # noqa: E402

_TMP = Path(tempfile.mkdtemp(prefix="kitsoki-miner-kitsoki-files-"))
atexit.register(shutil.rmtree, _TMP, True)
_TEMPLATE: dict = {}


def _template() -> dict:
    if not _TEMPLATE:
        _TEMPLATE.update(statekit.build_template(_TMP / "template"))
    return _TEMPLATE


def _cli(ws: Path, *args: str) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "server.cli", *args, "--repo", str(ws)], capture_output=True, text=True,
                         timeout=300, cwd=statekit.ROOT)
    assert run.returncode >= 0, f"killed by signal {-run.returncode}: {run.stderr[-2000:]}"
    assert "Traceback" not in run.stderr + run.stdout, run.stderr[-3000:]
    return run


HUGE = "9" * 5000
ALL = frozenset({"mine", "propose", "flows", "accept"})
BIG_INTS = {  # where in .kitsoki.yaml: (key path, how the number is written, the key an error names, the
    # commands that read that key and so must refuse it by name; the others just must not trace back)
    "mining.first_pass_sample": (("mining", "first_pass_sample"), "{n}", "mining.first_pass_sample", ALL),
    "miner.flow_gate.jobs": (("miner", "flow_gate", "jobs"), "{n}", "miner.flow_gate.jobs", {"accept"}),
    "an unknown key": (("unmodeled_number",), "{n}", None, set()),
    "a negative one": (("mining", "first_pass_sample"), "-{n}", "mining.first_pass_sample", ALL),
    "in hex": (("mining", "first_pass_sample"), "0x{n}", "mining.first_pass_sample", ALL),
}


def _with_value(text: str, path: tuple[str, ...], raw: str) -> str:
    """The config with `path` set to `raw`, written as a plain scalar exactly as given."""
    import yaml

    data = yaml.safe_load(text) or {}
    here = data
    for key in path[:-1]:
        here = here.setdefault(key, {})
    here[path[-1]] = "__RAW__"
    return yaml.safe_dump(data, sort_keys=False).replace("__RAW__", raw)


@pytest.mark.parametrize("where", sorted(BIG_INTS))
def test_an_integer_of_5000_digits_in_the_config_is_never_a_traceback(tmp_path, where):
    ws, _ = statekit.copy_case(_template(), tmp_path)
    path, written, key, read_by = BIG_INTS[where]
    config = ws / CONFIG_FILE
    config.write_text(_with_value(config.read_text(), path, written.format(n=HUGE)))
    before = tree(ws)
    commands = [["mine", "--dir", str(ws.parent / "transcripts"), "--workers", "1"], ["propose"], ["flows"],
                ["accept", _template()["cards"]["world"]]]
    for command in commands if FULL else commands[1::2]:
        run = _cli(ws, *command)
        if command[0] in read_by:
            said = run.stderr + run.stdout  # `flows` names the file as its report does: relative, with line:col
            named = str(config) in said or f"{CONFIG_FILE}:" in said
            assert run.returncode != 0 and named and key in said, (command, run.stderr[-2000:], run.stdout[-2000:])
    if read_by:  # refused: nothing of the project written
        assert {k: v for k, v in tree(ws).items() if not k.startswith(".artifacts")} == \
               {k: v for k, v in before.items() if not k.startswith(".artifacts")}


LOCAL_FILES = {"a list": "- a\n- b\n", "a string": "just words\n", "a number": "42\n", "a list of maps": "- story_dirs: []\n"}


@pytest.mark.parametrize("kind", sorted(LOCAL_FILES))
def test_a_local_config_that_is_not_a_mapping_is_refused_by_name_before_anything_is_staged(tmp_path, kind):
    ws, _ = statekit.copy_case(_template(), tmp_path)
    local = ws / ".kitsoki.local.yaml"
    local.write_text(LOCAL_FILES[kind])
    before = tree(ws)
    for command in (["propose"], ["accept", _template()["cards"]["world"]], ["flows"]):
        run = _cli(ws, *command)
        text = run.stderr + run.stdout
        assert run.returncode != 0 and ".kitsoki.local.yaml" in text and "mapping" in text, (command, text[-2000:])
    assert tree(ws) == {k: v for k, v in tree(ws).items()} and \
        {k: v for k, v in tree(ws).items() if not k.startswith(".artifacts/mining/trace")} == \
        {k: v for k, v in before.items() if not k.startswith(".artifacts/mining/trace")}


def _deep(kind: str, depth: int) -> str:
    if kind == "flow lists":
        return "test_kind: flow\nturns: " + "[" * depth + "]" * depth + "\n"
    if kind == "flow maps":
        return "test_kind: flow\nturns: " + "{a: " * depth + "1" + "}" * depth + "\n"
    if kind == "block maps":
        return "test_kind: flow\nturns:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(depth)) + "\n"
    if kind == "compact sequences":
        return "test_kind: flow\nturns:\n  " + "- " * depth + "x\n"
    raise AssertionError(kind)


NESTINGS = [pytest.param(kind, depth, id=f"{kind}-{depth}") for kind in ("flow lists", "flow maps", "block maps",
                                                                        "compact sequences")
            for depth in (600, 20_000, 300_000) if not (kind in ("block maps", "compact sequences") and depth > 20_000)]


@pytest.mark.parametrize(("kind", "depth"), adversarial_cases(NESTINGS, fast=4))
def test_a_flow_fixture_nested_deeply_is_refused_by_name_never_a_crash(tmp_path, kind, depth):
    ws, _ = statekit.copy_case(_template(), tmp_path)
    fixture = ws / "stories" / "release-desk" / "flows" / "deep.yaml"
    fixture.write_text(_deep(kind, depth))
    run = _cli(ws, "flows")
    why = "nested too deeply" in run.stdout or "flow fixtures over" in run.stdout  # a big one is refused by size first
    assert run.returncode == 1 and "deep.yaml" in run.stdout and why, run.stdout[-2000:]
    summary = re.search(r"Summary: (\d+)/(\d+) flows pass", run.stdout)
    assert summary and int(summary[1]) == int(summary[2]) - 1 >= 1, "the other fixtures were not run"
