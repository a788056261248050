"""Messy files real users have: every bad line is counted with its file and line, none is fatal."""

import orjson
import pytest

from builders import pi_entry, pi_header, pi_user, prompt, say, uid
from conftest import jsonl
from core.transcripts.claude import read_claude_session
from core.transcripts.lines import LineReader
from core.transcripts.model import ProblemKind
from core.transcripts.pi import read_pi_session


def problems(session):
    return [(p.kind, p.line) for p in session.problems]


def good_claude_lines():
    a, b = uid(), uid()
    return [prompt(a, None, "run the tests"), say(b, a, "msg_1", "ok")]


def test_blank_lines_are_skipped_and_counted(tmp_path):
    recs = good_claude_lines()
    path = jsonl(tmp_path / "s.jsonl", [recs[0], "", "   ", recs[1], "\t"])
    s = read_claude_session(path)
    acc = s.accounting
    assert (acc.lines_read, acc.parsed, acc.malformed, acc.skipped) == (5, 2, 0, 3)
    assert len(s.human_prompts) == 1


def test_torn_last_line_of_a_file_being_written(tmp_path):
    recs = good_claude_lines()
    torn = orjson.dumps(say(uid(), recs[1]["uuid"], "msg_2", "half"))[:40]
    path = jsonl(tmp_path / "s.jsonl", recs + [torn], trailing_newline=False)
    s = read_claude_session(path)
    assert problems(s) == [(ProblemKind.torn_tail, 3)]
    assert (s.accounting.parsed, s.accounting.malformed) == (2, 1)
    assert s.accounting.balanced


def test_two_objects_glued_on_one_line_are_both_recovered(tmp_path):
    a, b, c = uid(), uid(), uid()
    glued = orjson.dumps(say(b, a, "msg_1", "first")) + orjson.dumps(prompt(c, b, "second prompt"))
    path = jsonl(tmp_path / "s.jsonl", [prompt(a, None, "first prompt"), glued])
    s = read_claude_session(path)
    assert [t.text for t in s.human_prompts] == ["first prompt", "second prompt"]
    assert problems(s) == [(ProblemKind.glued, 2)]
    assert s.human_prompts[1].source.line == 2
    assert s.accounting.balanced and s.accounting.parsed == 2


def test_invalid_utf8_is_replaced_not_fatal(tmp_path):
    a = uid()
    line = orjson.dumps(prompt(a, None, "caf\u00e9 XX")).replace(b"XX", b"\xff\xfe")
    path = jsonl(tmp_path / "s.jsonl", [line])
    s = read_claude_session(path)
    assert s.human_prompts[0].text.startswith("café ")
    assert "\ufffd" in s.human_prompts[0].text
    assert problems(s) == [(ProblemKind.invalid_utf8, 1)]


def test_binary_garbage_and_non_objects_are_malformed(tmp_path):
    recs = good_claude_lines()
    garbage = bytes(range(256)).replace(b"\n", b"")
    path = jsonl(tmp_path / "s.jsonl", [recs[0], garbage, "[1, 2]", "42", "{not json", recs[1]])
    s = read_claude_session(path)
    assert [k for k, _ in problems(s)] == [ProblemKind.malformed] * 4
    assert [line for _, line in problems(s)] == [2, 3, 4, 5]
    acc = s.accounting
    assert (acc.lines_read, acc.parsed, acc.malformed) == (6, 2, 4)
    assert "line" in repr(s.problems[0]) and s.problems[0].file == str(path)


def test_a_100_mb_line_is_skipped_without_being_held(tmp_path):
    recs = good_claude_lines()
    path = tmp_path / "s.jsonl"
    with open(path, "wb") as fh:
        fh.write(orjson.dumps(recs[0]) + b"\n")
        fh.write(b'{"type":"user","message":{"content":"')
        chunk = b"x" * (1024 * 1024)
        for _ in range(100):
            fh.write(chunk)
        fh.write(b'"}}\n')
        fh.write(orjson.dumps(recs[1]) + b"\n")
    s = read_claude_session(path)
    assert [(p.kind, p.line) for p in s.problems] == [(ProblemKind.oversized, 2)]
    acc = s.accounting
    assert (acc.lines_read, acc.parsed, acc.skipped) == (3, 2, 1)
    assert len(s.turns) == 2  # the line after the huge one is read normally


def test_the_line_limit_is_a_parameter(tmp_path):
    path = jsonl(tmp_path / "s.jsonl", [{"type": "x", "pad": "y" * 5000}, {"type": "x"}])
    reader = LineReader(path, max_line_bytes=1000)
    assert [n for n, _ in reader] == [2]
    assert reader.accounting.skipped == 1 and reader.problems[0].kind is ProblemKind.oversized


def test_unknown_record_types_pass_through_counted(tmp_path):
    recs = good_claude_lines()
    path = jsonl(tmp_path / "s.jsonl", [recs[0], {"type": "brand-new-thing", "x": 1}, recs[1],
                                        {"type": "ai-title", "aiTitle": "Fix the tests"}])
    s = read_claude_session(path)
    assert s.accounting.unknown == 1 and s.accounting.metadata == 1
    assert s.accounting.by_type["brand-new-thing"] == 1
    assert s.title == "Fix the tests"
    assert len(s.turns) == 2


@pytest.mark.parametrize("content", [b"", b"\n\n", b"\xff\xfe\xfd", b"{}", b'{"type":"session"}'])
def test_pi_reader_survives_degenerate_files(tmp_path, content):
    path = tmp_path / "p.jsonl"
    path.write_bytes(content)
    s = read_pi_session(path)
    assert s.accounting.balanced and s.format == "pi"


def test_pi_file_without_header_is_read_and_reported(tmp_path):
    path = jsonl(tmp_path / "2026-01-01T00-00-00-000Z_abc.jsonl",
                 [pi_entry("e1", None, pi_user("hello there"))])
    s = read_pi_session(path)
    assert s.id == "abc"
    assert [p.kind for p in s.problems] == [ProblemKind.unsupported]
    assert [t.text for t in s.human_prompts] == ["hello there"]


def test_pi_header_only_counts_as_parsed(tmp_path):
    s = read_pi_session(jsonl(tmp_path / "p.jsonl", [pi_header()]))
    assert s.accounting.parsed == 1 and s.turns == []
