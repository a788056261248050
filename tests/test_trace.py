"""core.trace writes lines kitsoki's Go writer could have written and reads the ones it did."""

from __future__ import annotations

import fcntl
import multiprocessing
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

import core.trace as trace_module
from core.trace import (
    TraceCorrupt,
    PASS_RAN,
    PROPOSAL_DECIDED,
    PROPOSAL_RAISED,
    RECOVERED,
    TRACE_MODELS,
    PassRan,
    ProposalDecided,
    ProposalRaised,
    Trace,
    TraceBusyError,
    format_rfc3339nano,
    go_float,
    parse_rfc3339nano,
)

T0 = 1_768_467_600_123_400_000  # 2026-01-15T09:00:00.1234Z


def fixed_clock(start: int = T0, step: int = 1_000_000):
    ticks = iter(range(start, start + step * 10_000, step))
    return lambda: next(ticks)


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n") and b"\r" not in data
    return data[:-1].split(b"\n")


# ── timestamps and numbers, as Go writes them ─────────────────────────────────────────────────


@pytest.mark.parametrize("unix_ns, text", [
    (T0, "2026-01-15T09:00:00.1234Z"),
    (1_768_467_600_000_000_000, "2026-01-15T09:00:00Z"),
    (1_768_467_600_123_456_789, "2026-01-15T09:00:00.123456789Z"),
    (1_768_467_600_000_000_010, "2026-01-15T09:00:00.00000001Z"),
])
def test_timestamps_are_go_rfc3339nano(unix_ns, text):
    assert format_rfc3339nano(unix_ns) == text
    assert parse_rfc3339nano(text) == unix_ns


def test_parse_rfc3339nano_honours_offsets():
    assert parse_rfc3339nano("2026-01-15T10:00:00.5+01:00") == 1_768_467_600_500_000_000


@pytest.mark.parametrize("value, text", [
    (3.0, "3"), (2.5, "2.5"), (0.72, "0.72"), (-0.0, "-0"), (1e20, "100000000000000000000"),
    (1e21, "1e+21"), (1.5e-5, "0.000015"), (1e-6, "0.000001"), (1e-7, "1e-7"), (1.25e-10, "1.25e-10"),
])
def test_floats_are_encoded_like_go(value, text):
    assert go_float(value) == text


def test_nan_is_refused():
    with pytest.raises(ValueError):
        go_float(float("nan"))
    with pytest.raises(ValidationError):
        ProposalRaised(recipe_id="r", kind="gate", target="dev-story", priority=float("inf"),
                       rung=2, draft_path=".artifacts/mining/r")


# ── writing ───────────────────────────────────────────────────────────────────────────────────


def test_header_is_written_once_on_a_new_file(tmp_path):
    path = tmp_path / "deep" / "er" / "trace.jsonl"
    trace = Trace(path, clock_ns=fixed_clock())
    for _ in range(3):
        trace.pass_ran(trigger="live", slug="-p", paused=True)
    lines = lines_of(path)
    assert len(lines) == 4
    assert lines[0] == b'{"kind":"session.header","schema_version":1,"written_at":"2026-01-15T09:00:00.1234Z"}'
    assert sum(b'"session.header"' in line for line in lines) == 1
    assert trace.header().schema_version == 1


