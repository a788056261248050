"""The readers on real transcripts written by Claude Code and Pi (../shared/corpus).

Every expected figure here was counted by hand from the files (a separate json.loads pass over
each file, counting distinct tool_use ids by name and typed prompts), not taken from our output.
"""

from collections import Counter
from pathlib import Path

import pytest

from core.transcripts.claude import read_claude_session
from core.transcripts.discover import discover
from core.transcripts.ingest import read_sessions, scan
from core.transcripts.model import SubagentKind, TurnKind
from core.transcripts.pi import read_pi_session

pytestmark = pytest.mark.corpus

P4TE = "projects/-home-USER-projects-spotter-worktrees-spotter-4te/ae4a77f8-aedd-4bc1-888f-c94edc91af04"
PDOV = "projects/-home-USER-projects-spotter-worktrees-spotter-dov/4d5611e5-241a-462a-8d15-5122611a9569"


def names(session):
    return Counter(c.name for c in session.tool_calls())


def test_short_session_prompts_rejections_and_interrupt(corpus):
    s = read_claude_session(corpus / "claude-code/short.jsonl")
    assert [t.text for t in s.human_prompts] == ["mix phx.server doesnt seem to start"]
    assert s.human_prompts[0].source.line == 4
    assert names(s) == {"Bash": 1, "Glob": 1}
    assert s.rejected_tool_uses == 2 and s.interrupts == 1
    # Five assistant lines share one message.id: one assistant turn holding both tool calls.
    assistant = [t for t in s.turns if t.kind is TurnKind.assistant]
    assert len(assistant) == 1 and len(assistant[0].tool_calls) == 2
    assert (assistant[0].source.line, assistant[0].source.last_line) == (5, 10)
    acc = s.accounting
    assert (acc.lines_read, acc.parsed, acc.malformed, acc.skipped) == (15, 15, 0, 0)
    assert acc.metadata == 4  # 1 file-history-snapshot + 3 progress
    assert s.project == "/home/marco/projects/spotter" and s.models == ["claude-opus-4-6"]
    assert not s.agent_session


def test_tool_heavy_session(corpus):
    s = read_claude_session(corpus / "claude-code/tool_heavy.jsonl")
    assert [(t.source.line, t.text[:27]) for t in s.human_prompts] == [
        (4, "start phoenix in background"),
        (26, "scrolling back in xterm.js "),
    ]
    assert names(s) == {"Bash": 2, "WebSearch": 1, "Glob": 1, "Read": 1, "WebFetch": 1}
    assert s.interrupts == 2
    assert all(c.result is not None for c in s.tool_calls())
    assert s.accounting.metadata == 15  # 3 snapshots + 10 progress + 2 queue-operation
    reasons = Counter(t.reason for t in s.turns if t.kind is TurnKind.injected)
    assert reasons == {"meta": 1, "command": 1, "command-output": 1}


