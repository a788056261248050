"""The recipe miner on real transcripts and on small ones built here: episodes, recipes, passes."""

import os
import threading
from pathlib import Path

import orjson
import pytest

from builders import prompt, tool_result, tool_use, uid
from conftest import CORPUS, jsonl
from core.mining import passes
from core.mining.episodes import Determinism, episodes, measure
from core.mining.passes import PassCancelled, run_pass, this_project
from core.mining.recipes import mine_recipes
from core.mining.signatures import action_signature, command_head
from core.mining.watermark import load_state, kitsoki_slug
from core.transcripts.claude import read_claude_session

CORPUS_PLACES = ["/home/USER/projects/spotter-worktrees", "/home/marco/projects/spotter",
                 "/Users/badlogic/workspaces/pi-mono", "/tmp/as-agent-fixture/project"]
"""Where the shared corpus's sessions ran: the spotter worktrees, an earlier spotter checkout, two Pi projects."""
RECORDED_IN = ["/work/proj", *CORPUS_PLACES]
"""Where the fixtures' sessions ran (the builders' cwd, the corpus): these tests mine them as this project's."""
NO_HOME = {"home": Path("/nonexistent"), "env": {}, "project_paths": RECORDED_IN}


def test_command_heads_keep_what_is_stable():
    assert command_head("cd /x && pytest -q tests/test_a.py -k foo") == "pytest"
    assert command_head("go test ./... -run X") == "go test ./..."
    assert command_head("gh pr create --fill --base main") == "gh pr create"
    assert command_head("FOO=1 sudo make test") == "make test"
    assert command_head("python -m pytest -x") == "pytest"
    assert command_head("npm run build -- --prod") == "npm run build"
    assert command_head("mix phx.server 2>&1 | head -80") == "mix phx.server"
    assert action_signature("Edit", {"file_path": "/w/p/core/x.py"}, "/w/p") == "Edit: core/x.py"


def test_measures_follow_kitsoki_definitions(tmp_path):
    ids = [uid() for _ in range(12)]
    path = jsonl(tmp_path / "s.jsonl", [
        prompt(ids[0], None, "fix the failing parser test"),
        tool_use(ids[1], ids[0], "m1", "t1", "Bash", {"command": "pytest -q"}),
        tool_result(ids[2], ids[1], "t1", "Exit code 1\nFAILED", is_error=True),
        tool_use(ids[3], ids[2], "m2", "t2", "Edit", {"file_path": "/work/proj/p.py", "old_string": "a",
                                                      "new_string": "b"}),
        tool_result(ids[4], ids[3], "t2", "ok"),
        tool_use(ids[5], ids[4], "m3", "t3", "Bash", {"command": "pytest -q"}),
        tool_result(ids[6], ids[5], "t3", "1 passed"),
        prompt(ids[7], ids[6], "push it"),
        tool_use(ids[8], ids[7], "m4", "t4", "Bash", {"command": "git push"}),
        tool_result(ids[9], ids[8], "t4", "The user doesn't want to proceed with this tool use.", is_error=True),
        prompt(ids[10], ids[9], "thanks, that is all"),
    ])
    first, second, third = episodes(read_claude_session(path))
    assert (first.measures.tool_calls, first.measures.retries, first.measures.edit_rerun_cycles) == (3, 1, 1)
    assert first.determinism is Determinism.deterministic and first.errors == 1
    assert first.signature == ("Bash: pytest", "Edit: p.py")
    assert (first.line_start, first.line_end) == (1, 7)
    assert second.determinism is Determinism.agent_gated and second.rejections == 1
    assert third.determinism is Determinism.irreducible


def mine_corpus(workspace: Path, **kw):
    return run_pass(workspace, dirs=[CORPUS], **NO_HOME, **kw)


@pytest.mark.corpus
def test_real_sessions_yield_the_recipes_a_reader_expects(tmp_path):
    """What a person reading the two spotter sessions sees (both are Elixir work on beads issues):
    - every ticket operation goes through the beads CLI `bd`: a ticket binding (provider beads);
    - tests always run as `mix test` and builds as `mix compile`: world knobs test_cmd, build_cmd;
    - both open with "Work on bead <id>. Run bd show <id> ...": asked in two sessions, which is not yet a
      recurring ask (that takes three), so no intent.
    Nothing else recurs across sessions in the corpus (the other sessions share no request)."""
    report, recipes = mine_corpus(tmp_path)
    assert report.trigger == "seed" and report.sessions == 6
    found = {(r.kind, r.title) for r in recipes}
    assert found == {
        ("binding", "ticket via beads"),
        ("world", "test_cmd = mix test"),
        ("world", "build_cmd = mix compile"),
    }


