"""Damaged transcript lines: nested a thousand levels deep, lone surrogate escapes, in every format.

Pass rule: no traceback and exit 0 from `sessions`, `mine` (the first pass and every later one),
`propose`, `evolve analyze` and `runs coverage|confirm|prepare`; a line that cannot be read (nested
past the JSON reader's depth, a lone surrogate escape: not text) is counted malformed, never fatal;
a readable line that merely nests deep is read; the rest of the history is still mined (its
proposal is raised). Each damage is tried in a file from the start and appended to a file that a
first pass already read (the live pass that reads the new bytes, and the passes after it).
"""

from __future__ import annotations

import copy

import orjson
import pytest

import transcript_world as W
from conftest import adversarial_cases

pytestmark = pytest.mark.adversarial("bad-inputs")


DEEP = "<<deep>>"
"""Stands in a record for a deep value; spliced in as raw bytes (no JSON writer goes that deep)."""


def _nested_list(depth: int) -> bytes:
    return b"[" * depth + b'"x"' + b"]" * depth


def _nested_dict(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def _raw_deep(depth: int) -> bytes:
    return b'{"type":"user","x":' + b"[" * depth + b"]" * depth + b"}"


# name -> (raw line to add, or a function changing a record in place; malformed lines it adds)
def _lone_surrogate_prompt(fmt):
    line = orjson.dumps(_prompt_record(fmt, "deploy it now"))
    return line.replace(b"deploy it now", b"deploy \\ud800 now")


def _lone_surrogate_key(fmt):
    return orjson.dumps(_prompt_record(fmt, "hello")).replace(b'"type"', b'"\\udc00","type"', 1).replace(
        b'"\\udc00","type"', b'"\\udc00":1,"type"', 1)


def _prompt_record(fmt, text):
    files = W.world(fmt)
    trunk = next(v for k, v in files.items() if k.endswith(".jsonl") and "subagents" not in k)
    rec = next(r for r in trunk if _is_prompt(fmt, r))
    rec = copy.deepcopy(rec)
    if fmt == "claude":
        rec["uuid"] = "ffffffff-0000-4000-8000-0000000000ff"
        rec["message"]["content"] = text
    elif fmt == "codex":
        rec["payload"]["message"] = text
    else:
        rec["id"], rec["parentId"] = "ffffff01", "a0000010"  # continues the active branch
        rec["message"]["content"] = [{"type": "text", "text": text}]
    return rec


def _is_prompt(fmt, rec):
    if fmt == "codex":
        return rec.get("type") == "event_msg" and rec["payload"].get("type") == "user_message"
    if fmt == "claude":
        return rec.get("type") == "user" and isinstance(rec.get("message", {}).get("content"), str)
    return rec.get("type") == "message" and rec["message"].get("role") == "user"


RAW = {
    "array-5000-deep": lambda fmt: b"[" * 5000 + b"]" * 5000,
    "object-1100-deep": lambda fmt: b'{"a":' * 1100 + b"1" + b"}" * 1100,
    "record-holding-2000-levels": lambda fmt: _raw_deep(2000),
    "lone-surrogate-in-a-prompt": _lone_surrogate_prompt,
    "lone-surrogate-in-a-key": _lone_surrogate_key,
    "lone-surrogate-glued-to-a-good-line": lambda fmt: orjson.dumps(_prompt_record(fmt, "ok")) + b'{"t":"\\ud800"}',
}


def _deep_tool_input(fmt, depth):
    def change(rec):
        if fmt == "claude" and rec.get("type") == "assistant":
            for block in rec["message"]["content"]:
                if block.get("type") == "tool_use":
                    block["input"]["nested"] = DEEP
                    return orjson.dumps(rec).replace(f'"{DEEP}"'.encode(), _nested_dict(depth))
        if fmt == "pi" and rec.get("type") == "message" and rec["message"].get("role") == "assistant":
            for block in rec["message"]["content"]:
                if block.get("type") == "toolCall":
                    block["arguments"]["nested"] = DEEP
                    return orjson.dumps(rec).replace(f'"{DEEP}"'.encode(), _nested_list(depth))
        if fmt == "codex" and rec.get("type") == "response_item" and rec["payload"].get("type") == "function_call":
            # arguments is a JSON string: a deep value in it is parsed by the reader, after orjson's line parse
            rec["payload"]["arguments"] = DEEP
            return orjson.dumps(rec).replace(f'"{DEEP}"'.encode(),
                                             orjson.dumps(b'{"command":"ls","deep":'.decode() + _nested_dict(depth).decode() + "}"))
        return None
    return change


def _deep_result(fmt, depth):
    def change(rec):
        if fmt == "claude" and rec.get("type") == "user" and isinstance(rec["message"]["content"], list):
            for block in rec["message"]["content"]:
                if block.get("type") == "tool_result":
                    block["content"] = DEEP
                    nest = (b'[{"type":"tool_result","tool_use_id":"t","content":' * depth + b'"x"'
                            + b"}]" * depth)
                    return orjson.dumps(rec).replace(f'"{DEEP}"'.encode(), nest)
        if fmt == "pi" and rec.get("type") == "message" and rec["message"].get("role") == "toolResult":
            rec["message"]["details"] = DEEP
            return orjson.dumps(rec).replace(f'"{DEEP}"'.encode(), _nested_dict(depth * 2))
        if fmt == "codex" and rec.get("type") == "response_item" and rec["payload"].get("type") == "function_call_output":
            rec["payload"]["output"] = DEEP
            nest = b'[{"type":"input_text","text":"x","more":' * depth + b"1" + b"}]" * depth
            return orjson.dumps(rec).replace(f'"{DEEP}"'.encode(), nest)
        return None
    return change


CHANGED = {  # readable lines (orjson reads up to 1024 levels) that hold something very deep
    "tool-input-300-levels": lambda fmt: _deep_tool_input(fmt, 300),
    "tool-input-1000-levels": lambda fmt: _deep_tool_input(fmt, 1000),
    "tool-result-500-levels": lambda fmt: _deep_result(fmt, 500),
}

CASES = ([(fmt, name, when) for fmt in W.FORMATS for name in RAW for when in ("from-the-start", "appended")]
         + [(fmt, name, "from-the-start") for fmt in W.FORMATS for name in CHANGED])


def _trunk(files):
    return next(k for k in files if k.endswith(".jsonl") and "subagents" not in k)


@pytest.mark.parametrize("fmt,damage,when", adversarial_cases(CASES, fast=6), ids=lambda v: str(v))
def test_damaged_lines_are_counted_never_fatal(tmp_path, fmt, damage, when):
    files = W.world(fmt)
    trunk = _trunk(files)
    malformed = 0
    if damage in RAW:
        line = RAW[damage](fmt)
        malformed = 1
    else:
        change = CHANGED[damage](fmt)
        records = files[trunk]
        at = next(i for i, rec in enumerate(records) if isinstance(rec, dict) and change(copy.deepcopy(rec)))
        records[at] = change(records[at])  # the same record, its deep value spliced in as raw JSON
    grow = None
    if damage in RAW and when == "from-the-start":
        files[trunk].insert(3, line)
    elif damage in RAW:
        def grow():
            path = tmp_path / "transcripts" / trunk
            with open(path, "ab") as fh:
                fh.write(line + b"\n" + orjson.dumps(_prompt_record(fmt, W.PROMPT + " again")) + b"\n")
    transcripts = W.write_world(files, tmp_path / "transcripts")
    answers = W.run_everything(tmp_path, transcripts, between_passes=grow)

    failed = {k: answers[k.removesuffix(" (exit)")][-600:] for k, v in answers.items()
              if k.endswith("(exit)") and v != "0"}
    assert not failed, failed
    report = orjson.loads(answers["sessions --dir --json --workers 1"])
    assert report["totals"]["malformed"] == malformed, report["totals"]
    assert any(k.startswith("server proposal ") for k in answers), "the rest of the history was not mined"
    assert not any("Traceback" in v for v in answers.values())


# ── fields of the wrong type ──────────────────────────────────────────────────────────────────
# Every field of every record (two levels down, list items included) replaced by a value of another
# type: a list, an object, a number, null, a boolean. Pass rule: never fatal (sessions and mining
# read every file), the line accounting still balances, and a field that links records (a tool
# call's id) of the wrong type makes its line malformed, counted with its reason.

WRONG_TYPES = {"a list": ["x", 1], "an object": {"a": 1}, "a number": 7, "null": None, "a boolean": True}
LINKS = {"codex": ("payload", "call_id"), "pi": ("message", "toolCallId")}
"""Fields whose wrong type makes a line malformed (the rest are read as absent)."""


def _links(fmt, rec, path) -> bool:
    """True when `path` is a field that links this record to another (a call and its result)."""
    if path != LINKS.get(fmt):
        return False
    if fmt == "codex":
        return rec.get("type") == "response_item"
    return rec.get("message", {}).get("role") == "toolResult"


def _field_paths(value, path=()):
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*path, key)
            if len(path) < 2:
                yield from _field_paths(child, (*path, key))
    elif isinstance(value, list) and len(path) < 3:
        for index, child in enumerate(value[:3]):
            yield (*path, index)
            yield from _field_paths(child, (*path, index))