@pytest.mark.parametrize(
    "trunk, prompts, calls, task_call, task_agent, agent_calls",
    [
        (P4TE, [(7, "Work on bead spotter-4te."), (1491, "continue implementation")],
         {"Bash": 120, "Edit": 67, "Read": 37, "Write": 6, "Glob": 5, "WebFetch": 4, "Task": 1, "Skill": 1,
          "Grep": 1}, "toolu_01Hf8v1Za7y4af8VUwSR4CXU", "aac57f5", 12),
        (PDOV, [(7, "Work on bead spotter-dov."), (280, "continue")],
         {"Bash": 67, "Edit": 32, "Read": 31, "Grep": 10, "Write": 7, "Task": 1, "TaskOutput": 1,
          "AskUserQuestion": 1}, "toolu_017pLRuPHYTX5t99EnLyV53m", "a2898e3", 33),
    ],
)
def test_real_sessions_with_subagents(corpus, trunk, prompts, calls, task_call, task_agent, agent_calls):
    [unit] = discover(None, [corpus / "claude-code" / Path(trunk).parent])
    assert unit.trunk.name.endswith(".jsonl") and len(unit.subagents) == 2
    s = read_claude_session(unit.trunk, unit.subagents)
    assert [(t.source.line, t.text[: len(p)]) for (t, (_, p)) in zip(s.human_prompts, prompts)] == prompts
    assert len(s.human_prompts) == len(prompts)
    assert names(s) == calls
    by_kind = {a.kind: a for a in s.subagents}
    task = by_kind[SubagentKind.task]
    assert (task.agent_id, task.tool_use_id) == (task_agent, task_call)
    assert sum(len(t.tool_calls) for t in task.turns) == agent_calls
    assert all(t.kind is not TurnKind.human for t in task.turns)  # the Task prompt is not a person's
    [spawn] = [c for c in s.tool_calls() if c.id == task_call]
    assert spawn.subagent == task_agent
    assert by_kind[SubagentKind.compaction].agent_id.startswith("acompact-")
    # The compaction boundary continues the conversation instead of starting a new one.
    assert [t.reason for t in s.turns if t.kind is TurnKind.compaction] == ["compact_boundary", "compact-summary"]
    assert s.accounting.balanced and s.accounting.malformed == 0


def test_sessions_per_project_from_claude_config_dir(corpus):
    env = {"CLAUDE_CONFIG_DIR": str(corpus / "claude-code")}
    for project in ("spotter-4te", "spotter-dov"):
        repo = Path(f"/home/USER/projects/spotter-worktrees/{project}")
        units = discover(repo, env=env, home=Path("/nonexistent"))
        assert len(units) == 1 and len(units[0].subagents) == 2
    assert len(discover(None, env=env, home=Path("/nonexistent"))) == 2


def test_whole_corpus_scan_counts_a_copied_subagent_once(corpus):
    report = scan(discover(None, [corpus]), workers=1)
    by_id = {s.id[:8]: s for s in report.sessions}
    assert set(by_id) == {"55604662", "d6e0bada", "ae4a77f8", "4d5611e5", "ffae836b", "019e19b4"}
    # corpus/claude-code/agent-aac57f5.jsonl is a flat copy of the nested subagent file:
    # it joins its session by sessionId and its 4 conversation turns (12 tool calls) count once.
    assert by_id["ae4a77f8"].files == 4 and by_id["ae4a77f8"].duplicates == 4
    assert by_id["4d5611e5"].duplicates == 5  # the flat copy of the compaction agent
    assert by_id["ae4a77f8"].tool_calls == 242 + 12
    assert report.totals.lines == report.totals.parsed  # nothing malformed in real files
    full = {s.id[:8]: s for s in read_sessions(discover(None, [corpus]), workers=2)}
    assert len(full["ae4a77f8"].tool_calls(include_subagents=True)) == 254


def test_pi_v3_small(corpus):
    s = read_pi_session(corpus / "pi/small.jsonl")
    assert s.format_version == 3 and s.id == "019e19b4-eb48-746a-aa6b-8dfcfa37954b"
    assert [t.text for t in s.human_prompts] == [
        "Read hello.py and summarize what it prints without editing files.",
        "Add one concise follow-up sentence.",
    ]
    assert [t.kind for t in s.turns].count(TurnKind.compaction) == 2
    assert all(t.active for t in s.turns)
    assert s.models == ["pi-fixture-model"] and s.project == "/tmp/as-agent-fixture/project"


def test_pi_v1_is_migrated_in_memory(corpus):
    path = corpus / "pi/v1-before-compaction.jsonl"
    before = path.read_bytes()
    s = read_pi_session(path)
    assert path.read_bytes() == before  # never rewritten
    assert s.format_version == 1
    assert len(s.human_prompts) == 55
    calls = s.tool_calls()
    assert sum(1 for c in calls if not c.by_human) == 454
    assert [c.input["command"] for c in calls if c.by_human][0] == "ls"
    assert sum(1 for c in calls if c.by_human) == 3
    assert s.interrupts == 18  # assistant turns stopped with stopReason "aborted"
    # 448 toolResult messages answer 448 of the 454 calls; the rest were cut off by aborts.
    assert sum(1 for c in calls if c.result is not None and not c.by_human) == 448
    assert s.accounting.lines_read == s.accounting.parsed == 1003


