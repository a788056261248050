"""Mining's steps reader (core/transcripts/steps.py) and the full reader give the same episodes.

Both are run on every Claude file of the shared corpus, every transcript fixture, the demo's
transcripts, every damaged file of tests/nothing_lost.py (each bad line in each format), a generated
corpus and random transcripts; episodes are cut from each (the full reader's turns through
episodes(), the steps through step_episodes()) and compared byte for byte, with the envelope,
the books and where a later read resumes. The same is done for a resumed read from the middle of each
file, with the episode it continues.
"""

from __future__ import annotations

import copy
import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nothing_lost
from builders import envelope, prompt, say, tool_result, tool_use, uid
from core.mining import phrasing
from core.mining.episodes import argument_of, attach_results, episodes, step_episodes
from core.mining.signatures import action_signature
from core.mining.watermark import _ENCODE, _line
from core.transcripts.claude import read_claude_file, session_launch
from core.transcripts.discover import discover
from core.transcripts.model import Session
from core.transcripts.records import TOOL_INPUT_KEYS
from core.transcripts.steps import read_claude_steps

pytestmark = pytest.mark.corpus


def _claude_files(tmp_path_factory) -> list[tuple]:
    root = tmp_path_factory.mktemp("steps")
    folders = [nothing_lost.SHARED_CORPUS, nothing_lost.HERE / "fixtures" / "transcripts",
               nothing_lost.REPO / "core" / "demo"]
    bad = nothing_lost._bad_files(root)
    folders += sorted(case for fmt in bad.iterdir() for case in fmt.iterdir())
    import transcript_world as W  # tests/adversarial: a secret of each kind planted in every field

    for kind in W.KINDS:
        files = W.world("claude")
        W.plant_content(files, kind, seed=len(kind))
        folders.append(W.write_world(files, root / "planted" / kind))
    for key in W.structural_keys(W.world("claude")):
        files = W.world("claude")
        W.plant_structural(files, key, seed=len(key))
        folders.append(W.write_world(files, root / "planted-ids" / key))
    import gen_corpus

    gen_corpus.generate(root / "generated", 16, 3, 11, quiet=True)
    folders.append(root / "generated" / "projects")
    out = []
    for unit in (u for folder in folders for u in discover(None, [folder])):
        if unit.format != "claude":
            continue
        if unit.trunk is not None:
            out.append((unit.trunk, False))
        out += [(p, True) for p in unit.subagents]
    return out


@pytest.fixture(scope="module")
def claude_files(tmp_path_factory):
    return _claude_files(tmp_path_factory)


def _encoded(eps) -> list[bytes]:
    return [_ENCODE(e) for e in eps]


def _full(path, sidechain, carry=None, **at):
    file = read_claude_file(path, sidechain=sidechain, **at)
    who = dict(id=file.session_id or path.stem, project=file.cwd,
               agent_session=session_launch(file, [file]).agent)
    session = Session(format="claude", files=[str(path)], turns=file.turns, **who)
    return file, list(episodes(session, carry=carry))


def _steps(path, sidechain, carry=None, **at):
    read = read_claude_steps(path, sidechain=sidechain, **at)
    file = read.file
    eps = step_episodes(read.steps, session=file.session_id or path.stem, project=file.cwd,
                        agent_session=session_launch(file, [file]).agent, file=str(path),
                        carry=carry)
    return read, list(eps)


ENVELOPE = ("session_id", "session_ids", "cwd", "entrypoint", "prompt_source", "first_ts", "last_ts", "version",
            "git_branch", "agent_id", "end_offset", "last_line", "accounting", "origin", "kitsoki", "signs")


def _same(path, sidechain, carry_full=None, carry_steps=None, **at):
    file, full = _full(path, sidechain, carry_full, **at)
    read, fast = _steps(path, sidechain, carry_steps, **at)
    assert _encoded(fast) == _encoded(full), (path, at)
    for name in ENVELOPE:
        assert getattr(read.file, name) == getattr(file, name), (path, name)
    outcomes = {k: (r.is_error, r.interrupted, r.rejected, r.exit_code) for k, r in file.orphan_results.items()}
    assert {k: (r.is_error, r.interrupted, r.rejected, r.exit_code)
            for k, r in read.orphan_results.items()} == outcomes, path
    return file, full, read


def test_steps_give_the_full_readers_episodes_everywhere(claude_files):
    assert len(claude_files) > 200
    episodes_seen = 0
    for path, sidechain in claude_files:
        _file, full, _read = _same(path, sidechain)
        episodes_seen += len(full)
    assert episodes_seen > 200


