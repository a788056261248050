"""Property tests: whatever bytes a transcript holds, a reader never raises and its books balance."""

import json

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import pi_entry, pi_header, pi_user, prompt, say
from core.transcripts.claude import read_claude_session
from core.transcripts.codex import read_codex_session
from core.transcripts.pi import read_pi_session

READERS = (read_claude_session, read_pi_session, read_codex_session)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
# Records shaped like transcript lines but with any value in any field.
keys = st.sampled_from(["type", "uuid", "parentUuid", "message", "content", "id", "parentId", "role",
                        "toolUseResult", "sessionId", "cwd", "timestamp", "version", "isMeta", "subtype",
                        "payload", "call_id", "arguments", "output", "name", "source", "originator"])
types = st.sampled_from(["user", "assistant", "system", "progress", "summary", "message", "session",
                         "compaction", "toolResult", "tool_result", "tool_use", "text", "x",
                         "session_meta", "response_item", "event_msg", "turn_context", "compacted",
                         "function_call", "function_call_output", "custom_tool_call", "local_shell_call",
                         "user_message", "turn_aborted", "reasoning", "input_text", "output_text"])
records = st.dictionaries(keys, types | json_values, max_size=8)
# Codex rollout lines: {timestamp, type, payload} with a payload shaped like any of its items
codex_lines = st.builds(lambda kind, payload: {"timestamp": "2026-03-01T10:00:00Z", "type": kind, "payload": payload},
                        st.sampled_from(["session_meta", "response_item", "event_msg", "turn_context", "compacted"]),
                        st.dictionaries(keys, types | json_values, max_size=6))
lines = st.one_of(
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b"")),
    records.map(lambda r: json.dumps(r).encode()),  # json, not orjson: integers past 64 bits too
    st.builds(lambda a, b: json.dumps(a).encode() + json.dumps(b).encode(), records, records),
    st.just(orjson.dumps(prompt("u1", None, "hello"))),
    st.just(orjson.dumps(say("u2", "u1", "m1", "hi"))),
    st.just(orjson.dumps(pi_header())),
    st.just(orjson.dumps(pi_entry("e1", None, pi_user("hey")))),
    codex_lines.map(lambda r: json.dumps(r).encode()),
)


def physical_lines(data: bytes) -> int:
    """Lines as a JSONL reader sees them: split on \\n only, a last line may lack its newline."""
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@SETTINGS
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("p") / "t.jsonl"
    path.write_bytes(data)
    for reader in READERS:
        s = reader(path)
        acc = s.accounting
        assert acc.parsed + acc.malformed + acc.skipped == acc.lines_read
        assert acc.lines_read == physical_lines(data)


@SETTINGS
@given(body=st.lists(lines, min_size=1, max_size=25), torn=st.booleans())
def test_transcript_shaped_noise_never_raises_and_balances(tmp_path_factory, body, torn):
    path = tmp_path_factory.mktemp("p") / "t.jsonl"
    data = b"\n".join(body) + (b"" if torn else b"\n")
    path.write_bytes(data)
    for reader in READERS:
        s = reader(path)
        acc = s.accounting
        assert acc.parsed + acc.malformed + acc.skipped == acc.lines_read == physical_lines(data)
        assert s.problem_count >= acc.malformed
        for p in s.problems:
            assert 1 <= p.line <= max(1, len(body)) or p.kind.value in ("cycle", "dangling-parent")