@pytest.mark.corpus
def test_every_cited_line_holds_the_cited_prompt_or_action(tmp_path):
    _, recipes = mine_corpus(tmp_path)
    for recipe in recipes:
        for cite in recipe.instances:
            lines = Path(cite.path).read_bytes().split(b"\n")
            record = orjson.loads(lines[cite.line_start - 1])
            if recipe.kind == "intent":
                text = record["message"]["content"]
                assert any(p.text.split("<id>")[0].strip() in text.lower() for p in recipe.phrasings)
            else:
                [block] = [b for b in record["message"]["content"] if b.get("type") == "tool_use"]
                assert action_signature(block["name"], block["input"]) in recipe.action_signature


@pytest.mark.corpus
def test_recipe_ids_and_bytes_are_stable_across_runs(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    _, first = mine_corpus(one, workers=1)
    _, second = mine_corpus(two, workers=2)
    assert [r.id for r in first] == [r.id for r in second]
    # The recipes file holds no wall-clock time and nothing of the workspace: same input, same bytes.
    assert passes.recipes_path(one).read_bytes() == passes.recipes_path(two).read_bytes()
    # The fingerprints list files by path, not in the order two workers happened to finish them.
    for ws in (one, two):
        (state,) = (ws / ".artifacts" / "mining" / "state").glob("*.json")
        files = list(orjson.loads(state.read_bytes())["files"])
        assert files == sorted(files) and len(files) > 1


def session_file(folder: Path, sid: str, n_prompts: int, start: int = 0) -> list[dict]:
    records, parent = [], None
    for i in range(start, start + n_prompts):
        a, b, c = uid(), uid(), uid()
        records += [
            prompt(a, parent, f"run the linter and fix what it finds #{i}", session=sid,
                   ts=f"2026-03-0{1 + i % 9}T{10 + sum(map(ord, sid)) % 12}:00:00Z"),  # sessions an hour or more apart
            tool_use(b, a, f"m{sid}{i}", f"t{sid}{i}", "Bash", {"command": "ruff check --fix ."}, session=sid),
            tool_result(c, b, f"t{sid}{i}", "All checks passed!", session=sid),
        ]
        parent = c
    return records


def two_sessions(tmp_path) -> Path:
    d = tmp_path / "transcripts"
    jsonl(d / "s1.jsonl", session_file(d, "s1", 2))
    jsonl(d / "s2.jsonl", session_file(d, "s2", 2))
    return d


def three_sessions(tmp_path) -> Path:
    """An ask that recurs (three sessions: what makes it recurring)."""
    d = two_sessions(tmp_path)
    jsonl(d / "s3.jsonl", session_file(d, "s3", 2))
    return d


def test_appending_to_a_file_reads_only_the_new_bytes(tmp_path):
    d = three_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    seed, recipes = run_pass(ws, dirs=[d], **NO_HOME)
    assert seed.trigger == "seed" and seed.files_read == 3
    assert [r.kind for r in recipes] == ["intent"] and recipes[0].instances.__len__() == 6
    warm, _ = run_pass(ws, dirs=[d], **NO_HOME)
    assert (warm.trigger, warm.files_read, warm.bytes_read) == ("live", 0, 0)
    target = d / "s1.jsonl"
    before = target.stat().st_size
    extra = b"".join(orjson.dumps(r) + b"\n" for r in session_file(d, "s1", 1, start=7))
    with open(target, "ab") as fh:
        fh.write(extra)
    live, recipes = run_pass(ws, dirs=[d], **NO_HOME)
    assert (live.files_read, live.bytes_read) == (1, len(extra))
    assert target.stat().st_size == before + len(extra)
    assert len(recipes[0].instances) == 7


def test_a_grown_file_continues_its_open_episode(tmp_path):
    d = tmp_path / "t"
    a, b, c, e = uid(), uid(), uid(), uid()
    jsonl(d / "s1.jsonl", [prompt(a, None, "deploy the staging stack", session="s1"),
                           tool_use(b, a, "m1", "t1", "Bash", {"command": "make deploy"}, session="s1")])
    ws = tmp_path / "ws"
    ws.mkdir()
    run_pass(ws, dirs=[d], **NO_HOME)
    with open(d / "s1.jsonl", "ab") as fh:
        fh.write(orjson.dumps(tool_result(c, b, "t1", "Exit code 2\nboom", is_error=True, session="s1")) + b"\n")
        fh.write(orjson.dumps(tool_use(e, c, "m2", "t2", "Bash", {"command": "make deploy"}, session="s1")) + b"\n")
    run_pass(ws, dirs=[d], **NO_HOME)
    [ep] = load_state(ws, kitsoki_slug(ws.resolve())).all_episodes()
    assert [a.signature for a in ep.actions] == ["Bash: make deploy", "Bash: make deploy"]
    assert ep.actions[0].is_error and ep.actions[0].exit_code == 2  # its result came in the second read
    assert ep.measures.retries == 1 and ep.line_end == 4


def test_a_pass_that_fails_midway_leaves_the_watermark_and_the_next_reads_again(tmp_path, monkeypatch):
    d = two_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    real = passes.mine_file
    calls = []

    def crash_on_second(*args):
        calls.append(args[1])
        if len(calls) == 2:
            raise RuntimeError("killed")
        return real(*args)

    monkeypatch.setattr(passes, "mine_file", crash_on_second)
    with pytest.raises(RuntimeError):
        run_pass(ws, dirs=[d], workers=1, **NO_HOME)
    assert load_state(ws, kitsoki_slug(ws.resolve())) is None
    assert not passes.recipes_path(ws).exists()
    monkeypatch.setattr(passes, "mine_file", real)
    report, _ = run_pass(ws, dirs=[d], **NO_HOME)
    assert (report.trigger, report.files_read) == ("seed", 2)


def test_a_cancelled_pass_changes_nothing(tmp_path):
    d = two_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    run_pass(ws, dirs=[d], **NO_HOME)
    state_before = passes.recipes_path(ws).read_bytes()
    with open(d / "s2.jsonl", "ab") as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in session_file(d, "s2", 1, start=5)))
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(PassCancelled):
        run_pass(ws, dirs=[d], cancel=cancel, **NO_HOME)
    assert passes.recipes_path(ws).read_bytes() == state_before
    report, _ = run_pass(ws, dirs=[d], **NO_HOME)
    assert report.files_read == 1


