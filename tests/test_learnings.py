"""Learnings: schema v1, the write pipeline (sweep/prune cases of the anchor), interop with the
anchor's files, pools, the judgment contract (all eight failure modes with near-miss probes),
confirm and the CLI."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import time
import uuid
from argparse import ArgumentParser
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest

from core.learnings import schema
from core.learnings.evolve import EvolveConfig, InputError, analyze, confirm, label
from core.learnings.extract import Cite, Finding
from core.learnings.judgment import (
    FAILURE_MODES,
    AgentJudge,
    apply_verdict,
    build_judgment_input,
    build_prompt,
    judge_candidate,
    parse_judgment,
)
from core.learnings.pools import FLOOR, build_candidate_pools
from core.learnings.schema import LearningValidationError, derive_expires_at, iso, learning_key, validate_learning
from core.learnings.store import (
    ARCHIVE_REASONS,
    LearningsLockError,
    archive_path,
    backups,
    confirmed,
    contradicted,
    default_store_path,
    read_archive,
    read_store,
    store_lock,
    write_generation,
)
from server.cli_evolve import add_evolve_commands, run_evolve

FIX = Path(__file__).parent / "fixtures" / "learnings"
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def rec(subject="a.py", type_="fragile-file", conf=0.5, created=NOW, expires=None, rid=None, **extra):
    r = {"id": rid or str(uuid.uuid4()), "type": type_, "subject": subject, "insight": f"about {subject}",
         "evidence": "seen", "confidence": conf, "source_session": "main-2026-06-01-1200",
         "created_at": iso(created), "expires_at": expires or derive_expires_at(iso(created), type_),
         "schema_version": 1, "scope": "local"}
    r.update(extra)
    return r


def put(store: Path, records) -> Path:
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_bytes(b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in records))
    return store


def sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


# --- schema -----------------------------------------------------------------------------------


def test_registry_ttls_and_defaults():
    assert schema.ttl_days("mode-selector-accuracy") == 30
    assert schema.ttl_days("fragile-file") == 45 and schema.ttl_days("recurring-issue") == 45
    assert schema.ttl_days("stagnation-class-frequency") == 60 and schema.ttl_days("hardware-pattern") == 60
    assert schema.ttl_days("autonomy-verdict") == 90 and schema.ttl_days("design-pattern") == 90
    assert schema.ttl_days("scope-guidance") == 60 and schema.ttl_days("deviation-pattern") == 60  # the gap
    assert len(schema.LEARNING_TTL_DAYS) == 16
    assert derive_expires_at("2026-01-01T00:00:00Z", "fragile-file") == "2026-02-15T00:00:00.000Z"
    assert derive_expires_at("garbage", "convention", now=NOW) == iso(NOW + timedelta(days=90))


@pytest.mark.parametrize("change, ok", [
    ({}, True),
    ({"id": ""}, True),  # only presence is checked
    ({"confidence": float("nan")}, False),
    ({"confidence": 1.2}, False),
    ({"confidence": True}, False),
    ({"source_session": "[object Object]"}, False),
    ({"source_session": ""}, False),
    ({"schema_version": 2}, False),
    ({"schema_version": "1"}, False),
    ({"schema_version": 0}, True),
    ({"scope": "project"}, False),
    ({"scope": "public", "anonymized": True}, False),
    ({"scope": "public", "anonymized": False, "host_class": "mac-m2"}, False),
    ({"scope": "public", "anonymized": True, "host_class": "mac-m2"}, True),
    ({"created_at": "yesterday"}, False),
    ({"evidence": ["legacy", "array"]}, True),
])
def test_validate_learning(change, ok):
    r = rec(**{})
    r.update(change)
    if ok:
        validate_learning(r)
    else:
        with pytest.raises(LearningValidationError):
            validate_learning(r)
    r.pop("insight")
    with pytest.raises(LearningValidationError):
        validate_learning(r)


def test_normalize_legacy_dialects():
    legacy = {"id": "x", "type": "gotcha", "name": "s", "description": "d", "recommendation": "r",
              "files": ["a"], "file_paths": ["b"], "sessions": ["deep-1"], "session_id": "deep-1",
              "next_review": None, "scope": "wave-executor", "created_at": "2026-01-01T00:00:00Z", "confidence": 0.4}
    n = schema.normalize(legacy)
    assert n["type"] == "anti-pattern" and n["subject"] == "s" and n["insight"] == "d"
    assert n["file_paths"] == ["b"] and "files" not in n  # canonical wins
    assert n["source_session"] == "deep-1" and "session_id" not in n and "next_review" not in n
    assert n["scope"] == "local" and n["evidence"] == ""
    assert n["created_at"] == "2026-01-01T00:00:00.000Z" and n["expires_at"] == "2026-01-31T00:00:00.000Z"
    validate_learning(n)
    assert learning_key({"type": " fragile-file ", "subject": "Src/A.py!"}) == "fragile-file/src-a-py"
    assert learning_key({"type": "x", "subject": "!!!"}) is None and learning_key({"type": "", "subject": "a"}) is None


def test_confidence_rules():
    r = rec(conf=0.9, type_="convention", created=NOW - timedelta(days=80))
    c = confirmed(r, NOW)
    assert c["confidence"] == 1.0 and c["expires_at"] == iso(NOW + timedelta(days=90))
    d = contradicted(rec(conf=0.1), NOW)
    assert d["confidence"] == 0.0
    r2 = rec(conf=0.5)
    assert contradicted(r2, NOW)["expires_at"] == r2["expires_at"]
    assert confirmed(r2, NOW)["confidence"] == 0.65


# --- the write pipeline (the anchor's sweep/prune cases) --------------------------------------


def test_prune_expired_dead_and_dry_run(tmp_path):
    store = put(tmp_path / "learnings.jsonl", [rec("a", expires=iso(NOW - timedelta(seconds=1))), rec("b", conf=0.0),
                                               rec("c")])
    before = sha(store)
    dry = write_generation(store, None, now=NOW, dry_run=True)
    assert dry.byReason == {"expired": 1, "pruned": 1} and dry.kept == 1 and dry.dryRun
    assert sha(store) == before and not archive_path(store).exists() and backups(store) == []
    res = write_generation(store, None, now=NOW)
    assert (res.scanned, res.kept, res.archived) == (3, 1, 2)
    reasons = {r["subject"]: r["_archive_reason"] for r in read_archive(store)}
    assert reasons == {"a": "expired", "b": "pruned"}
    assert len(backups(store)) == 1
    again = write_generation(store, None, now=NOW)  # a second prune is a no-op and adds nothing
    assert again.archived == 0 and len(read_archive(store)) == 2 and len(backups(store)) == 1


def test_consolidate_superseded_points_at_winner_and_null_subjects_survive(tmp_path):
    win = rec("same", conf=0.9)
    lose = rec("same ", conf=0.4)
    tie1, tie2 = rec("tie", conf=0.5), rec("tie", conf=0.5)
    nulls = [rec("", conf=0.5), rec("", conf=0.6), rec(None, conf=0.5)]
    store = put(tmp_path / "l.jsonl", [lose, win, tie1, tie2, *nulls])
    write_generation(store, None, now=NOW)
    live = {r["id"] for r in read_store(store).records}
    assert win["id"] in live and lose["id"] not in live and tie1["id"] in live and tie2["id"] not in live
    assert all(n["id"] in live for n in nulls)
    arch = {r["id"]: r for r in read_archive(store)}
    assert arch[lose["id"]]["_superseded_by"] == win["id"] and arch[tie2["id"]]["_superseded_by"] == tie1["id"]


def test_caller_drops_are_archived_as_a_multiset(tmp_path):
    a, b = rec("a"), rec("b")
    idless = {k: v for k, v in rec("c").items() if k != "id"}
    store = put(tmp_path / "l.jsonl", [a, a, b, idless])
    res = write_generation(store, lambda recs: [recs[0]], now=NOW, consolidate=False)
    assert res.kept == 1 and res.archived == 3 and res.byReason == {"pruned": 3}
    archived = read_archive(store)
    assert [r["id"] for r in archived if "id" in r].count(a["id"]) == 1 and any("id" not in r for r in archived)
    # an id-less record that is kept is not tombstoned
    store2 = put(tmp_path / "m.jsonl", [idless, b])
    assert write_generation(store2, lambda recs: recs, now=NOW).archived == 0


def test_drop_reason_fn_merged_and_pointer_rules(tmp_path):
    a, b = rec("a"), rec("b")
    store = put(tmp_path / "l.jsonl", [a, b])
    write_generation(store, lambda recs: [recs[1]], now=NOW, drop_reason=lambda r: ("merged", b["id"]))
    [arch] = read_archive(store)
    assert arch["_archive_reason"] == "merged" and arch["_merged_into"] == b["id"]
    assert ARCHIVE_REASONS == ("expired", "pruned", "superseded", "merged")
    put(store, [a, b])
    before = sha(store), sha(archive_path(store))
    for bad in ("vanished", lambda r: "merged", lambda r: ("superseded", "")):
        with pytest.raises(LearningValidationError):
            write_generation(store, lambda recs: [recs[1]], now=NOW, drop_reason=bad)
    assert (sha(store), sha(archive_path(store))) == before


def test_invalid_keep_record_throws_before_the_archive_append(tmp_path):
    store = put(tmp_path / "l.jsonl", [rec("a", conf=0.0), rec("b")])
    before = sha(store)
    bad = rec("new", source_session="[object Object]")
    for _ in range(2):
        with pytest.raises(LearningValidationError):
            write_generation(store, lambda recs: recs + [bad], now=NOW)
    nan = rec("nan")
    nan["confidence"] = float("nan")
    with pytest.raises(LearningValidationError):
        write_generation(store, lambda recs: recs + [nan], now=NOW)
    assert sha(store) == before and not archive_path(store).exists() and backups(store) == []


def test_archive_write_failure_leaves_the_store_byte_identical(tmp_path):
    store = put(tmp_path / "l.jsonl", [rec("a", conf=0.0), rec("b")])
    before = sha(store)
    archive_path(store).mkdir()  # appending to a folder fails
    with pytest.raises(OSError):
        write_generation(store, None, now=NOW)
    assert sha(store) == before and backups(store) == []


def test_keep_three_backups_and_malformed_lines_kept_verbatim(tmp_path):
    store = put(tmp_path / "l.jsonl", [rec("a"), b"not json", b"[1,2]", b'"str"'])
    for i in range(5):
        write_generation(store, lambda recs, i=i: recs + [rec(f"n{i}")], now=NOW + timedelta(seconds=i))
    assert len(backups(store)) == 3
    content = read_store(store)
    assert content.malformed == [b"not json", b"[1,2]", b'"str"'] and len(content.records) == 6
    assert store.read_bytes().endswith(b'not json\n[1,2]\n"str"\n')


def test_lock_blocks_a_second_writer_and_nothing_is_written(tmp_path):
    import threading

    store = put(tmp_path / "l.jsonl", [rec("a", conf=0.0)])
    before = sha(store)
    held, release = threading.Event(), threading.Event()

    def holder():
        with store_lock(store):
            held.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(5)
    try:
        t0 = time.monotonic()
        with pytest.raises(LearningsLockError):
            write_generation(store, None, now=NOW, lock_timeout=0.2)
        assert time.monotonic() - t0 < 2
    finally:
        release.set()
        t.join()
    assert sha(store) == before
    with store_lock(store):  # reentrant in one thread
        write_generation(store, None, now=NOW)
    assert read_store(store).records == []


def test_interop_with_the_anchors_store(tmp_path):
    ws = tmp_path / "ws"
    store = ws / ".orchestrator" / "metrics" / "learnings.jsonl"
    store.parent.mkdir(parents=True)
    shutil.copy(FIX / "anchor-learnings.jsonl", store)
    assert default_store_path(ws) == store
    assert default_store_path(tmp_path / "other") == tmp_path / "other" / ".artifacts/learnings/learnings.jsonl"
    content = read_store(store)
    assert len(content.records) == 5 and len(content.malformed) == 2  # [1,2,3] and the torn tail
    legacy = content.records[1]
    assert legacy["type"] == "anti-pattern" and legacy["insight"] == "Never collapse null subjects"
    assert legacy["source_session"] == "deep-2026-03-01-0900" and legacy["scope"] == "local"
    res = write_generation(store, None, now=NOW)
    # NOW is 2026-06-01: the hardware record (expires 2026-07-01) stays, only the dead one goes
    assert res.byReason == {"pruned": 1} and res.kept == 4
    data = store.read_bytes()
    assert data.endswith(b'[1,2,3]\n{"id":"torn","type":"conv\n')
    ids = {r["id"] for r in read_store(store).records} | {r["id"] for r in read_archive(store)}
    assert len(ids) == 5  # every record live or archived; the torn line stays verbatim on disk
    # the record with scope "project" (GH#69) is stored, so tolerated; a new one like it is refused
    bad_new = rec("new", scope="project")
    with pytest.raises(LearningValidationError):
        write_generation(store, lambda recs: recs + [bad_new], now=NOW)
    for line in archive_path(store).read_bytes().splitlines():
        json.loads(line)


# --- pools ------------------------------------------------------------------------------------


def _pool_ids(result, seed):
    return [m.id for m in result.pools.get(seed, [])]


def test_pools_dice_floor_boost_and_order():
    a = rec("retry flaky websocket reconnect", insight="websocket reconnect storms under load",
            file_paths=["lib/web/socket.ex"])
    b = rec("websocket reconnect backoff", insight="reconnect storms need jittered backoff",
            file_paths=["lib/web/socket.ex"])
    c = rec("unrelated database migration", insight="migrations must be reversible")
    path_only = rec("zzz qqq", insight="xxx yyy", file_paths=["lib/web/socket.ex"])
    res = build_candidate_pools([a, b, c, path_only], now=NOW)
    assert _pool_ids(res, a["id"]) == [b["id"]] and _pool_ids(res, c["id"]) == []
    m = res.pools[a["id"]][0]
    assert m.boost == 0.05 and m.score == pytest.approx(m.base + 0.05) and "websocket" in m.sharedTokens
    assert path_only["id"] not in res.pools  # a path-only pair never pools (boost < floor)
    assert 0.05 < FLOOR
    rev = build_candidate_pools([path_only, c, b, a], now=NOW)
    assert rev.pools == res.pools


def test_pools_expiry_exact_key_evidence_german_cap_and_hostile_input():
    old = rec("same thing", created=NOW - timedelta(days=2))
    new = rec("Same Thing!", created=NOW - timedelta(days=1))
    gone = rec("same thing expired stuff", expires=iso(NOW - timedelta(days=1)))
    ev1 = rec("alpha", evidence="shared evidence words", insight="one")
    ev2 = rec("beta", evidence="shared evidence words", insight="two")
    de1 = rec("der die das und", insight="nicht")
    de2 = rec("der die das und", type_="convention", insight="nicht auch")
    res = build_candidate_pools([old, new, gone, ev1, ev2, de1, de2, None, 5, {"type": ""}, new], now=NOW)
    assert res.duplicates == [{"key": learning_key(old), "kept": new["id"], "dropped": [old["id"]]}]
    assert res.stats["expired"] == 1 and res.stats["unkeyable"] >= 1
    assert ev1["id"] not in res.pools and de1["id"] not in res.pools
    many = [rec(f"flaky socket test {i}", insight="flaky socket") for i in range(12)]
    capped = build_candidate_pools(many, now=NOW)
    assert all(len(v) <= 8 for v in capped.pools.values())


# --- judgment ---------------------------------------------------------------------------------


CAND = rec("lib/web/socket.ex", rid="cand-1")
N1, N2 = rec("socket reconnect", rid="n-1"), rec("socket backoff", rid="n-2")
INP = build_judgment_input(CAND, [N1, N2, CAND, N1, {**N2, "id": "n-3", "_archived_at": "x"}])


def answer(decisions, **env):
    return json.dumps({"candidate_id": "cand-1", "decisions": decisions, **env})


GOOD = {"decision": "supersede", "target_ids": ["n-1"], "surface": "lib/web/socket.ex reconnect",
        "rationale": "the reconnect rule in socket.ex replaces it", "confidence": 0.8}


def test_judgment_input_filters_neighbours_and_digest_is_order_independent():
    assert [n["id"] for n in INP.neighbours] == ["n-1", "n-2"]
    assert INP.corpus_fingerprint["count"] == 2
    assert build_judgment_input(CAND, [N2, N1]).corpus_fingerprint == INP.corpus_fingerprint
    assert build_judgment_input({"type": "x"}, [N1]) is None
    assert len(build_judgment_input(CAND, [rec(rid=f"x{i}") for i in range(20)]).neighbours) == 12


FAILURES = [
    ("partial", answer([GOOD]), None),  # unusable input
    ("empty", "   ", INP),
    ("unparseable", "```json\n{}\n```", INP),
    ("unparseable", "[1]", INP),
    ("partial", answer([GOOD], candidate_id="other"), INP),
    ("partial", answer([GOOD], corpus_fingerprint={"digest": "0" * 16}), INP),
    ("partial", json.dumps({"candidate_id": "cand-1"}), INP),
    ("empty", answer([]), INP),
    ("partial", answer([{**GOOD, "decision": None}]), INP),
    ("enum_violation", answer([{**GOOD, "decision": "Skip"}]), INP),
    ("enum_violation", answer([{**GOOD, "decision": "store"}]), INP),
    ("enum_violation", answer([{**GOOD, "decision": "merge "}]), INP),
    ("partial", answer([{**GOOD, "target_ids": "n-1"}]), INP),
    ("partial", answer([{**GOOD, "target_ids": []}]), INP),
    ("partial", answer([{"decision": "skip", "target_ids": ["n-1"], "confidence": 0.5}]), INP),
    ("self_reference", answer([{**GOOD, "target_ids": ["n-9", "cand-1"]}]), INP),
    ("phantom_id", answer([{**GOOD, "target_ids": ["n-9"]}]), INP),
    ("phantom_id", answer([{**GOOD, "target_ids": ["n-3"]}]), INP),  # archived: never presented
    ("duplicate_target", answer([GOOD, {**GOOD, "decision": "merge"}]), INP),
    ("partial", answer([{**GOOD, "rationale": "because it is better"}]), INP),
    ("partial", answer([{**GOOD, "surface": ""}]), INP),
    ("partial", answer([{**GOOD, "confidence": 1.5}]), INP),
    ("partial", answer([{**GOOD, "confidence": "0.5"}]), INP),
]


@pytest.mark.parametrize("mode, raw, inp", FAILURES)
def test_each_failure_mode_voids_the_whole_batch(mode, raw, inp):
    v = parse_judgment(raw, inp)
    assert not v.ok and v.mode == mode and v.decisions == [] and v.requeueCandidate and v.counters == {"abstain": 1}
    calls = []
    effects = {k: (lambda cid, d: calls.append(d)) for k in ("refine", "supersede", "merge", "proposeContradiction")}
    assert apply_verdict(v, effects).ok is False and calls == []


@pytest.mark.parametrize("raw", [
    answer([GOOD]),
    answer([GOOD], corpus_fingerprint=INP.corpus_fingerprint),
    answer([{"decision": "skip", "target_ids": [], "confidence": 0}]),
    answer([{"decision": "abstain", "target_ids": [], "confidence": 1}]),
    answer([{**GOOD, "rationale": "SOCKET changed"}]),  # a surface token names it (near miss of partial)
    answer([GOOD, {**GOOD, "decision": "contradict", "target_ids": ["n-2"]}]),
])
def test_near_misses_parse(raw):
    v = parse_judgment(raw, INP)
    assert v.ok, v.detail


def test_timeout_and_throwing_judge():
    assert set(FAILURE_MODES) == {"partial", "empty", "unparseable", "enum_violation", "self_reference",
                                  "phantom_id", "duplicate_target", "timeout"}
    v = judge_candidate(INP, lambda inp: time.sleep(1) or answer([GOOD]), timeout_s=0.05)
    assert not v.ok and v.mode == "timeout"

    def boom(inp):
        raise RuntimeError("judge crashed")
    assert judge_candidate(INP, boom).mode == "unparseable"
    assert judge_candidate(INP, lambda inp: answer([GOOD])).ok


def test_apply_verdict_resolves_every_handler_first():
    v = parse_judgment(answer([GOOD, {**GOOD, "decision": "merge", "target_ids": ["n-2"]}]), INP)
    calls = []
    assert apply_verdict(v, {"supersede": lambda c, d: calls.append(d)}).reason == "effect-not-wired"
    assert calls == []
    r = apply_verdict(v, {"supersede": lambda c, d: calls.append(d.decision), "merge": lambda c, d: 1 / 0})
    assert r.reason == "effect-threw" and calls == ["supersede"]
    skip = parse_judgment(answer([{"decision": "skip", "target_ids": [], "confidence": 0}]), INP)
    assert apply_verdict(skip, {}).ok


def test_agent_judge_replays_cassettes(tmp_path):
    script = tmp_path / "judge.sh"
    script.write_text("#!/bin/sh\ncat >/dev/null\necho '" + answer([GOOD]) + "'\n")
    script.chmod(0o755)
    cassettes = tmp_path / "cassettes"
    rec_judge = AgentJudge([str(script)], cassettes, "record")
    assert judge_candidate(INP, rec_judge).ok
    script.unlink()
    assert judge_candidate(INP, AgentJudge(["/nonexistent"], cassettes, "replay")).ok
    other = build_judgment_input(CAND, [N1])
    assert judge_candidate(other, AgentJudge(["/nonexistent"], cassettes, "replay")).mode == "unparseable"
    assert "untrusted" in build_prompt(INP)


# --- evolve: analyze and confirm --------------------------------------------------------------


def finding(subject, type_="fragile-file", insight=None, **kw):
    return Finding(type=type_, subject=subject, insight=insight or f"{subject} keeps breaking",
                   evidence="edits at x.jsonl:3", cites=[Cite(file="x.jsonl", line=3, session="s1")],
                   source_session="s1", file_paths=[subject], **kw)


def test_analyze_dedupes_pools_and_confirm_writes_only_the_selection(tmp_path):
    store = tmp_path / ".artifacts/learnings/learnings.jsonl"
    old = rec("lib/a.ex", conf=0.5)
    near = rec("socket reconnect storms", type_="recurring-issue", insight="websocket reconnect storms")
    put(store, [old, near])
    cfg = EvolveConfig(workspace=tmp_path, use_default_transcripts=False)
    fs = [finding("lib/a.ex"), finding("zeta/omega.rb", insight="omega churn"),
          finding("websocket reconnect", type_="fragile-file", insight="websocket reconnect storms again")]
    a = analyze(cfg, findings=fs, now=NOW)
    by = {c.subject: c for c in a.candidates}
    assert by["lib/a.ex"].action == "confirm" and by["lib/a.ex"].confidence == 0.65
    assert by["zeta/omega.rb"].action == "new" and by["zeta/omega.rb"].possible_duplicates == []
    assert [m.id for m in by["websocket reconnect"].possible_duplicates] == [near["id"]]
    q = a.question.questions[0]
    assert q.multiSelect and q.options[0].label.startswith("[fragile-file] ")
    assert "confidence 0.65 (+0.15)" in next(o.description for o in q.options if o.label == label(by["lib/a.ex"]))
    assert "possible duplicate of socket reconnect storms" in next(
        o.description for o in q.options if o.label == label(by["websocket reconnect"]))
    before = sha(store)
    with pytest.raises(InputError):
        confirm(cfg, [], now=NOW)
    with pytest.raises(InputError):
        confirm(cfg, ["c-nope"], now=NOW)
    assert sha(store) == before
    res = confirm(cfg, [by["lib/a.ex"].id, label(by["zeta/omega.rb"])], now=NOW)
    assert res.write.archived == 0 and res.write.kept == 3
    recs = {r["subject"]: r for r in read_store(store).records}
    assert recs["lib/a.ex"]["confidence"] == 0.65 and recs["lib/a.ex"]["expires_at"] == iso(NOW + timedelta(days=45))
    assert recs["zeta/omega.rb"]["confidence"] == 0.5 and recs["zeta/omega.rb"]["evidence"] == "edits at x.jsonl:3"
    validate_learning(recs["zeta/omega.rb"])
    assert "websocket reconnect" not in recs
    with pytest.raises(InputError):  # already applied: no longer pending
        confirm(cfg, [by["lib/a.ex"].id], now=NOW)


def test_judged_supersede_is_applied_on_confirm_and_void_is_never_shown(tmp_path):
    store = tmp_path / ".artifacts/learnings/learnings.jsonl"
    near = rec("socket reconnect storms", type_="recurring-issue", insight="websocket reconnect storms")
    put(store, [near])
    fs = [finding("websocket reconnect", insight="websocket reconnect storms again")]

    def judge(inp):
        return json.dumps({"candidate_id": inp.candidate["id"], "decisions": [
            {"decision": "supersede", "target_ids": [near["id"]], "surface": "websocket reconnect",
             "rationale": "the websocket rule replaces the older one", "confidence": 0.7}]})

    void_cfg = EvolveConfig(workspace=tmp_path, use_default_transcripts=False, judge=lambda inp: "Supersede!")
    void = analyze(void_cfg, findings=fs, now=NOW)
    assert void.void_judgments == 1 and void.candidates[0].relations == []
    cfg = EvolveConfig(workspace=tmp_path, use_default_transcripts=False, judge=judge)
    a = analyze(cfg, findings=fs, now=NOW)
    [c] = a.candidates
    assert [d.decision for d in c.relations] == ["supersede"] and "judge: supersede" in a.question.questions[0].options[0].description
    res = confirm(cfg, [c.id], now=NOW)
    assert res.write.byReason == {"superseded": 1}
    [live] = read_store(store).records
    [gone] = read_archive(store)
    assert gone["id"] == near["id"] and gone["_superseded_by"] == live["id"]


@pytest.mark.parametrize("step", ["validated", "archive-half", "archived", "backup", "tmp", "renamed"])
def test_confirm_with_a_crash_at_each_step_loses_nothing(tmp_path, step):
    store = tmp_path / ".artifacts/learnings/learnings.jsonl"
    near = rec("socket reconnect storms", type_="recurring-issue", insight="websocket reconnect storms")
    put(store, [near])

    def judge(inp):
        return json.dumps({"candidate_id": inp.candidate["id"], "decisions": [
            {"decision": "merge", "target_ids": [near["id"]], "surface": "websocket",
             "rationale": "same websocket storm", "confidence": 0.7}]})

    cfg = EvolveConfig(workspace=tmp_path, use_default_transcripts=False, judge=judge)
    [c] = analyze(cfg, findings=[finding("websocket reconnect", insight="websocket reconnect storms")], now=NOW).candidates

    def crash(name):
        if name == step:
            raise RuntimeError(name)
    try:
        confirm(cfg, [c.id], now=NOW, fault=crash)
    except RuntimeError:
        pass
    live = {r["id"] for r in read_store(store).records}
    archived = {r["id"]: r for r in read_archive(store)}
    assert near["id"] in live or near["id"] in archived
    assert read_store(store).malformed == []
    if step == "renamed":
        assert near["id"] not in live and archived[near["id"]]["_merged_into"] in live


# --- CLI --------------------------------------------------------------------------------------


def cli(*argv):
    parser = ArgumentParser(prog="kitsoki-miner")
    add_evolve_commands(parser.add_subparsers(dest="command", required=True))
    out, err = io.StringIO(), io.StringIO()
    try:
        args = parser.parse_args(["evolve", *argv])
    except SystemExit as exc:
        return exc.code, "", ""
    return run_evolve(args, out, err), out.getvalue(), err.getvalue()


def test_cli_prune_dry_run_apply_json_and_exit_codes(tmp_path):
    today = datetime.now(timezone.utc)
    store = put(tmp_path / "l.jsonl", [rec("a", conf=0.0, created=today), rec("b", created=today)])
    before = sha(store)
    code, out, _ = cli("prune", "--store", str(store), "--json")
    assert code == 0 and sha(store) == before
    payload = json.loads(out)
    assert list(payload) == ["file", "entries_from", "scanned", "kept", "archived", "byReason", "dryRun", "archivePath"]
    assert payload["dryRun"] is True and payload["byReason"] == {"pruned": 1}
    code, out, _ = cli("prune", "--store", str(store), "--apply", "--json")
    assert code == 0 and json.loads(out)["archived"] == 1 and len(backups(store)) == 1
    assert cli("prune", "--store", str(store), "--apply")[0] == 0  # no-op
    assert cli("prune", "--dry-run", "--apply", "--store", str(store))[0] == 1
    assert cli("prune", "--bogus")[0] == 1
    assert cli("list", "--store", str(store), "--repo", str(tmp_path / "missing"))[0] == 1
    code, out, _ = cli("list", "--store", str(store), "--json")
    assert code == 0 and len(json.loads(out)["records"]) == 1


def test_cli_confirm_exit_codes(tmp_path):
    store = tmp_path / ".artifacts/learnings/learnings.jsonl"
    code, _, err = cli("confirm", "--repo", str(tmp_path), "--select", "c-x")
    assert code == 1 and "analyze" in err and not store.exists()
    cfg = EvolveConfig(workspace=tmp_path, use_default_transcripts=False)
    a = analyze(cfg, findings=[finding("lib/a.ex")], now=NOW)
    assert cli("confirm", "--repo", str(tmp_path))[0] == 1 and not store.exists()
    code, out, _ = cli("confirm", "--repo", str(tmp_path), "--select", a.candidates[0].id, "--json")
    assert code == 0 and json.loads(out)["write"]["kept"] == 1
    store.write_text('{"id": "x", "type": "a", "subject": "s", "insight": "i", "evidence": "", "confidence": 0.1,'
                     '"source_session": "s", "created_at": "2026-01-01T00:00:00Z", "expires_at": "2099-01-01T00:00:00Z"}\n')
    a = analyze(cfg, findings=[finding("lib/z.ex")], now=NOW)
    archive_path(store).mkdir()
    store.write_text(store.read_text() + "")
    code, _, err = cli("prune", "--repo", str(tmp_path), "--apply")
    assert code == 0  # nothing to archive: the broken archive is not touched
    put(store, [rec("dead", conf=0.0, created=datetime.now(timezone.utc))])
    code, _, err = cli("prune", "--repo", str(tmp_path), "--apply")
    assert code == 2 and "failed" in err


def test_cli_analyze_reads_transcripts(tmp_path):
    from tests.test_learnings_extract import edit_session

    tdir = tmp_path / "t"
    for i in range(3):
        edit_session(tdir / f"s{i}.jsonl", f"s{i}", ["src/app.py"], fail=False)
    code, out, _ = cli("analyze", "--repo", str(tmp_path), "--transcripts", str(tdir), "--json")
    assert code == 0
    subjects = {c["subject"] for c in json.loads(out)["candidates"]}
    assert "src/app.py" in subjects


def test_append_learning_stamps_validates_and_heals_a_torn_tail(tmp_path):
    from core.learnings.store import append_learning

    store = tmp_path / "l.jsonl"
    store.write_bytes(b'{"id":"torn"')
    r = append_learning(store, {k: v for k, v in rec("a").items() if k not in ("created_at", "expires_at")}, now=NOW)
    assert r["expires_at"] == iso(NOW + timedelta(days=45)) and r["schema_version"] == 1
    content = read_store(store)
    assert [x["id"] for x in content.records] == [r["id"]] and content.malformed == [b'{"id":"torn"']
    with pytest.raises(LearningValidationError):
        append_learning(store, rec("b", confidence=2.0), now=NOW)
