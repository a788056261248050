"""The resolver: a repository's path to its Claude Code and Pi history, on a fake home."""

from pathlib import Path

from builders import pi_entry, pi_header, pi_user, prompt, uid
from conftest import jsonl
from core.transcripts.discover import claude_slug, discover, pi_dirname


def test_slug_rules_match_the_real_tools():
    assert claude_slug("/home/me/my_app.v2") == "-home-me-my-app-v2"
    assert claude_slug("/a/.b") == "-a--b"
    assert claude_slug("C:\\Users") == "C--Users"
    assert claude_slug("/home/\u0434\u043e\u043c") == "-home----"  # one dash per character
    assert pi_dirname("/Users/badlogic/workspaces/pi-mono") == "--Users-badlogic-workspaces-pi-mono--"
    assert pi_dirname("/home/me/my_app.v2") == "--home-me-my_app.v2--"  # pi keeps dots and underscores


def claude_session(root: Path, project: str, sid: str, text="hello") -> Path:
    return jsonl(root / claude_slug(project) / f"{sid}.jsonl",
                 [prompt(uid(), None, text, cwd=project, session=sid)])


def test_repo_finds_its_sessions_and_the_cwd_settles_a_lossy_slug(tmp_path):
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    claude_session(projects, "/src/my_app", "s-1")
    # `/src/my-app` has the same slug as `/src/my_app`: only the records' cwd tells them apart.
    claude_session(projects, "/src/my-app", "s-2")
    found = discover(Path("/src/my_app"), home=home, env={})
    assert [u.trunk.stem for u in found] == ["s-1"]
    found = discover(Path("/src/my-app"), home=home, env={})
    assert [u.trunk.stem for u in found] == ["s-2"]


def test_xdg_root_claude_config_dir_list_and_pi_root(tmp_path):
    home = tmp_path / "home"
    claude_session(home / ".config" / "claude" / "projects", "/src/app", "xdg")
    assert [u.trunk.stem for u in discover(Path("/src/app"), home=home, env={})] == ["xdg"]
    one, two = tmp_path / "c1", tmp_path / "c2"
    claude_session(one / "projects", "/src/app", "from-one")
    claude_session(two / "projects", "/src/app", "from-two")
    env = {"CLAUDE_CONFIG_DIR": f"{one}, {two}"}
    assert sorted(u.trunk.stem for u in discover(Path("/src/app"), home=home, env=env)) == ["from-one", "from-two"]
    pi_dir = tmp_path / "pi-agent"
    jsonl(pi_dir / "sessions" / pi_dirname("/src/app") / "2026-01-01T00-00-00-000Z_p1.jsonl",
          [pi_header(sid="p1", cwd="/src/app"), pi_entry("e1", None, pi_user("hi"))])
    found = discover(Path("/src/app"), home=home, env={**env, "PI_CODING_AGENT_DIR": str(pi_dir)})
    assert sorted((u.format, u.paths[0].stem) for u in found) == [
        ("claude", "from-one"), ("claude", "from-two"), ("pi", "2026-01-01T00-00-00-000Z_p1")]


def test_no_history_is_an_empty_result(tmp_path):
    assert discover(Path("/src/app"), home=tmp_path, env={}) == []
    assert discover(None, home=tmp_path, env={}) == []
    assert discover(None, [tmp_path / "missing"], home=tmp_path, env={}) == []


def test_subagent_files_join_their_trunk_and_orphans_stand_alone(tmp_path):
    d = tmp_path / "proj"
    jsonl(d / "s-1.jsonl", [prompt(uid(), None, "go", session="s-1")])
    jsonl(d / "s-1" / "subagents" / "agent-a1.jsonl", [prompt(uid(), None, "task", session="s-1")])
    jsonl(d / "s-1" / "subagents" / "agent-acompact-ff.jsonl", [prompt(uid(), None, "sum", session="s-1")])
    jsonl(d / "s-1" / "subagents" / "workflows" / "r1" / "journal.jsonl", [{"type": "x"}])
    jsonl(d / "agent-b2.jsonl", [prompt(uid(), None, "flat", session="s-1")])  # older flat layout
    jsonl(d / "gone" / "subagents" / "agent-c3.jsonl", [prompt(uid(), None, "orphan", session="gone")])
    units = discover(None, [d])
    by_trunk = {(u.trunk.stem if u.trunk else None): u for u in units}
    assert sorted(p.name for p in by_trunk["s-1"].subagents) == [
        "agent-a1.jsonl", "agent-acompact-ff.jsonl", "agent-b2.jsonl"]
    assert [p.name for p in by_trunk[None].subagents] == ["agent-c3.jsonl"]


def _first_fields_by_readline(path: Path, keys: tuple[str, ...]) -> dict:
    """first_fields as it was written first (a readline per line): the specification of its fast path."""
    import orjson

    found = dict.fromkeys(keys)
    wanted = {key: key.encode() for key in keys}
    with open(path, "rb") as fh:
        for _ in range(50):
            if not wanted:
                break
            raw = fh.readline(4 * 1024 * 1024)
            if not raw:
                break
            present = [key for key, needle in wanted.items() if needle in raw]
            if not present:
                continue
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if type(rec) is not dict:
                continue
            for key in present:
                value = rec.get(key)
                if type(value) is str:
                    found[key] = value
                    del wanted[key]
    return found


def test_first_fields_reads_the_first_fifty_lines_as_readline_does(tmp_path):
    import random

    from core.transcripts.discover import first_fields

    keys = ("entrypoint", "promptSource")
    rng = random.Random(17)
    pieces = [b'{"type":"user"}', b'{"entrypoint":"cli"}', b'{"entrypoint":1}', b'{"promptSource":"sdk"}',
              b'"entrypoint"', b'{"x":"entrypoint"}', b'not json entrypoint', b"", b"   ",
              b'{"entrypoint":"sdk-ts","promptSource":"sdk"}', b'{"pad":"' + b"a" * 70_000 + b'"}',
              b'{"pad":"' + b"b" * 5_000 + b'","promptSource":"typed"}']
    for case in range(300):
        lines = [rng.choice(pieces) for _ in range(rng.randint(0, 70))]
        body = b"\n".join(lines) + rng.choice([b"", b"\n"])
        path = tmp_path / f"{case}.jsonl"
        path.write_bytes(body)
        assert first_fields(path, keys) == _first_fields_by_readline(path, keys), (case, lines)
    long_line = tmp_path / "long.jsonl"  # a line readline cuts at 4 MiB: its pieces count as lines
    long_line.write_bytes(b'{"pad":"' + b"c" * (9 << 20) + b'"}\n{"entrypoint":"cli"}\n' * 3)
    assert first_fields(long_line, keys) == _first_fields_by_readline(long_line, keys)
    for path in Path(__file__).parent.joinpath("fixtures").rglob("*.jsonl"):
        assert first_fields(path, keys) == _first_fields_by_readline(path, keys), path