def four_sessions_and_an_agents(tmp_path) -> tuple[Path, Path]:
    """Four people's sessions s0..s3 and an SDK agent's, newest last (the agent's), and an empty workspace."""
    d = tmp_path / "t"
    for i in range(4):
        jsonl(d / f"s{i}.jsonl", session_file(d, f"s{i}", 1))
    jsonl(d / "sdk.jsonl", [prompt(uid(), None, "run the linter and fix", session="sdk", entrypoint="sdk-cli")])
    for i, name in enumerate(["s0", "s1", "s2", "s3", "sdk"]):
        os.utime(d / f"{name}.jsonl", (1_700_000_000 + i, 1_700_000_000 + i))
    ws = tmp_path / "ws"
    ws.mkdir()
    return d, ws


def test_seed_drops_agent_sessions_and_samples_the_newest(tmp_path):
    d, ws = four_sessions_and_an_agents(tmp_path)
    report, _ = run_pass(ws, dirs=[d], first_pass_sample=2, **NO_HOME)
    state = load_state(ws, kitsoki_slug(ws.resolve()))
    assert sorted(Path(p).name for p in state.files) == ["s2.jsonl", "s3.jsonl"]
    assert state.mined_through == 1_700_000_003
    # The live pass keeps agent sessions, and only takes files newer than the watermark.
    os.utime(d / "sdk.jsonl", (1_700_000_010, 1_700_000_010))
    report, _ = run_pass(ws, dirs=[d], **NO_HOME)
    assert report.files_read == 1 and report.trigger == "live"