def test_a_resumed_read_continues_the_same_episode(claude_files):
    for path, sidechain in claude_files[::3]:
        data = path.read_bytes()
        lines = data.split(b"\n")
        if len(lines) < 4:
            continue
        half = len(lines) // 2
        offset = sum(len(x) + 1 for x in lines[:half])
        head = path.with_name(path.stem + ".head.jsonl")
        head.write_bytes(data[:offset])
        try:
            _, before = _full(head, sidechain)
        finally:
            head.unlink()
        carry = before[-1] if before else None
        at = dict(start=offset, first_line=half + 1)
        file = read_claude_file(path, sidechain=sidechain, **at)
        read = read_claude_steps(path, sidechain=sidechain, **at)
        carry_full, carry_steps = copy.deepcopy(carry), copy.deepcopy(carry)
        if carry is not None:
            attach_results(carry_full, file.orphan_results)
            attach_results(carry_steps, read.orphan_results)
            assert _ENCODE(carry_full) == _ENCODE(carry_steps), path
        _same(path, sidechain, carry_full, carry_steps, **at)


# -- random transcripts ---------------------------------------------------------------------------

_texts = st.sampled_from(["fix the tests", "run make test please", "[Request interrupted by user]", "",
                          "<bash-input>git push</bash-input>", "<bash-input>cat .env</bash-input>",
                          "<bash-stdout>ok</bash-stdout><bash-stderr>x</bash-stderr>",
                          "<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>",
                          "<command-name>/clear</command-name>", "deploy with password=hunter2hunter2 now",
                          "The user doesn't want to proceed with this tool use", "Exit code 2\nfailed"])
_values = st.one_of(st.text(max_size=12), st.sampled_from(
    ["make test", "pytest -q", "cd /work/proj && make build", "/work/proj/a.py", "git push origin main",
     "export TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "mysql -psecretpass99 db", "x" * 600]),
    st.integers(), st.none(), st.lists(st.integers(), max_size=2), st.booleans(), st.just({}), st.just({"a": 1}))
_inputs = st.one_of(
    st.dictionaries(st.sampled_from(TOOL_INPUT_KEYS + ("content", "old_string", "api_key", "password")), _values,
                    max_size=5),
    st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=2))
_step = st.tuples(
    st.sampled_from(["prompt", "prompt", "use", "use", "say", "result", "result", "system", "progress", "summary"]),
    st.sampled_from(["previous", "previous", "previous", "earlier", "none", "later", "garbage", "repeat"]),
    st.sampled_from(["msg_1", "msg_2", "msg_3", "msg_4", None, 4]),
    st.sampled_from(["toolu_1", "toolu_2", "toolu_3", "toolu_4", 5, None]), _texts,
    st.sampled_from(["Bash", "Edit", "Read", "AskUserQuestion", "Task", "Skill", 3]), _inputs, st.booleans(),
    st.sampled_from([None, "User rejected tool use", {"interrupted": True}, {"interrupted": "yes"}, [1]]),
    st.integers(0, 1000))


def _transcript(steps) -> list[dict]:
    """Records chained as Claude Code chains them (each names the one before), with forks, records
    named before they come, repeated and broken ids."""
    out = []
    for i, (kind, link, msg, call, text, name, inp, err, extra, pick) in enumerate(steps):
        me = uid(i + 1) if link != "repeat" or not out else out[pick % len(out)]["uuid"]
        parent = {"previous": uid(i) if i else None, "earlier": uid(pick % (i + 1) + 1) if i else None,
                  "none": None, "later": uid(i + 2 + pick % 3), "garbage": 7, "repeat": uid(i) if i else None}[link]
        if kind == "prompt":
            rec = prompt(me, parent, text)
        elif kind == "use":
            rec = tool_use(me, parent, msg, call, name, inp)
        elif kind == "say":
            rec = say(me, parent, msg, text)
        elif kind == "result":
            rec = tool_result(me, parent, call, text, is_error=err, extra=extra)
        elif kind == "system":
            rec = envelope("system", me, None, subtype="compact_boundary", logicalParentUuid=parent, content=text)
        else:
            rec = envelope(kind, me, parent, data={"type": "agent_progress", "agentId": "a1"},
                           parentToolUseID="toolu_1")
        out.append(rec)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_step, min_size=1, max_size=40), sidechain=st.booleans(), cut=st.integers(0, 40))
