"""Extraction: learnings mined from transcripts (synthetic and ../shared/corpus) with evidence cites
that point at real lines, and from a sessions.jsonl in the anchor's shape."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from core.learnings.extract import (
    from_sessions_jsonl,
    from_transcripts,
)
from core.transcripts.discover import discover
from core.transcripts.ingest import read_sessions
from tests.builders import prompt, tool_result, tool_use, uid
from tests.conftest import jsonl


def edit_session(path: Path, sid: str, files: list[str], *, fail: bool, commands=(), day: int = 10,
                 cwd="/work/proj") -> Path:
    ts = f"2026-02-{day:02d}T10:00:00.000Z"
    kw = dict(session=sid, cwd=cwd, ts=ts)
    p = uid()
    recs = [prompt(p, None, "please fix it", **kw)]
    last = p
    for n, f in enumerate(files):
        for attempt in range(2 if fail else 1):
            call, u, r = f"toolu_{uid()[-8:]}", uid(), uid()
            recs.append(tool_use(u, last, f"msg_{u[-6:]}", call, "Edit",
                                 {"file_path": f"{cwd}/{f}", "old_string": "a", "new_string": "b"}, **kw))
            failed = fail and attempt == 0
            text = ("<tool_use_error>String to replace not found in file.</tool_use_error>" if failed
                    else f"The file {cwd}/{f} has been updated successfully.")
            recs.append(tool_result(r, u, call, text, is_error=failed, **kw))
            last = r
    for cmd, out, err in commands:
        call, u, r = f"toolu_{uid()[-8:]}", uid(), uid()
        recs.append(tool_use(u, last, f"msg_{u[-6:]}", call, "Bash", {"command": cmd}, **kw))
        recs.append(tool_result(r, u, call, out, is_error=err, **kw))
        last = r
    return jsonl(path, recs)


def sessions_in(folder: Path):
    return read_sessions(discover(None, [folder]), workers=1)


def lines_of(file: str) -> list[bytes]:
    return Path(file).read_bytes().split(b"\n")


def assert_cites_real(finding):
    assert finding.cites and finding.source_session
    for c in finding.cites:
        lines = lines_of(c.file)
        assert 1 <= c.line <= len(lines) and lines[c.line - 1].strip().startswith(b"{")


def test_fragile_file_across_three_sessions_and_edit_fail_cycles(tmp_path):
    for i in range(3):
        edit_session(tmp_path / f"s{i}.jsonl", f"sess-{i}", ["src/app.py"], fail=False, day=10 + i)
    edit_session(tmp_path / "s9.jsonl", "sess-9", ["src/other.py", "src/other.py"], fail=True, day=20)
    found = {f.subject: f for f in from_transcripts(sessions_in(tmp_path)) if f.type == "fragile-file"}
    assert set(found) == {"src/app.py", "src/other.py"}
    assert "edited in 3 sessions" in found["src/app.py"].evidence and found["src/app.py"].file_paths == ["src/app.py"]
    assert "2 edit-fail cycles" in found["src/other.py"].insight
    assert found["src/other.py"].source_session == "sess-9"
    for f in found.values():
        assert_cites_real(f)
    # two sessions, no failures: nothing
    assert not [f for f in from_transcripts(sessions_in(tmp_path / "none")) if f.type == "fragile-file"]


def test_recurring_issue_stagnation_and_hardware(tmp_path):
    failing = [("cd /w && pytest -q tests/", "FAILED tests/test_a.py::test_x", True),
               ("make build", "exit 137 Killed", True)]
    for i in range(2):
        edit_session(tmp_path / f"s{i}.jsonl", f"sess-{i}", ["src/x.py"], fail=True, commands=failing, day=10 + i)
    edit_session(tmp_path / "ok.jsonl", "sess-ok", [], fail=False,
                 commands=[("pytest", "1 passed", False), ("ruff check .", "lint fine", False)], day=12)
    by_type: dict[str, list] = {}
    for f in from_transcripts(sessions_in(tmp_path), host_class="linux-16gb"):
        by_type.setdefault(f.type, []).append(f)
    [issue] = by_type["recurring-issue"]
    assert issue.subject == "test: pytest" and issue.evidence_sessions == ["sess-0", "sess-1"]
    [stag] = by_type["stagnation-class-frequency"]
    assert stag.subject == "src/x.py::edit-no-match"
    hw = [f for f in by_type.get("hardware-pattern", [])]
    assert [h.subject for h in hw] == ["oom-kill::linux-16gb"] and hw[0].scope == "private"
    assert hw[0].host_class == "linux-16gb" and len(hw[0].cites) <= 3
    for f in [issue, stag, *hw]:
        assert_cites_real(f)


def test_sessions_jsonl_heuristics(tmp_path):
    def s(i, rate, failed=0, ratio=None, stype="deep"):
        waves = [{"wave": 1, "role": "Discovery", "over_delivery_ratio": 9.0},
                 {"wave": 2, "role": "Impl-Core", "over_delivery_ratio": ratio}]
        return {"session_id": f"main-2026-07-1{i}", "session_type": stype,
                "started_at": f"2026-07-1{i}T08:00:00.000Z", "completed_at": f"2026-07-1{i}T09:00:00.000Z",
                "total_waves": 2, "waves": waves, "agent_summary": {"complete": 3, "partial": 0, "failed": failed,
                                                                    "spiral": 0},
                "effectiveness": {"planned_issues": 3, "completed": 1, "carryover": 1, "completion_rate": rate}}
    path = jsonl(tmp_path / "sessions.jsonl", [s(1, 0.5, 1, 1.5), s(2, 0.9, 1, 2.0), b"garbage", s(3, 1.0, 0, 1.0)])
    found = {f.type: f for f in from_sessions_jsonl(path)}
    assert found["scope-guidance"].evidence_sessions == ["main-2026-07-11"]
    assert found["recurring-issue"].subject == "agents-failed-or-partial"
    assert found["effective-sizing"].subject == "deep-wave-sizing" and "1.50x" in found["effective-sizing"].insight
    assert "deviation-pattern" in found
    lines = path.read_bytes().split(b"\n")
    for f in found.values():
        for c in f.cites:
            assert orjson.loads(lines[c.line - 1])["session_id"] == c.session


@pytest.mark.corpus
def test_corpus_findings_cite_real_lines(corpus):
    sessions = read_sessions(discover(None, [corpus]), workers=1)
    found = from_transcripts(sessions)
    subjects = {(f.type, f.subject) for f in found}
    assert ("fragile-file", "packages/coding-agent/src/core/index.ts") in subjects
    assert ("recurring-issue", "lint: npm run check") in subjects
    assert any(t == "recurring-issue" and "git commit" in s for t, s in subjects)
    for f in found:
        assert_cites_real(f)
        assert f.source_session in {s.id for s in sessions}
    # the failed edits of index.ts are cited at their tool results, which say so
    index = next(f for f in found if f.subject.endswith("core/index.ts"))
    texts = [lines_of(c.file)[c.line - 1] for c in index.cites]
    assert sum(b"Could not find the exact text" in t for t in texts) == 2
