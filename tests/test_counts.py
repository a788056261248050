"""The counts-only path (`sessions`) and the full reader agree on every session we have.

Both are run on every session of the shared corpus, every transcript fixture, the demo's transcripts,
every damaged file of tests/nothing_lost.py (each bad line in each format) and a generated corpus, and
must give the same summary, the same turn keys (the cross-session duplicate count) and the same line
accounting.
"""

from __future__ import annotations

import shutil

import orjson
import pytest

import nothing_lost
from builders import prompt, tool_result, tool_use, uid
from conftest import jsonl
from core.transcripts.counts import count_claude_session
from core.transcripts.discover import discover
from core.transcripts.ingest import _turn_keys, count_session, read_session, summarize

pytestmark = pytest.mark.corpus


def _units(tmp_path_factory):
    root = tmp_path_factory.mktemp("counts")
    folders = [nothing_lost.SHARED_CORPUS, nothing_lost.HERE / "fixtures" / "transcripts",
               nothing_lost.REPO / "core" / "demo"]
    bad = nothing_lost._bad_files(root)
    folders += sorted(case for fmt in bad.iterdir() for case in fmt.iterdir())
    import gen_corpus

    gen_corpus.generate(root / "generated", 16, 3, 7, quiet=True)
    folders.append(root / "generated" / "projects")
    return [u for folder in folders for u in discover(None, [folder])]


@pytest.fixture(scope="module")
def units(tmp_path_factory):
    return _units(tmp_path_factory)


def _effect(keys):
    """What the duplicate count takes from turn keys: the first key seen per id (a file's keys come in
    its file's order from one path, conversation order from the other: ids are unique within a file,
    so only the order of files matters), and the repeats."""
    first, repeats = {}, []
    for key in keys:
        if key[0] in first:
            repeats.append(key)
        else:
            first[key[0]] = key
    return sorted(first.values()), sorted(repeats)


def _compare(unit, redact):
    session = read_session(unit, redact=redact)
    full = (summarize(session).model_dump(mode="json"), _effect(_turn_keys(session)))
    fast = count_session(unit, redact)
    assert (fast[0].model_dump(mode="json"), _effect(fast[1])) == full, unit.paths
    if unit.format == "claude":
        counted = count_claude_session(unit.trunk, unit.subagents, redact=redact)
        if counted is not None:
            assert counted[2] == session.accounting, unit.paths
        return counted is not None
    return False


def test_counts_match_the_full_reader_everywhere(units):
    counted = sum(_compare(u, redact=True) for u in units)
    assert len(units) > 250
    # The counts-only path answered for nearly every Claude session (not handed to the full reader).
    claude = sum(1 for u in units if u.format == "claude")
    assert counted >= 0.9 * claude, (counted, claude)


def test_counts_match_without_redaction(units):
    for unit in units[::7]:
        _compare(unit, redact=False)


def test_a_refusal_written_with_escapes_or_in_blocks_is_still_seen(tmp_path):
    a, b, c, d, e = (uid() for _ in range(5))
    recs = [prompt(a, None, "clean the build"),
            tool_use(b, a, "msg_1", "toolu_1", "Bash", {"command": "rm -rf build"}),
            tool_result(c, b, "toolu_1", "\u0055ser rejected tool use"),
            tool_use(d, c, "msg_2", "toolu_2", "Bash", {"command": "rm -rf dist"}),
            tool_result(e, d, "toolu_2", [{"type": "text", "text": "The user doesn't want to proceed with this tool use"}])]
    path = jsonl(tmp_path / "s.jsonl", recs)
    raw = path.read_bytes().replace(b"User rejected tool use", b"\\u0055ser rejected tool use")
    path.write_bytes(raw)
    [unit] = discover(None, [path])
    summary, _keys = count_session(unit)
    assert summary.rejected_tool_uses == 2 and summary.tool_calls == 2 and summary.human_prompts == 1
    _compare(unit, redact=True)


def test_a_line_msgspec_cannot_nest_that_deep_is_read_as_before(tmp_path):
    """orjson reads 1,024 levels, msgspec stops near Python's recursion limit: such a line takes the
    dict path, converted to the same record, and is counted the same."""
    a, b = uid(), uid()
    deep = b'{"a":' * 1010 + b"1" + b"}" * 1010
    use = orjson.dumps(tool_use(b, a, "msg_1", "toolu_1", "Bash", {"command": "ls", "deep": "<<d>>"}))
    path = jsonl(tmp_path / "s.jsonl", [prompt(a, None, "list it"), use.replace(b'"<<d>>"', deep)])
    [unit] = discover(None, [path])
    summary, _ = count_session(unit)
    assert (summary.lines, summary.malformed, summary.tool_calls) == (2, 0, 1)
    assert _compare(unit, redact=True)
    shutil.rmtree(tmp_path)
