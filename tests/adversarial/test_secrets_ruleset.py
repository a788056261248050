"""Planted secrets, second round (issue 28 item 7a): the twelve kinds that leaked, and a sample of every
rule of the pinned ruleset, in every field of every transcript format, and as a folder of the cwd.

Pass rule: no planted secret (nor any 12-character piece of it) appears in any answer of `sessions`
(JSON and table), `mine`, `propose`, `proposals`, `evolve analyze`, `runs projects|coverage|confirm|
prepare`, the language server (status, cards, proposal details, lenses, hovers), or in any file those
wrote (the episode store under .artifacts/mining/state, recipes, drafts, run packets), nor in the name of
any file they wrote. A transcript's own path holding the secret (the folder its agent ran in, a folder
above the history, its file name) is named by its display path (core/transcripts/display.py).

`make test` runs a spread sample; `KITSOKI_ADVERSARIAL=full` runs every kind and every rule in every
format (each case plants its secret in every content field of the format at once).
"""

from __future__ import annotations

import random
import re

import pytest

import transcript_world as W
from conftest import adversarial_cases
from ruleset_samples import ISSUE_KINDS, SELF_EVIDENT, rule_samples

pytestmark = pytest.mark.adversarial("secrets")

SAMPLES = rule_samples()
PLACEHOLDER = re.compile(r"(?i:\[REDACTED:[a-z0-9\-]+\])|REDACTED-[a-z0-9\-]+")
"""A placeholder names its rule, which may spell a token's fixed prefix (`bedrock-api-key-`): as written,
lower-cased in a title, or slugged into a run's folder name (`release-desk-REDACTED-aws-amazon-bedrock-…`)."""
ISSUE = [(fmt, kind) for fmt in W.FORMATS for kind in ISSUE_KINDS]
RULES = [(fmt, rid) for fmt in W.FORMATS for rid in sorted(SAMPLES)]
CWD = [(fmt, kind) for fmt in W.FORMATS for kind in sorted(SELF_EVIDENT)]


def _plant(files: dict, make) -> dict[str, tuple]:
    """Append make() -> (text to plant, secret) to every content field. Returns secret -> field."""
    planted = {}
    for rel, path in W.content_fields(files):
        old = files[rel]
        for key in path:
            old = old[key]
        text, secret = make()
        W.set_at(files[rel], path, f"{old} {text}")
        planted[secret] = (rel, path)
    return planted


def _check(tmp_path, files, planted, *, root_name: str = "transcripts") -> dict[str, str]:
    """Every answer, every file written and every written file's name searched for every planted
    secret. Returns the answers."""
    root = W.write_world(files, tmp_path / root_name)
    answers = W.run_everything(tmp_path, root)
    stored = [text for name, text in answers.items() if ".episodes." in name or "/mining/state/" in name]
    assert stored and any("[REDACTED:" in text for text in stored), "no redacted text reached the store"
    for name, text in answers.items():  # a placeholder names its rule, which may spell a token's fixed prefix
        answers[name] = PLACEHOLDER.sub("\0", text)
    leaks = []
    for secret, (rel, path) in planted.items():
        where = [name for name, text in answers.items() if W.leaked(secret, text)]
        where += [f"the name {name}" for name in answers if W.leaked(secret, PLACEHOLDER.sub("\0", name))]
        if where:
            leaks.append(f"{rel} {'.'.join(map(str, path))}: {secret[:16]}… in {', '.join(where[:4])}")
    assert not leaks, "planted secrets left a reader:\n" + "\n".join(leaks[:20])
    return answers


@pytest.mark.parametrize("fmt,kind", adversarial_cases(ISSUE, fast=6), ids=lambda v: str(v))
def test_the_twelve_kinds_never_leave_from_any_field(tmp_path, fmt, kind):
    files = W.world(fmt)
    rnd = random.Random(f"{fmt}-{kind}")
    make, context = ISSUE_KINDS[kind]

    def one():
        secret = make(rnd)
        return context.format(s=secret), secret

    planted = _plant(files, one)
    assert len(planted) >= 50  # every field of the format
    _check(tmp_path, files, planted)


@pytest.mark.parametrize("fmt,rid", adversarial_cases(RULES, fast=6), ids=lambda v: str(v))
def test_every_rule_sample_never_leaves_from_any_field(tmp_path, fmt, rid):
    files = W.world(fmt)
    sample, secret = SAMPLES[rid]
    planted = _plant(files, lambda: (sample, secret))  # one secret: a leak from any field shows
    assert planted == {secret: planted[secret]}
    _check(tmp_path, files, {secret: (rid, ("every field",))})


def _secret(kind: str) -> str:
    make, _ = ISSUE_KINDS[kind]
    return make(random.Random(kind))


def _sessions(fmt: str, cwd: str = W.CWD) -> dict[str, object]:
    files: dict[str, object] = {}
    for sid, day in zip(W.SESSION_IDS[fmt], ("2026-11-02", "2026-11-09", "2026-11-16")):
        files.update(W.FORMATS[fmt](sid, day, cwd))
    return files