def _wrong_type_cases():
    out = []
    for fmt in W.FORMATS:
        files = W.world(fmt)
        trunk = _trunk(files)
        for at, rec in enumerate(files[trunk]):
            if isinstance(rec, dict):
                for path in _field_paths(rec):
                    out.extend(pytest.param(fmt, at, path, kind, id=f"{fmt}-line{at + 1}-{'.'.join(map(str, path))}-{kind}")
                               for kind in WRONG_TYPES)
    return out


def _sampled_wrong_type_cases():
    cases = _wrong_type_cases()
    picked = adversarial_cases(cases, fast=12)
    links = [c for c in cases if c.values[2] == LINKS.get(c.values[0]) and c not in picked]
    return picked + links  # the linking fields always: the crash


@pytest.mark.parametrize("fmt,at,path,kind", _sampled_wrong_type_cases())
def test_a_field_of_the_wrong_type_is_never_fatal(tmp_path, fmt, at, path, kind):
    from core.mining.passes import mine_file
    from core.transcripts.discover import discover
    from core.transcripts.ingest import scan

    files = W.world(fmt)
    trunk = _trunk(files)
    W.set_at(files[trunk][at], path, copy.deepcopy(WRONG_TYPES[kind]))
    root = W.write_world(files, tmp_path / "transcripts")
    report = scan(discover(None, [root], fmt=fmt), workers=1)
    assert len(report.sessions) == len(W.SESSION_IDS[fmt])
    for rel in files:
        if rel.endswith(".jsonl"):
            file = root / rel
            mine_file(fmt, file, file.stat().st_size, file.stat().st_mtime_ns, None)
    totals = report.totals
    assert totals.lines == sum(len(c) for r, c in files.items() if r.endswith(".jsonl"))
    if _links(fmt, files[trunk][at], path) and kind != "null":
        assert totals.malformed == 1, totals
        from core.transcripts.codex import read_codex_session
        from core.transcripts.pi import read_pi_session

        problems = (read_codex_session if fmt == "codex" else read_pi_session)(root / trunk).problems
        assert any(p.line == at + 1 and f"{'.'.join(path)}: expected a string, got {kind}" in p.detail
                   for p in problems), problems