def test_random_transcripts_give_the_same_episodes(tmp_path_factory, steps, sidechain, cut):
    path = tmp_path_factory.mktemp("r") / "s.jsonl"
    lines = [json.dumps(r).encode() for r in _transcript(steps)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    _, full, _ = _same(path, sidechain)
    cut = min(cut, len(lines))
    _same(path, sidechain, start=sum(len(x) + 1 for x in lines[:cut]), first_line=cut + 1)


def test_the_cases_random_transcripts_rarely_reach(tmp_path):
    """A person's own `!` command whose output ends the episode, a result read before its call, a call
    id used twice, a fork back to an earlier turn, a response split over lines."""
    a, b, c, d, e, f, g, h, i, j = (uid() for _ in range(10))
    records = [
        prompt(a, None, "clean the build"),
        tool_result(b, a, "toolu_9", "Exit code 1\nboom", is_error=True),
        tool_use(c, b, "msg_1", "toolu_9", "Bash", {"command": "make clean", "content": "x" * 2000}),
        tool_use(d, c, "msg_1", "toolu_9", "Bash", {"command": "make clean again"}),
        tool_result(e, d, "toolu_9", "User rejected tool use", extra="User rejected tool use"),
        prompt(f, a, "no, rebuild it instead"),  # a fork: its parent is the first prompt
        prompt(g, f, "<bash-input>make build</bash-input>"),
        prompt(h, g, "<bash-stdout></bash-stdout><bash-stderr>error: no rule</bash-stderr>"),
        prompt(i, c, "back on the first branch"),
        say(j, i, "msg_2", "done"),
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    _, full, _ = _same(path, False)
    assert [len(ep.actions) for ep in full] == [2, 0, 1]
    assert full[2].actions[0].by_human and full[2].actions[0].is_error and full[2].line_end == 8


# -- what the steps keep of a tool input ----------------------------------------------------------

class _Watched(dict):
    """A tool input that records the keys it is asked for."""

    asked: set = set()

    def get(self, key, default=None):
        _Watched.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        _Watched.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        _Watched.asked.add(key)
        return super().__contains__(key)


@given(name=st.sampled_from(["Bash", "bash", "shell", "Edit", "Write", "Read", "Skill", "SlashCommand", "Task",
                             "Agent", "Grep", "WebFetch", "x"]),
       inp=st.dictionaries(st.sampled_from(TOOL_INPUT_KEYS + ("content", "old_string", "description")),
                           st.one_of(st.text(max_size=10), st.just("make test"), st.integers(), st.none()),
                           max_size=6))
def test_signatures_and_arguments_read_only_the_keys_the_steps_keep(name, inp):
    _Watched.asked = set()
    watched = _Watched(inp)
    reduced = {k: v for k, v in inp.items() if k in TOOL_INPUT_KEYS}
    assert action_signature(name, watched, "/work/proj") == action_signature(name, reduced, "/work/proj")
    assert argument_of(watched) == argument_of(reduced)
    assert _Watched.asked <= set(TOOL_INPUT_KEYS)


# -- fast paths that must say what the plain code says ----------------------------------------------

@given(text=st.text(alphabet="ab.f/~@-_ 0123456789abcdef#.\n\t:xyz\u0663\u00e9PYml", max_size=80),
       tail=st.sampled_from(["", ".py", ".yaml", "/x", " a.md", " deadbeef", " v1.2.3", " #12"]))
def test_prompt_normalization_is_the_plain_patterns(text, tail):
    assert phrasing.normalize(text + tail) == phrasing.normalize_plainly(text + tail)


def test_prompt_normalization_on_every_corpus_prompt(claude_files):
    for path, sidechain in claude_files[::2]:
        _, eps = _steps(path, sidechain)
        for ep in eps:
            assert phrasing.normalize(ep.prompt) == phrasing.normalize_plainly(ep.prompt)


def test_episode_log_line_is_msgspecs_whole_line(claude_files):
    for path, sidechain in claude_files[::5]:
        _, eps = _steps(path, sidechain)
        for start in (0, 1):
            whole = msgspec.json.encode({"f": str(path), "start": start, "e": eps[start:]}) + b"\n"
            assert _line(str(path), start, eps[start:]) == whole


def test_episodes_cross_from_a_worker_unchanged(claude_files):
    """Episodes are pickled as msgspec's JSON of them (Episode.__reduce__): every field comes back as
    it was, a timestamp with an offset in seconds too."""
    import pickle
    from datetime import datetime, timedelta, timezone

    eps = []
    for path, sidechain in claude_files[::4]:
        eps += _steps(path, sidechain)[1]
    odd = copy.copy(eps[0])
    odd.timestamp = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone(timedelta(seconds=3630, microseconds=25)))
    naive = copy.copy(eps[0])
    naive.timestamp = datetime(2026, 1, 2)
    eps += [odd, naive]
    back = pickle.loads(pickle.dumps(eps, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == eps and [repr(e) for e in back] == [repr(e) for e in eps]
    assert back[-2].timestamp.utcoffset() == timedelta(seconds=3630, microseconds=25)


def test_no_kept_input_key_names_a_secret():
    """The steps reader redacts a kept input string as text (redact_text), which is what redact_value
    does to a string under a key that names no secret and is not one itself."""
    from core.transcripts.redact import _key_info, redact_text, redact_value

    for key in TOOL_INPUT_KEYS:
        assert _key_info(key) is None and redact_text(key) is key
        value = "deploy --token ghp_" + "a1B2" * 10
        assert redact_value({key: value}) == {key: redact_text(value)}
