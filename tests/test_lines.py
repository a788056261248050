"""Resuming a growing file from where the last read stopped."""

import orjson

from conftest import jsonl
from core.transcripts.lines import LineReader


def test_resume_reads_only_appended_lines_and_rereads_a_torn_tail(tmp_path):
    path = jsonl(tmp_path / "t.jsonl", [{"n": 1}, {"n": 2}])
    with open(path, "ab") as fh:
        fh.write(b'{"n": 3')  # being written
    first = LineReader(path)
    assert [rec["n"] for _, rec in first] == [1, 2]
    assert first.accounting.malformed == 1 and first.end_offset == len(b'{"n":1}\n{"n":2}\n')
    with open(path, "ab") as fh:
        fh.write(b"}\n" + orjson.dumps({"n": 4}) + b"\n")
    again = LineReader(path, start=first.end_offset, first_line=3)
    assert [(line, rec["n"]) for line, rec in again] == [(3, 3), (4, 4)]
    assert (again.accounting.lines_read, again.accounting.parsed) == (2, 2)
    assert again.end_offset == path.stat().st_size


def test_lines_too_deep_or_with_a_lone_surrogate_are_malformed_not_fatal(tmp_path):
    """orjson reads 1,024 levels; past that json's decoder would recurse until RecursionError. A lone
    surrogate escape is not text: no file or store could hold it. Both are counted, named, skipped."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join([
        b"[" * 5000 + b"]" * 5000,
        b'{"a":' * 1100 + b"1" + b"}" * 1100,
        b'{"text": "deploy \\ud800 now"}',
        b'{"ok": "\\ud83d\\ude00"}',  # a surrogate pair is a character: read
        b'{"ok": 1}{"glued": "\\udfff"}',
    ]) + b"\n")
    reader = LineReader(path)
    assert [(line, rec) for line, rec in reader] == [(4, {"ok": "\U0001F600"})]
    acc = reader.accounting
    assert (acc.lines_read, acc.parsed, acc.malformed) == (5, 1, 4)
    assert [(p.line, p.detail) for p in reader.problems] == [
        (1, "nested too deeply to read"), (2, "nested too deeply to read"),
        (3, "a lone surrogate escape (not text)"), (5, "a lone surrogate escape (not text)")]


def test_a_readable_line_nesting_deep_is_kept_to_a_bounded_depth(tmp_path):
    from core.transcripts.claude import read_claude_session
    from core.transcripts.normalize import DEEPER, INPUT_DEPTH

    nested = b'{"a":' * 1000 + b"1" + b"}" * 1000  # orjson reads it; orjson cannot write it back
    line = (b'{"type":"assistant","uuid":"u1","sessionId":"s","message":{"id":"m","role":"assistant","content":'
            b'[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls","deep":' + nested + b"}}]}}")
    path = tmp_path / "t.jsonl"
    path.write_bytes(line + b"\n")
    [call] = read_claude_session(path).tool_calls()
    assert call.input["command"] == "ls"
    value, depth = call.input["deep"], 1
    while isinstance(value, dict):
        value, depth = value["a"], depth + 1
    assert value == DEEPER and depth == INPUT_DEPTH
    orjson.dumps(call.input)  # storable