@pytest.mark.parametrize("kind", ["a list", "an object"])
def test_a_codex_call_id_that_is_not_a_string_loses_one_line_not_the_history(tmp_path, kind):
    """The issue's case end to end: `sessions` and `mine` exit 0 and the rest is mined."""
    files = W.world("codex")
    trunk = _trunk(files)
    at = next(i for i, rec in enumerate(files[trunk]) if isinstance(rec, dict) and rec.get("type") == "response_item"
              and rec["payload"].get("type") == "function_call")
    files[trunk][at]["payload"]["call_id"] = copy.deepcopy(WRONG_TYPES[kind])
    transcripts = W.write_world(files, tmp_path / "transcripts")
    answers = W.run_everything(tmp_path, transcripts)
    failed = {k: answers[k.removesuffix(" (exit)")][-600:] for k, v in answers.items()
              if k.endswith("(exit)") and v != "0"}
    assert not failed, failed
    report = orjson.loads(answers["sessions --dir --json --workers 1"])
    assert report["totals"]["malformed"] == 1
    assert any(k.startswith("server proposal ") for k in answers), "the rest of the history was not mined"
    assert not any("Traceback" in v for v in answers.values())


# ── two damaged Claude lines: the tree walk over uuid / parentUuid ─────────────────────────────
# The case: two damaged Claude lines crashed the tree walk. Every pair of records of a
# session gets its linking fields damaged together: a wrong type, one uuid shared by both, each
# the other's parent (a loop), each its own parent. Pass rule: reading and mining never fail and
# every line is accounted for.

PAIR_DAMAGE = {
    "uuid a list": lambda a, b: (a.__setitem__("uuid", ["x"]), b.__setitem__("uuid", ["x"])),
    "parentUuid an object": lambda a, b: (a.__setitem__("parentUuid", {"a": 1}), b.__setitem__("parentUuid", 7)),
    "one uuid shared": lambda a, b: b.__setitem__("uuid", a.get("uuid")),
    "each the other's parent": lambda a, b: (a.__setitem__("parentUuid", b.get("uuid")),
                                             b.__setitem__("parentUuid", a.get("uuid"))),
    "each its own parent": lambda a, b: (a.__setitem__("parentUuid", a.get("uuid")),
                                         b.__setitem__("parentUuid", b.get("uuid"))),
}


def _pair_cases():
    files = W.world("claude")
    records = files[_trunk(files)]
    rows = [i for i, rec in enumerate(records) if isinstance(rec, dict)]
    return [pytest.param(i, j, damage, id=f"lines{i + 1}+{j + 1}-{damage.replace(' ', '-')}")
            for n, i in enumerate(rows) for j in rows[n + 1:] for damage in PAIR_DAMAGE]


@pytest.mark.parametrize("i,j,damage", adversarial_cases(_pair_cases(), fast=8))
def test_two_damaged_claude_lines_never_stop_the_tree_walk(tmp_path, i, j, damage):
    from core.mining.passes import mine_file
    from core.transcripts.discover import discover
    from core.transcripts.ingest import scan

    files = W.world("claude")
    trunk = _trunk(files)
    PAIR_DAMAGE[damage](files[trunk][i], files[trunk][j])
    root = W.write_world(files, tmp_path / "transcripts")
    report = scan(discover(None, [root], fmt="claude"), workers=1)
    assert len(report.sessions) == len(W.SESSION_IDS["claude"])
    assert report.totals.lines == sum(len(c) for r, c in files.items() if r.endswith(".jsonl"))
    for rel in files:
        if rel.endswith(".jsonl"):
            file = root / rel
            mine_file("claude", file, file.stat().st_size, file.stat().st_mtime_ns, None)