def test_seed_over_every_session_drops_the_agents_as_it_reads(tmp_path):
    """A sample that takes every session: each file is told apart where it is read, with the same outcome."""
    d, ws = four_sessions_and_an_agents(tmp_path)
    report, _ = run_pass(ws, dirs=[d], first_pass_sample=5, **NO_HOME)
    state = load_state(ws, kitsoki_slug(ws.resolve()))
    assert sorted(Path(p).name for p in state.files) == ["s0.jsonl", "s1.jsonl", "s2.jsonl", "s3.jsonl"]
    assert state.mined_through == 1_700_000_003  # the agent's newer file does not move the watermark
    assert (report.sessions, report.files_read, report.files_seen) == (4, 4, 5)
    os.utime(d / "sdk.jsonl", (1_700_000_010, 1_700_000_010))
    report, _ = run_pass(ws, dirs=[d], **NO_HOME)
    assert report.files_read == 1 and report.trigger == "live"


def test_priority_threshold_marks_but_keeps_recipes(tmp_path):
    d = three_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    _, recipes = run_pass(ws, dirs=[d], priority_threshold=1000, **NO_HOME)
    assert recipes and all(r.below_threshold for r in recipes)
    eps = load_state(ws, kitsoki_slug(ws.resolve())).all_episodes()
    assert [r.id for r in mine_recipes(eps, project_of=this_project)] == [r.id for r in recipes]
    assert measure([]).cost == 0


def test_clusters_remembered_from_earlier_passes_give_the_same_recipes_as_a_fresh_run():
    import copy
    import random
    from datetime import datetime, timedelta, timezone

    from core.mining.episodes import Action, Episode, Measures
    from core.mining.phrasing import phrasing, stems

    rng = random.Random(7)
    words = "deploy staging release notes bump version lint fix tests flaky parser cache docs api client".split()
    base = datetime(2026, 3, 1, tzinfo=timezone.utc)

    def make(i: int, session: str) -> Episode:
        text = " ".join(rng.sample(words, 4))
        act = Action(signature="Bash: make " + text.split()[0], tool="Bash", argument="make " + text.split()[0])
        return Episode(session=session, project="/p", index=i, prompt=text, file=f"/t/{session}.jsonl",
                       line_start=i + 1, line_end=i + 1, timestamp=base + timedelta(minutes=i), actions=[act],
                       measures=Measures(tool_calls=1), determinism=Determinism.deterministic,
                       stems=sorted(stems(text)), phrasing=phrasing(text))

    eps = [make(i, f"s{i % 5}") for i in range(120)]
    def fresh(batch):
        batch = copy.deepcopy(batch)
        for e in batch:
            e.cluster = ""
        return [r.model_dump() for r in mine_recipes(batch)]

    first = eps[:80]
    mine_recipes(first)  # leaves each episode's cluster on it, as a pass stores them
    assert all(e.cluster for e in first)
    later = first + eps[80:]  # newer episodes: the remembered clusters stand, only the new ones probe
    assert [r.model_dump() for r in mine_recipes(later)] == fresh(eps)
    older = make(-1, "s9")
    older.timestamp = base - timedelta(days=1)  # an older session found later: re-probe from it on
    assert [r.model_dump() for r in mine_recipes(later + [older])] == fresh(eps + [older])
    dropped = [e for e in later if e.session != "s0"]  # a file rewritten: its episodes (and seeds) gone
    assert [r.model_dump() for r in mine_recipes(dropped)] == fresh(dropped)


