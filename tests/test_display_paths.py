"""Display paths (core/transcripts/display.py): a transcript whose own path holds a secret is named
without it everywhere, and what a person is shown still opens the right file."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from conftest import CLI, CORPUS, jsonl
from core.mining.watermark import kitsoki_slug
from core.transcripts.claude import read_claude_session
from core.transcripts.codex import read_codex_session
from core.transcripts.display import display_path, real_path
from core.transcripts.model import session_to_json
from core.transcripts.pi import read_pi_session

sys.path.insert(0, str(Path(__file__).parent / "adversarial"))
import transcript_world as W  # noqa: E402

TOKEN = "ghp_" + "Kq7vR2mXw9Lp4TzN8bYc3HdF6sJ0gUaE1oVi"  # a GitHub token's shape, made up
CWD = f"/home/dev/{TOKEN}/release-desk"


def _world(root: Path, fmt: str, cwd: str = CWD) -> Path:
    files: dict[str, object] = {}
    for sid, day in zip(W.SESSION_IDS[fmt], ("2026-11-02", "2026-11-09", "2026-11-16")):
        files.update(W.FORMATS[fmt](sid, day, cwd))
    return W.write_world(files, root)


def _leaks(text: str) -> bool:
    return W.leaked(TOKEN, text)


def test_a_path_with_nothing_secret_is_its_own_display_path(tmp_path):
    root = _world(tmp_path / "t", "claude", W.CWD)
    paths = [str(p) for p in root.rglob("*.jsonl")]
    if CORPUS.is_dir():
        paths += [str(p) for p in CORPUS.rglob("*.jsonl")]
    assert len(paths) >= 6
    assert [display_path(p) for p in paths] == paths
    assert real_path(paths[0]) == Path(paths[0])


@pytest.mark.parametrize("fmt", ["claude", "pi"])
def test_a_folder_named_after_a_secret_cwd_shows_the_redacted_cwd_and_opens_again(tmp_path, fmt):
    root = _world(tmp_path / "t", fmt)
    real = sorted(p for p in root.rglob("*.jsonl") if "subagents" not in p.parts)[0]
    assert "ghp" in str(real)
    shown = display_path(real)
    assert not _leaks(shown)
    folder = shown.split("/")[-2]
    # the project's name stays readable, the token is a placeholder, a tag tells such folders apart
    assert "release-desk" in folder and "REDACTED-github" in folder and "~" in folder
    assert real_path(shown) == real
    assert display_path(real) == shown  # the same every time: it keys the mining state


def test_two_folders_of_two_secrets_stay_apart(tmp_path):
    other = "ghp_" + "Zz9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gFeDcB"
    b_root, c_root = _world(tmp_path / TOKEN, "codex", W.CWD), _world(tmp_path / other, "codex", W.CWD)
    pb = sorted(b_root.rglob("*.jsonl"))[0]
    pc = sorted(c_root.rglob("*.jsonl"))[0]
    sb, sc = display_path(pb), display_path(pc)
    assert sb != sc and not _leaks(sb) and not W.leaked(other, sc)
    assert real_path(sb) == pb and real_path(sc) == pc
    pb.unlink()
    with pytest.raises(FileNotFoundError, match="no file or folder matches"):
        real_path(sb.rsplit("/", 2)[0] + "/[REDACTED:github-token]~000000000000/x.jsonl")


@pytest.mark.parametrize("fmt,read", [("claude", None), ("pi", read_pi_session), ("codex", read_codex_session)])
def test_every_place_a_reader_names_a_file_is_the_display_path(tmp_path, fmt, read):
    root = _world(tmp_path / TOKEN, fmt)  # the secret in the history's folder and (claude, pi) its cwd
    trunk = sorted(p for p in root.rglob("*.jsonl") if "subagents" not in p.parts)[0]
    if fmt == "claude":
        session = read_claude_session(trunk, sorted(trunk.with_suffix("").rglob("agent-*.jsonl")))
    else:
        session = read(trunk)
    dumped = orjson.dumps(session_to_json(session)).decode()
    assert not _leaks(dumped)
    prompt = session.human_prompts[0]
    opened = real_path(prompt.source.file)
    assert opened == trunk
    line = opened.read_text().splitlines()[prompt.source.line - 1]
    assert W.PROMPT in line  # the cite's line is the prompt's record


def test_a_cite_a_person_is_shown_opens_the_file_it_names(tmp_path):
    """The proposal's evidence (its cites, as `proposals --json` prints them) opens the very file and
    lines the ask came from, while naming neither the token nor its folder."""
    root = _world(tmp_path / "transcripts", "claude")
    answers = W.run_everything(tmp_path, root)
    listing = W._json_head(answers["proposals --repo --json"])
    cites = [c for p in listing["proposals"] for c in p["evidence"]["cites"]]
    assert cites
    for cite in cites:
        assert not _leaks(cite["path"])
        opened = real_path(cite["path"])
        assert opened.is_file() and opened.is_relative_to(root)
        lines = opened.read_text().splitlines()
        assert W.PROMPT in lines[cite["line_start"] - 1]
    for name, text in answers.items():
        assert not _leaks(name) and not _leaks(text), name
    # and a person opens one from the command line: the real file, the lines kept
    shown = f"{cites[0]['path']}:{cites[0]['line_start']}-{cites[0]['line_end']}"
    run = subprocess.run([*CLI, "open", shown], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"{real_path(cites[0]['path'])}:{cites[0]['line_start']}-{cites[0]['line_end']}\n"
    wrong = re.sub(r"~[0-9a-f]{12}", "~000000000000", cites[0]["path"])
    gone = subprocess.run([*CLI, "open", wrong], capture_output=True, text=True)
    assert gone.returncode == 1 and "no file or folder matches" in gone.stderr and not _leaks(gone.stderr)


def test_the_mining_state_keeps_its_keys_between_passes(tmp_path):
    """A live pass after the seed finds every file where the seed left it (the state's keys are the
    display paths, the same in every process): nothing is read again."""
    from server.cli import build_parser, run_mine

    root = _world(tmp_path / "transcripts", "claude")
    ws = W.prepare_workspace(tmp_path)

    def mine(*more):
        out = io.StringIO()
        args = build_parser().parse_args(["mine", "--repo", str(ws), "--dir", str(root), "--json", "--workers", "1", *more])
        assert run_mine(args, out=out, err=io.StringIO()) == 0
        return W._json_head(out.getvalue())

    home = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp_path / "home")
    try:
        first = mine()
        again = mine("--live")
    finally:
        os.environ["HOME"] = home or ""
    assert first["pass"]["sessions"] >= 3
    assert again["pass"]["sessions"] == 0
    state = ws / ".artifacts" / "mining" / "state"
    for f in state.iterdir():
        assert not _leaks(f.name) and not _leaks(f.read_text())


def test_a_workspace_in_a_secret_folder_names_its_state_files_without_it(tmp_path):
    ws = tmp_path / TOKEN / "release-desk"
    ws.mkdir(parents=True)
    slug = kitsoki_slug(ws.resolve())
    assert not _leaks(slug) and "release-desk" in slug and "-REDACTED-github-token-~" in slug
    assert set(slug) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_~")
    assert kitsoki_slug(tmp_path / "Zq8" / "release-desk") != slug
    jsonl(tmp_path / "x.jsonl", [{"cwd": CWD}])
    assert display_path(tmp_path / "x.jsonl") == str(tmp_path / "x.jsonl")


def test_a_state_kept_under_a_path_holding_a_secret_is_mined_again_without_it(tmp_path):
    """A store written before display paths (its keys the real paths) is not used: the next pass is a
    seed pass, which writes the store anew under display keys."""
    from core.mining.watermark import FileMark, MiningState, load_state, save_state

    ws = tmp_path / "ws"
    ws.mkdir()
    secret_path = f"/home/dev/.claude/projects/-home-dev-{TOKEN.replace('_', '-')}-app/x.jsonl"
    state = MiningState(slug="s", files={secret_path: FileMark(format="claude", size=1, mtime_ns=1, session="x")})
    save_state(ws, state)
    assert load_state(ws, "s") is None
    state = MiningState(slug="s", files={"/home/dev/app/x.jsonl": FileMark(format="claude", size=1, mtime_ns=1,
                                                                              session="x")})
    save_state(ws, state)
    assert load_state(ws, "s") is not None