def test_redaction_leaves_real_transcripts_alone(corpus):
    """The real sessions hold no secret (their authors sanitized them), so every placeholder in what the
    readers and the runs evidence produce from them would be a false positive: there are none, with
    the bare-key and client-password rules on (8.5 MB: code, logs, base64 signatures, paths)."""
    import re

    import orjson

    from core.runs.evidence import file_pieces
    from core.transcripts.model import session_to_json

    placeholder = re.compile(r".{0,40}\[REDACTED:[a-z\-]+\].{0,20}")
    sessions = read_sessions(discover(None, [corpus]), workers=1)
    found = placeholder.findall(orjson.dumps([session_to_json(s) for s in sessions]).decode())
    for s in sessions:
        for f in s.files:
            found += [m for _, text in file_pieces(s.id, s.format, Path(f)) for m in placeholder.findall(text)]
    assert found == []


def _echo(*job):
    return job


def test_parallel_map_hands_every_job_back_once_in_batches_or_alone():
    """Big jobs go alone, small ones in batches (core/transcripts/ingest.py BATCH_BYTES); with two
    workers every job's result comes back exactly once, and progress reaches the total."""
    import random

    from core.transcripts.ingest import BATCH_BYTES, _batches, parallel_map

    rng = random.Random(5)
    sizes = [rng.choice([10, 2_000, 300_000, BATCH_BYTES - 1, BATCH_BYTES, 3 * BATCH_BYTES]) for _ in range(400)]
    jobs = [(i, size) for i, size in enumerate(sizes)]
    order = sorted(range(len(jobs)), key=lambda i: sizes[i], reverse=True)
    units = _batches(order, sizes)
    assert sorted(i for unit in units for i in unit) == list(range(len(jobs)))
    assert all(len(unit) == 1 for unit in units if sum(sizes[i] for i in unit) >= 2 * BATCH_BYTES)
    seen = []
    results = list(parallel_map(_echo, jobs, sizes, workers=2, progress=lambda done, total: seen.append((done, total))))
    assert sorted(results) == sorted(jobs)
    assert seen[-1] == (sum(sizes), sum(sizes))


def test_parallel_map_takes_a_smaller_batch_size_and_still_hands_every_job_back_once():
    """The seed pass batches small transcripts by MINE_BATCH_BYTES (2 MB), not BATCH_BYTES: units are
    smaller, and every job still comes back exactly once."""
    import random

    from core.mining.passes import MINE_BATCH_BYTES
    from core.transcripts.ingest import BATCH_BYTES, _batches, parallel_map

    assert MINE_BATCH_BYTES < BATCH_BYTES
    rng = random.Random(7)
    sizes = [rng.choice([10, 300_000, MINE_BATCH_BYTES - 1, MINE_BATCH_BYTES, 3 * MINE_BATCH_BYTES]) for _ in range(300)]
    jobs = [(i, size) for i, size in enumerate(sizes)]
    order = sorted(range(len(jobs)), key=lambda i: sizes[i], reverse=True)
    units = _batches(order, sizes, MINE_BATCH_BYTES)
    assert len(units) > len(_batches(order, sizes))
    assert sorted(i for unit in units for i in unit) == list(range(len(jobs)))
    assert all(sum(sizes[i] for i in unit) < 2 * MINE_BATCH_BYTES or len(unit) == 1 for unit in units)
    results = list(parallel_map(_echo, jobs, sizes, workers=2, batch_bytes=MINE_BATCH_BYTES))
    assert sorted(results) == sorted(jobs)