@pytest.mark.parametrize("fmt,kind", adversarial_cases(CWD, fast=3), ids=lambda v: str(v))
def test_a_secret_as_a_folder_of_the_cwd_never_leaves(tmp_path, fmt, kind):
    """The sessions ran in /home/dev/<secret>/release-desk: the cwd, the project it names, every path
    under it in tool inputs, and the transcripts' own folder (Claude's `-home-dev-<secret>-…`, Pi's
    `--home-dev-<secret>-…--`) all hold the secret; outputs name those files by their display path."""
    secret = _secret(kind)
    answers = _check(tmp_path, _sessions(fmt, f"/home/dev/{secret}/release-desk"), {secret: ("cwd", ())})
    assert answers.get("runs prepare (exit)") == "0"  # the packets were cut from the files, found again


@pytest.mark.parametrize("fmt,kind", adversarial_cases(CWD, fast=3), ids=lambda v: str(v))
def test_a_secret_as_a_folder_above_the_history_never_leaves(tmp_path, fmt, kind):
    """The history sits under a folder named by a secret (a CODEX_HOME, a copied `~/.claude`, a `--dir`)."""
    secret = _secret(kind)
    answers = _check(tmp_path, _sessions(fmt), {secret: ("history folder", ())}, root_name=secret)
    assert answers.get("runs prepare (exit)") == "0"


def _renamed(fmt: str, files: dict[str, object], secret: str) -> dict[str, object]:
    """The files under names that hold `secret`: Claude's trunk, its subagent folder and file (where
    the session and agent ids go), Pi's `<time>_<secret>.jsonl`, Codex's `rollout-<time>-<secret>.jsonl`."""
    out = {}
    for rel, content in files.items():
        n = next(i for i, sid in enumerate(W.SESSION_IDS[fmt]) if sid in rel)
        rel = rel.replace(W.SESSION_IDS[fmt][n], f"{n}-{secret}").replace("agent-a1b2c3d", f"agent-{secret}")
        out[rel] = content
    return out


@pytest.mark.parametrize("fmt,kind", adversarial_cases(CWD, fast=3), ids=lambda v: str(v))
def test_a_secret_in_the_transcript_file_names_never_leaves(tmp_path, fmt, kind):
    """Each transcript file (and Claude's subagent folder) is named with a secret."""
    secret = _secret(kind)
    files = _renamed(fmt, _sessions(fmt), secret)
    assert all(secret in rel for rel in files if rel.endswith(".jsonl"))
    answers = _check(tmp_path, files, {secret: ("file names", ())})
    assert answers.get("runs prepare (exit)") == "0"
    prompts = [int(n) for n in re.findall(r'"human_prompts": (\d+)', answers["sessions --dir --json --workers 1"])]
    assert len(prompts) == 4 and prompts[0] >= 1, prompts  # three sessions (and the totals), read


_HOME_ROOTS = {"claude": (".claude/projects/", "claude/"), "pi": (".pi/agent/sessions/", "pi/"), "codex": (".codex/", "codex/")}


@pytest.mark.parametrize("fmt,kind", adversarial_cases(CWD, fast=3), ids=lambda v: str(v))
def test_a_workspace_in_a_folder_named_by_a_secret_keeps_its_sessions_and_names_no_state_file_by_it(tmp_path, fmt, kind):
    """The workspace itself sits in /home/dev/<secret>/release-desk and its sessions are found where the
    agent keeps them (HOME): the seed pass and every live pass after it mine them (the state keeps their
    project redacted: the workspace owns that form too), and no state file's name or text holds the secret."""
    import io
    import os
    import shutil

    from core.demo.walkthrough import WORKSPACE
    from server.cli import build_parser, run_mine

    secret = _secret(kind)
    ws = tmp_path / "home" / "dev" / secret / "release-desk"
    shutil.copytree(WORKSPACE, ws)
    home_dir, prefix = _HOME_ROOTS[fmt]
    home = tmp_path / "h"
    W.write_world({home_dir + rel.removeprefix(prefix): c for rel, c in _sessions(fmt, str(ws)).items()}, home)
    saved = {k: os.environ.get(k) for k in ("HOME", "CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR", "CODEX_HOME")}
    os.environ["HOME"] = str(home)
    for k in ("CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR", "CODEX_HOME"):
        os.environ.pop(k, None)

    def mine(*more):
        out, err = io.StringIO(), io.StringIO()
        code = run_mine(build_parser().parse_args(["mine", "--repo", str(ws), "--json", "--workers", "1", *more]),
                        out=out, err=err)
        assert code == 0, err.getvalue()[-600:]
        return W._json_head(out.getvalue())

    try:
        seed, live, again = mine(), mine("--live"), mine("--live")
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    assert seed["pass"]["sessions"] == 3 and seed["recipes"]
    for later in (live, again):
        assert later["pass"]["other_projects"] == 0 and [r["id"] for r in later["recipes"]] == [r["id"] for r in seed["recipes"]]
    state = ws / ".artifacts" / "mining" / "state"
    for f in state.iterdir():
        assert not W.leaked(secret, f.name), f.name
        assert not W.leaked(secret, PLACEHOLDER.sub("\0", f.read_text())), f.name