def test_an_index_kept_between_passes_matches_a_fresh_run():
    """The language server's miner keeps its RecipeIndex; folding in a session that goes on (new
    episodes, its open episode continued), or an older one found late, gives a fresh run's recipes."""
    import copy
    from datetime import datetime, timedelta, timezone

    from core.mining.episodes import Action, Episode, Measures
    from core.mining.phrasing import phrasing, stems
    from core.mining.recipes import RecipeIndex

    base = datetime(2026, 3, 1, tzinfo=timezone.utc)
    asks = ["run the linter and fix it", "deploy staging now", "regenerate the api client", "bump the version"]
    cmds = ["ruff check .", "make deploy", "make client", "gh pr merge --squash"]

    def make(i: int, session: str, extra: int = 0, rejected: bool = False) -> Episode:
        acts = [Action(signature=f"Bash: {cmds[i % 4].split()[0]} {cmds[i % 4].split()[1]}", tool="Bash",
                       argument=cmds[i % 4], rejected=rejected)] * (1 + extra)
        text = asks[i % 4]
        return Episode(session=session, project="/p", index=i, prompt=text, file=f"/t/{session}.jsonl",
                       line_start=i + 1, line_end=i + 1, timestamp=base + timedelta(minutes=i), actions=list(acts),
                       measures=Measures(tool_calls=len(acts)), determinism=Determinism.deterministic,
                       stems=sorted(stems(text)), phrasing=phrasing(text))

    def fresh(eps):
        eps = copy.deepcopy(eps)
        for e in eps:
            e.cluster = ""
        return [r.model_dump() for r in mine_recipes(eps)]

    eps = [make(i, f"s{i % 3}") for i in range(30)]
    index = RecipeIndex(eps[:20])
    index.recipes()
    assert index.sync(eps) is True  # newer episodes only: folded in
    assert [r.model_dump() for r in index.recipes()] == fresh(eps)
    continued = make(29, "s2", extra=2, rejected=True)  # the open episode, continued in a later read
    eps2 = eps[:-1] + [continued]
    assert index.sync_files({"/t/s2.jsonl": [e for e in eps2 if e.session == "s2"]}, eps2) is True
    assert [r.model_dump() for r in index.recipes()] == fresh(eps2)
    late = make(0, "s7")
    late.timestamp = base - timedelta(days=3)  # an older session found later: rebuilt
    assert index.sync(eps2 + [late]) is False
    assert [r.model_dump() for r in index.recipes()] == fresh(eps2 + [late])


def test_the_episode_log_ignores_what_a_crashed_pass_appended(tmp_path, monkeypatch):
    from core.mining import watermark

    monkeypatch.setattr(watermark, "INLINE_BYTES", 0)  # every pass's tail goes to the log itself
    d = two_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    run_pass(ws, dirs=[d], **NO_HOME)
    before = sorted((e.session, e.line_start) for e in load_state(ws, kitsoki_slug(ws.resolve())).all_episodes())
    with open(d / "s1.jsonl", "ab") as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in session_file(d, "s1", 1, start=5)))
    real = watermark.write_atomic

    log_sizes = []

    def die_on_commit(path, data):
        if path.parent.name == "state" and path.suffix == ".json":  # the fingerprints: the commit point
            log_sizes.extend(p.stat().st_size for p in path.parent.glob("*.episodes.*"))
            raise OSError("killed before the commit point")
        return real(path, data)

    monkeypatch.setattr(watermark, "write_atomic", die_on_commit)
    with pytest.raises(OSError):
        run_pass(ws, dirs=[d], **NO_HOME)  # appended to the log, then died
    monkeypatch.setattr(watermark, "write_atomic", real)
    after_crash = sorted((e.session, e.line_start) for e in load_state(ws, kitsoki_slug(ws.resolve())).all_episodes())
    assert after_crash == before  # the appended tail is not part of the state
    state = load_state(ws, kitsoki_slug(ws.resolve()), with_episodes=False)
    assert log_sizes and log_sizes[0] > state._episodes_bytes  # ...though it was written
    report, _ = run_pass(ws, dirs=[d], **NO_HOME)
    assert report.files_read == 1
    eps = load_state(ws, kitsoki_slug(ws.resolve())).all_episodes()
    assert len(eps) == len(before) + 1 and len({(e.session, e.line_start) for e in eps}) == len(eps)


def test_a_remembered_pass_told_which_file_changed_reads_only_that_file(tmp_path):
    from core.mining.passes import PassMemory

    d = two_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    memory = PassMemory()
    run_pass(ws, dirs=[d], memory=memory, **NO_HOME)
    extra = b"".join(orjson.dumps(r) + b"\n" for r in session_file(d, "s2", 1, start=6))
    with open(d / "s2.jsonl", "ab") as fh:
        fh.write(extra)
    report, recipes = run_pass(ws, dirs=[d], memory=memory, changed_paths=[d / "s2.jsonl"], **NO_HOME)
    assert (report.files_seen, report.files_read, report.bytes_read) == (1, 1, len(extra))
    fresh_ws = tmp_path / "fresh"
    fresh_ws.mkdir()
    _, fresh = run_pass(fresh_ws, dirs=[d], **NO_HOME)
    assert [r.model_dump() for r in recipes] == [r.model_dump() for r in fresh]