def test_an_empty_existing_file_gets_the_header(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.touch()
    Trace(path).pass_ran(trigger="seed", slug="-p", sessions=1)
    assert orjson.loads(lines_of(path)[0])["kind"] == "session.header"


def test_mining_events_are_off_path(tmp_path):
    trace = Trace(tmp_path / "t.jsonl")
    first = trace.pass_ran(trigger="seed", slug="-p", sessions=2, recipes=1, job_id="j1")
    second = trace.proposal_raised(recipe_id="s#1", kind="binding", target="root-instance", priority=3, rung=1)
    assert (first.turn, first.seq, first.parent_turn, first.state_path) == (1, 0, None, None)
    assert (second.turn, second.seq, second.parent_turn, second.state_path) == (2, 0, 1, None)
    on_disk = [orjson.loads(line) for line in lines_of(trace.path)[1:]]
    assert "parent_turn" not in on_disk[0]  # Go omits parent_turn 0
    assert on_disk[1]["parent_turn"] == 1
    assert all("state_path" not in line for line in on_disk)
    assert list(trace.events()) == [first, second]


def test_two_trace_objects_on_one_file_number_turns_together(tmp_path):
    path = tmp_path / "t.jsonl"
    a, b = Trace(path), Trace(path)
    turns = []
    for i in range(3):
        turns.append(a.pass_ran(trigger="live", slug="-a", sessions=i).turn)
        turns.append(b.pass_ran(trigger="live", slug="-b", sessions=i).turn)
    assert turns == [1, 2, 3, 4, 5, 6]
    assert [e.parent_turn for e in a.events()] == [None, 1, 2, 3, 4, 5]


def test_payload_json_is_exactly_kitsokis(tmp_path):
    trace = Trace(tmp_path / "t.jsonl", clock_ns=fixed_clock())
    trace.pass_ran(trigger="seed", slug="-home-dev-proj", sessions=12, recipes=3, job_id="job-7")
    trace.pass_ran(trigger="live", slug="-home-dev-proj", paused=True)
    trace.proposal_raised(recipe_id="sess-1#3", kind="binding", target="root-instance", priority=3, rung=1)
    trace.proposal_raised(recipe_id="sess-2#0", kind="intent", target="dev-story", priority=0.72, rung=2,
                          draft_path=".artifacts/mining/sess-2#0")
    trace.proposal_decided(recipe_id="sess-1#3", verdict="accept", flows_green=True)
    trace.proposal_decided(recipe_id="sess-2#0", verdict="accept", reverted=True)
    trace.proposal_decided(recipe_id="sess-9#9", verdict="reject")
    assert lines_of(trace.path)[1:] == [
        b'{"turn":1,"seq":0,"ts":"2026-01-15T09:00:00.1234Z","kind":"mining.pass_ran","payload":'
        b'{"trigger":"seed","slug":"-home-dev-proj","sessions":12,"recipes":3,"job_id":"job-7"}}',
        b'{"turn":2,"seq":0,"ts":"2026-01-15T09:00:00.1244Z","kind":"mining.pass_ran","parent_turn":1,"payload":'
        b'{"trigger":"live","slug":"-home-dev-proj","sessions":0,"recipes":0,"job_id":"","paused":true}}',
        b'{"turn":3,"seq":0,"ts":"2026-01-15T09:00:00.1254Z","kind":"mining.proposal_raised","parent_turn":2,"payload":'
        b'{"recipe_id":"sess-1#3","kind":"binding","target":"root-instance","priority":3,"rung":1,'
        b'"draft_path":".artifacts/mining/sess-1#3"}}',
        b'{"turn":4,"seq":0,"ts":"2026-01-15T09:00:00.1264Z","kind":"mining.proposal_raised","parent_turn":3,"payload":'
        b'{"recipe_id":"sess-2#0","kind":"intent","target":"dev-story","priority":0.72,"rung":2,'
        b'"draft_path":".artifacts/mining/sess-2#0"}}',
        b'{"turn":5,"seq":0,"ts":"2026-01-15T09:00:00.1274Z","kind":"mining.proposal_decided","parent_turn":4,"payload":'
        b'{"recipe_id":"sess-1#3","verdict":"accept","by":"human","flows_green":true,"reverted":false}}',
        b'{"turn":6,"seq":0,"ts":"2026-01-15T09:00:00.1284Z","kind":"mining.proposal_decided","parent_turn":5,"payload":'
        b'{"recipe_id":"sess-2#0","verdict":"accept","by":"human","flows_green":false,"reverted":true}}',
        b'{"turn":7,"seq":0,"ts":"2026-01-15T09:00:00.1294Z","kind":"mining.proposal_decided","parent_turn":6,"payload":'
        b'{"recipe_id":"sess-9#9","verdict":"reject","by":"human","flows_green":false,"reverted":false}}',
    ]


def test_free_payloads_are_encoded_like_a_go_map(tmp_path):
    trace = Trace(tmp_path / "t.jsonl", clock_ns=fixed_clock())
    event = trace.append(RECOVERED, {"zeta": 2.0, "path": "cafe\u0301/<draft>&", "alpha": [1, 0.5, None]})
    assert event.payload == {"alpha": [1, 0.5, None], "path": "caf\u00e9/<draft>&", "zeta": 2.0}
    assert lines_of(trace.path)[1].endswith(
        b'"payload":{"alpha":[1,0.5,null],"path":"caf\xc3\xa9/\\u003cdraft\\u003e\\u0026","zeta":2}}')


def test_only_mining_kinds_and_matching_payloads_are_written(tmp_path):
    trace = Trace(tmp_path / "t.jsonl")
    with pytest.raises(ValueError):
        trace.append("machine.transition", {"to": "elsewhere"})  # would move kitsoki's replay
    with pytest.raises(TypeError):
        trace.append(PASS_RAN, ProposalDecided(recipe_id="r", verdict="reject", by="human"))
    with pytest.raises(ValidationError):
        trace.append(PROPOSAL_RAISED, {"recipe_id": "r", "kind": "nope", "target": "dev-story",
                                       "priority": 1.0, "rung": 2, "draft_path": "x"})
    with pytest.raises(TypeError):
        trace.append(RECOVERED, {"when": object()})
    assert not trace.path.exists()
    # A mapping for a mining kind is validated into its model.
    event = trace.append(PROPOSAL_DECIDED, {"recipe_id": "r", "verdict": "refine", "by": "human"})
    assert event.typed_payload() == ProposalDecided(recipe_id="r", verdict="refine", by="human")


@pytest.mark.parametrize("fields", [
    dict(verdict="reject", flows_green=True),
    dict(verdict="refine", reverted=True),
    dict(verdict="accept"),
    dict(verdict="accept", flows_green=True, reverted=True),
])
def test_decided_outcomes_must_match_the_verdict(fields):
    with pytest.raises(ValidationError):
        ProposalDecided(recipe_id="r", by="human", **fields)


def test_a_paused_pass_ran_nothing():
    with pytest.raises(ValidationError):
        PassRan(trigger="live", slug="-p", sessions=3, paused=True)
    assert PassRan(trigger="live", slug="-p", paused=True).to_payload() == {
        "trigger": "live", "slug": "-p", "sessions": 0, "recipes": 0, "job_id": "", "paused": True}
    assert "paused" not in PassRan(trigger="seed", slug="-p").to_payload()


def test_append_refuses_while_a_kitsoki_session_holds_the_trace(tmp_path):
    path = tmp_path / "t.jsonl"
    trace = Trace(path)
    trace.pass_ran(trigger="seed", slug="-p")
    before = path.read_bytes()
    with open(path, "ab") as kitsoki:  # JSONLSink: flock(LOCK_EX|LOCK_NB) for the whole session
        fcntl.flock(kitsoki.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(TraceBusyError):
            trace.pass_ran(trigger="live", slug="-p", paused=True)
    assert path.read_bytes() == before
    assert trace.pass_ran(trigger="live", slug="-p", paused=True).turn == 2


# ── reading what kitsoki wrote ────────────────────────────────────────────────────────────────

KITSOKI_TRACE = [
    b'{"kind":"session.header","schema_version":1,"written_at":"2026-01-15T09:00:00.000512Z"}',
    b'{"turn":0,"seq":0,"ts":"2026-01-15T09:00:00.001Z","kind":"session.story","state_path":"foyer","payload":'
    b'{"app_id":"tiny","entry":"app.yaml","files":{"app.yaml":"YXBwOiB7IGlkOiB0aW55IH0K"},"hash":"9f2c"}}',
    b'{"turn":1,"seq":0,"ts":"2026-01-15T09:00:01.5Z","kind":"turn.input","state_path":"foyer","payload":{"text":"look around"}}',
    b'{"turn":1,"seq":1,"ts":"2026-01-15T09:00:01.500000213Z","kind":"turn.start","state_path":"foyer","payload":{"input":"look around"}}',
    b'{"turn":1,"seq":2,"ts":"2026-01-15T09:00:01.61Z","kind":"machine.intent_accepted","state_path":"foyer","payload":{"intent":"look","slots":{}}}',
    b'{"turn":1,"seq":3,"ts":"2026-01-15T09:00:01.62Z","kind":"machine.transition","state_path":"foyer","payload":{"from":"foyer","intent":"look","to":"hall"}}',
    b'{"turn":1,"seq":4,"ts":"2026-01-15T09:00:01.63Z","kind":"world.update","state_path":"hall","payload":{"set":{"visited":true}}}',
    b'{"turn":1,"seq":5,"ts":"2026-01-15T09:00:01.64Z","kind":"turn.end","state_path":"hall","payload":'
    b'{"outcome":"transitioned","to":"hall","view":"You are in the hall \\u003cnorth\\u003e \\u0026 south"}}',
    b'{"turn":2,"seq":0,"ts":"2026-01-15T09:00:03Z","kind":"turn.start","state_path":"hall","payload":{"input":"ask the oracle"}}',
    b'{"turn":2,"seq":1,"ts":"2026-01-15T09:00:03.1Z","kind":"oracle.call.start","state_path":"hall","call_id":"c-7f3a",'
    b'"episode_id":"ep-1","match_idx":1,"payload":{"call_id":"c-7f3a","verb":"decide"}}',
    b'{"turn":2,"seq":2,"ts":"2026-01-15T09:00:04.25Z","kind":"oracle.call.complete","state_path":"hall","call_id":"c-7f3a",'
    b'"payload":{"call_id":"c-7f3a","duration_ms":1150,"verb":"decide"}}',
    b'{"turn":2,"seq":3,"ts":"2026-01-15T09:00:04.26Z","kind":"machine.gate_decided","state_path":"hall","payload":'
    b'{"available_intents":["approve","reject"],"bailed_to_human":false,"chosen_intent":"approve","confidence":0.9,'
    b'"decider":"llm","state":"hall","threshold":0.75}}',
    b'{"turn":3,"seq":0,"ts":"2026-01-15T09:00:05Z","kind":"turn.start","state_path":"hall","payload":{"input":"go north"}}',
    b'{"turn":4,"seq":0,"ts":"2026-01-15T09:00:06.000000001Z","kind":"mining.pass_ran","parent_turn":3,"payload":'
    b'{"trigger":"seed","slug":"-home-dev-tiny","sessions":12,"recipes":2,"job_id":"job-1"}}',
    b'{"turn":5,"seq":0,"ts":"2026-01-15T09:00:07Z","kind":"turn.start","state_path":"tower","payload":{"input":"climb"}}',
    b'{"turn":5,"seq":1,"ts":"2026-01-15T09:00:07.2Z","kind":"turn.end","state_path":"tower","payload":{"outcome":"transitioned","to":"tower"}}',
]


@pytest.fixture
def kitsoki_trace(tmp_path) -> Path:
    path = tmp_path / ".kitsoki" / "traces" / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\n".join(KITSOKI_TRACE) + b"\n")
    return path


def test_reads_a_kitsoki_trace_and_reencodes_it_byte_for_byte(kitsoki_trace):
    trace = Trace(kitsoki_trace)
    events = list(trace.events())
    assert trace.last_read.malformed == 0 and not trace.last_read.torn_tail
    assert trace.last_read.header.written_at == "2026-01-15T09:00:00.000512Z"
    assert [e.to_json() for e in events] == KITSOKI_TRACE[1:]
    starts = [e for e in events if e.kind == "turn.start"]
    assert [(e.turn, e.state_path) for e in starts] == [(1, "foyer"), (2, "hall"), (3, "hall"), (5, "tower")]
    oracle = next(e for e in events if e.kind == "oracle.call.start")
    assert (oracle.call_id, oracle.episode_id, oracle.match_idx) == ("c-7f3a", "ep-1", 1)
    assert events[1].ts_unix_ns() == 1_768_467_601_500_000_000
    assert isinstance(next(e for e in events if e.kind == PASS_RAN).typed_payload(), PassRan)


def test_a_mining_event_continues_kitsokis_turns(kitsoki_trace):
    trace = Trace(kitsoki_trace, clock_ns=fixed_clock())
    event = trace.proposal_raised(recipe_id="sess-1#3", kind="binding", target="root-instance", priority=4, rung=1)
    assert (event.turn, event.parent_turn, event.seq, event.state_path) == (6, 5, 0, None)
    lines = lines_of(kitsoki_trace)
    assert lines[:-1] == KITSOKI_TRACE  # nothing before our line changed, and no second header
    assert lines[-1] == (
        b'{"turn":6,"seq":0,"ts":"2026-01-15T09:00:00.1234Z","kind":"mining.proposal_raised","parent_turn":5,'
        b'"payload":{"recipe_id":"sess-1#3","kind":"binding","target":"root-instance","priority":4,"rung":1,'
        b'"draft_path":".artifacts/mining/sess-1#3"}}')


def test_events_filters_by_kind(kitsoki_trace):
    trace = Trace(kitsoki_trace)
    assert [e.turn for e in trace.events(kinds="turn.start")] == [1, 2, 3, 5]
    assert [e.kind for e in trace.events(kinds={PASS_RAN, "turn.end"})] == ["turn.end", PASS_RAN, "turn.end"]


def test_a_missing_trace_has_no_events(tmp_path):
    trace = Trace(tmp_path / "nope.jsonl")
    assert list(trace.events()) == [] and trace.max_turn() == 0 and trace.pending_proposals() == {}
    assert trace.header() is None


# ── pending proposals ─────────────────────────────────────────────────────────────────────────


def test_pending_proposals_are_raised_and_not_yet_decided(tmp_path):
    trace = Trace(tmp_path / "t.jsonl")
    for recipe_id in ("r1", "r2", "r3"):
        trace.proposal_raised(recipe_id=recipe_id, kind="world", target="root-instance", priority=2.5, rung=1)
    trace.proposal_decided(recipe_id="r1", verdict="accept", flows_green=True)
    trace.proposal_decided(recipe_id="r2", verdict="refine")  # a refine closes it too
    trace.proposal_raised(recipe_id="r2", kind="world", target="root-instance", priority=3.5, rung=1)  # redrafted
    trace.proposal_raised(recipe_id="r3", kind="gate", target="dev-story", priority=9, rung=2)  # re-raised: newest wins
    pending = trace.pending_proposals()
    assert list(pending) == ["r3", "r2"]
    assert pending["r2"].priority == 3.5
    assert (pending["r3"].kind, pending["r3"].rung, pending["r3"].draft_path) == ("gate", 2, ".artifacts/mining/r3")
    raised_event, _ = trace.pending_proposal_events()["r2"]
    assert raised_event.turn == 6


def test_pending_proposals_follow_kitsokis_lenient_decisions(tmp_path):
    # Kitsoki closes a proposal on any decision that names its recipe_id; a raise we cannot type
    # is not shown (and is counted).
    path = tmp_path / "t.jsonl"
    trace = Trace(path)
    trace.proposal_raised(recipe_id="keep", kind="binding", target="root-instance", priority=1, rung=1)
    trace.proposal_raised(recipe_id="close", kind="binding", target="root-instance", priority=1, rung=1)
    with open(path, "ab") as fh:
        fh.write(b'{"turn":3,"seq":0,"ts":"2026-01-15T09:00:00Z","kind":"mining.proposal_decided",'
                 b'"parent_turn":2,"payload":{"recipe_id":"close","verdict":"accept","future_field":1}}\n')
        fh.write(b'{"turn":4,"seq":0,"ts":"2026-01-15T09:00:00Z","kind":"mining.proposal_raised",'
                 b'"parent_turn":3,"payload":{"recipe_id":"odd","kind":"telepathy"}}\n')
    assert list(trace.pending_proposals()) == ["keep"]
    assert trace.last_read.bad_payloads == 1


# ── damaged files ─────────────────────────────────────────────────────────────────────────────


HEAD = KITSOKI_TRACE[0]
E1 = b'{"turn":1,"seq":0,"ts":"2026-01-15T09:00:00Z","kind":"turn.start","state_path":"a","payload":{}}'
E1b = b'{"turn":1,"seq":1,"ts":"2026-01-15T09:00:01Z","kind":"turn.end","state_path":"a","payload":{}}'
E2 = b'{"turn":2,"seq":0,"ts":"2026-01-15T09:00:02Z","kind":"turn.start","state_path":"a","payload":{}}'
CORRUPT = {
    # kitsoki's own refusals (internal/store/jsonl.go loadAndValidate / splitLines at 1f4abf0e); each
    # was checked with the real binary: `kitsoki turn --app app.yaml --trace T --intent go` fails
    # with "open trace ...: <this reason>".
    "newer schema": (HEAD.replace(b'"schema_version":1', b'"schema_version":2') + b"\n" + E1 + b"\n",
                     "schema_version 2 on disk exceeds highest supported 1"),
    "crlf": (HEAD + b"\r\n" + E1 + b"\r\n", "trace corrupted: CRLF line ending at line 1 (JSONL requires LF-only)"),
    "no trailing newline": (HEAD + b"\n" + E1, "trace corrupted: missing trailing newline at EOF"),
    "duplicate seq": (HEAD + b"\n" + E1 + b"\n" + E1 + b"\n", "duplicate (turn,seq) at line 3: turn=1 seq=0"),
    "out-of-order seq": (HEAD + b"\n" + E1b.replace(b'"seq":1', b'"seq":0') + b"\n" + E1.replace(b'"seq":0', b'"seq":1')
                         + b"\n" + E1 + b"\n", "out-of-order (turn,seq) at line 4: turn=1 seq=0 (previous seq=1)"),
    "gapped seq": (HEAD + b"\n" + E1 + b"\n" + E1b.replace(b'"seq":1', b'"seq":2') + b"\n",
                   "gap in seq within turn 1 at line 3: expected seq 1, got 2"),
    "out-of-order turn": (HEAD + b"\n" + E2 + b"\n" + E1 + b"\n",
                          "out-of-order turn at line 3: turn=1 arrives after turn=2 (cross-turn ordering violation)"),
    "no header": (E1 + b"\n", 'trace missing session.header on line 1 (got kind="turn.start")'),
    "second header": (HEAD + b"\n" + E1 + b"\n" + HEAD + b"\n", "duplicate session.header at line 3"),
    "not json": (HEAD + b"\n" + b"not json at all\n", "line 2 is not valid JSON"),
    "string turn": (HEAD + b"\n" + E1.replace(b'"turn":1', b'"turn":"1"') + b"\n", "line 2: unmarshal event"),
    "nul byte": (HEAD + b"\n" + E1[:-1] + b"\x00}\n", "trace corrupted: NUL byte in line 2"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_a_trace_kitsoki_refuses_is_refused_with_kitsokis_reason(tmp_path, case):
    data, reason = CORRUPT[case]
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    with pytest.raises(TraceCorrupt) as caught:
        list(Trace(path).events())
    assert reason in str(caught.value) and str(path) in str(caught.value)


def test_what_kitsoki_accepts_is_read(tmp_path):
    """Blank lines, a missing seq (Go's zero), a field we cannot type: kitsoki opens these."""
    path = tmp_path / "t.jsonl"
    odd = b'{"turn":2,"ts":"2026-01-15T09:00:00Z","kind":"no.seq","payload":{}}'
    path.write_bytes(b"\n".join([HEAD, b"", E1, E1b, odd, b""]) + b"\n")
    trace = Trace(path)
    assert [e.to_json() for e in trace.events()] == [E1, E1b, odd.replace(b'"ts"', b'"seq":0,"ts"')]
    assert trace.last_read.malformed == 0 and trace.last_read.header is not None


def test_an_oversized_line_is_skipped_but_its_turn_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_module, "MAX_LINE_BYTES", 200_000)
    path = tmp_path / "t.jsonl"
    huge = (b'{"turn":4,"seq":0,"ts":"2026-01-15T09:00:00Z","kind":"session.story","payload":{"blob":"'
            + b"A" * 300_000 + b'"}}')
    path.write_bytes(KITSOKI_TRACE[0] + b"\n" + huge + b"\n")
    trace = Trace(path)
    assert list(trace.events()) == [] and trace.last_read.malformed == 1
    assert trace.pass_ran(trigger="seed", slug="-p").turn == 5


# ── the max-turn cache ────────────────────────────────────────────────────────────────────────


def test_appends_do_not_rescan_the_trace_from_the_top(kitsoki_trace, monkeypatch):
    scans: list[int] = []
    real_scan = trace_module._scan_turns

    def recording_scan(path, start):
        scans.append(start)
        return real_scan(path, start)

    monkeypatch.setattr(trace_module, "_scan_turns", recording_scan)
    mine, other = Trace(kitsoki_trace), Trace(kitsoki_trace)

    assert mine.pass_ran(trigger="live", slug="-p", paused=True).turn == 6
    assert scans == [0]  # the first append reads the file once
    mine.pass_ran(trigger="live", slug="-p", paused=True)
    mine.pass_ran(trigger="live", slug="-p", paused=True)
    assert scans == [0]  # our own appends are known without reading

    size_before = kitsoki_trace.stat().st_size
    assert other.pass_ran(trigger="live", slug="-p", paused=True).turn == 9
    scans.clear()
    assert mine.pass_ran(trigger="live", slug="-p", paused=True).turn == 10
    assert scans == [size_before]  # only the other writer's new line is read

    kitsoki_trace.write_bytes(b"\n".join(KITSOKI_TRACE[:3]) + b"\n")  # replaced by a shorter file
    scans.clear()
    assert mine.pass_ran(trigger="live", slug="-p", paused=True).turn == 2
    assert scans == [0]


# ── several processes at once ─────────────────────────────────────────────────────────────────


def _append_many(path: str, writer: int, count: int, start) -> None:
    trace = Trace(path)
    start.wait(30)  # all writers contend for the lock from the first append
    for i in range(count):
        # Lines of different lengths, some past a pipe buffer, so a torn write would show.
        trace.append(RECOVERED, {"writer": writer, "i": i, "pad": "x" * (3000 * writer)})


def test_concurrent_appends_from_several_processes(tmp_path):
    path = tmp_path / "t.jsonl"
    writers, per_writer = 4, 25
    ctx = multiprocessing.get_context("fork")  # spawn would spend seconds re-importing
    start = ctx.Barrier(writers)
    procs = [ctx.Process(target=_append_many, args=(str(path), w, per_writer, start)) for w in range(writers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0

    lines = lines_of(path)
    assert len(lines) == 1 + writers * per_writer
    records = [orjson.loads(line) for line in lines]  # every line whole, none interleaved
    assert records[0]["kind"] == "session.header"
    assert sum(r["kind"] == "session.header" for r in records) == 1
    events = records[1:]
    assert [e["turn"] for e in events] == list(range(1, writers * per_writer + 1))
    assert [e.get("parent_turn", 0) for e in events] == list(range(writers * per_writer))
    seen = sorted((e["payload"]["writer"], e["payload"]["i"]) for e in events)
    assert seen == [(w, i) for w in range(writers) for i in range(per_writer)]

    trace = Trace(path)
    assert len(list(trace.events())) == writers * per_writer and trace.last_read.malformed == 0


# ── schemas ───────────────────────────────────────────────────────────────────────────────────


def test_trace_models_export_schemas_that_accept_our_lines(tmp_path):
    import jsonschema
    from pydantic import TypeAdapter

    trace = Trace(tmp_path / "t.jsonl")
    trace.pass_ran(trigger="live", slug="-p", paused=True)
    trace.proposal_raised(recipe_id="r", kind="stub-wire", target="dev-story", priority=1.5, rung=2)
    trace.proposal_decided(recipe_id="r", verdict="accept", by="human", flows_green=True)
    schemas = {name: TypeAdapter(model).json_schema(mode="serialization") for name, model in TRACE_MODELS.items()}
    by_kind = {PASS_RAN: "mining-pass-ran.schema.json", PROPOSAL_RAISED: "mining-proposal-raised.schema.json",
               PROPOSAL_DECIDED: "mining-proposal-decided.schema.json"}
    lines = [orjson.loads(line) for line in lines_of(trace.path)]
    jsonschema.validate(lines[0], schemas["trace-header.schema.json"])
    for line in lines[1:]:
        jsonschema.validate(line, schemas["trace-event.schema.json"])
        jsonschema.validate(line["payload"], schemas[by_kind[line["kind"]]])
    for line in KITSOKI_TRACE[1:]:
        jsonschema.validate(orjson.loads(line), schemas["trace-event.schema.json"])


def test_the_cli_refuses_a_trace_kitsoki_refuses_naming_why(tmp_path):
    import subprocess

    from conftest import CLI
    from core.mining.service import trace_path

    (tmp_path / ".kitsoki.yaml").write_text("story_dirs: [./stories]\n")
    trace = trace_path(tmp_path)
    trace.parent.mkdir(parents=True, exist_ok=True)
    trace.write_bytes(CORRUPT["crlf"][0])
    done = subprocess.run([*CLI, "proposals", "--repo", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and "trace corrupted: CRLF line ending at line 1" in done.stderr
    assert "Traceback" not in done.stderr
