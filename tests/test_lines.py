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