def test_a_live_pass_keeps_its_tail_in_the_fingerprints_and_fsyncs_one_file(tmp_path, monkeypatch):
    """Between compactions a live pass's new episodes ride in the fingerprints file (the commit point):
    one file fsynced (plus its folder); the log is untouched; a crash before it leaves the state whole."""
    d = two_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    run_pass(ws, dirs=[d], **NO_HOME)
    slug = kitsoki_slug(ws.resolve())
    log = next((ws / ".artifacts" / "mining" / "state").glob("*.episodes.*"))
    log_bytes = log.read_bytes()
    with open(d / "s1.jsonl", "ab") as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in session_file(d, "s1", 1, start=5)))
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    report, _ = run_pass(ws, dirs=[d], **NO_HOME)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert report.files_read == 1 and len(synced) == 2  # the fingerprints file and its folder
    assert log.read_bytes() == log_bytes
    state = load_state(ws, slug)
    assert state._inline and len(state.all_episodes()) == 5
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    run_pass(fresh, dirs=[d], **NO_HOME)
    assert sorted((e.session, e.line_start) for e in state.all_episodes()) == sorted(
        (e.session, e.line_start) for e in load_state(fresh, kitsoki_slug(fresh.resolve())).all_episodes())


def test_a_recipes_file_lost_in_a_crash_is_made_again(tmp_path):
    """recipes.json is not fsynced; the state records its digest, and a pass that finds another one
    (cut short, or the one before) makes it again from the episodes instead of serving it."""
    from core.mining.passes import recipes_path

    d = two_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    run_pass(ws, dirs=[d], **NO_HOME)
    good = recipes_path(ws).read_bytes()
    recipes_path(ws).write_bytes(good[: len(good) // 2])
    report, recipes = run_pass(ws, dirs=[d], **NO_HOME)
    assert report.files_read == 0 and recipes_path(ws).read_bytes() == good


def test_the_episode_log_line_is_what_pydantic_would_write(tmp_path):
    """The log's lines are encoded by msgspec: the same bytes as the _LogLine model dumps, read back equal."""
    from core.mining.watermark import _line, _LogLine

    d = two_sessions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    run_pass(ws, dirs=[d], **NO_HOME)
    eps = load_state(ws, kitsoki_slug(ws.resolve())).all_episodes()
    assert eps
    fast = _line("/t/s1.jsonl", 1, eps)
    assert fast == _LogLine(f="/t/s1.jsonl", start=1, e=eps).model_dump_json().encode() + b"\n"
    assert _LogLine.model_validate_json(fast).e == eps


def _go_sessions(folder: Path, command: str) -> Path:
    for n in range(3):
        sid, records, parent = f"g{n}", [], None
        for i, ask in enumerate(("check the graph resolvers still pass", "fix the handset build")):
            a, b, c = uid(), uid(), uid()
            records += [prompt(a, parent, ask, session=sid, ts=f"2026-03-0{1 + n}T1{i}:00:00Z"),
                        tool_use(b, a, f"m{sid}{i}", f"t{sid}{i}", "Bash", {"command": command}, session=sid),
                        tool_result(c, b, f"t{sid}{i}", "ok", session=sid)]
            parent = c
        jsonl(folder / f"{sid}.jsonl", records)
    return folder


@pytest.mark.parametrize("command, expected", [
    ("go test ./services/public-graphql/internal/graph/...", set()),  # one package's tests: bare `go test` is not it
    ("go build ./services/handset/...", set()),
    ("go test -count=1 ./pkg/a ./pkg/b", set()),
    ("go test ./...", {("world", "test_cmd = go test ./...")}),  # the whole module: the project's test command
    ("cd api && go build", {("world", "build_cmd = go build")}),  # bare, as the person ran it
])
def test_a_go_run_of_part_of_the_project_is_not_its_command(tmp_path, command, expected):
    ws = tmp_path / "ws"
    ws.mkdir()
    _, recipes = run_pass(ws, dirs=[_go_sessions(tmp_path / "t", command)], **NO_HOME)
    assert {(r.kind, r.title) for r in recipes if r.kind == "world"} == expected
