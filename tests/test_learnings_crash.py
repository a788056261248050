"""A hypothesis state machine of confirm / contradict / supersede / prune / consolidate writes with a
crash injected at each step of the write pipeline. Afterwards every id ever written is live in the
store or in the archive, and the store parses."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from core.learnings.schema import derive_expires_at, iso
from core.learnings.store import (
    archive_path,
    confirmed,
    contradicted,
    read_archive,
    read_store,
    write_generation,
)

STEPS = [None, "validated", "archive-half", "archived", "backup", "tmp", "renamed"]
TYPES = ["fragile-file", "recurring-issue", "convention"]
SUBJECTS = ["a.py", "b.py", "", "lint"]


class Crash(Exception):
    pass


def crash_at(step):
    def fault(name):
        if name == step:
            raise Crash(name)
    return fault


def new_record(type_, subject, now, confidence=0.5):
    return {"id": str(uuid.uuid4()), "type": type_, "subject": subject, "insight": f"{type_} {subject}",
            "evidence": "x", "confidence": confidence, "source_session": "s-1", "created_at": iso(now),
            "expires_at": derive_expires_at(iso(now), type_), "schema_version": 1, "scope": "local"}


class StoreMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="learn-sm-"))
        self.store = self.dir / "learnings.jsonl"
        self.now = datetime(2026, 5, 1, tzinfo=timezone.utc)
        self.ever: set[str] = set()

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _write(self, transform, step, **kw):
        try:
            write_generation(self.store, transform, now=self.now, fault=crash_at(step), **kw)
        except Crash:
            pass
        self.ever |= {r["id"] for r in read_store(self.store).records}

    @rule(type_=st.sampled_from(TYPES), subject=st.sampled_from(SUBJECTS), conf=st.sampled_from([0.1, 0.5, 0.9]),
          step=st.sampled_from(STEPS))
    def add(self, type_, subject, conf, step):
        rec = new_record(type_, subject, self.now, conf)
        self._write(lambda recs: recs + [rec], step)

    @rule(pick=st.integers(0, 50), step=st.sampled_from(STEPS))
    def confirm(self, pick, step):
        def t(recs):
            if recs:
                i = pick % len(recs)
                recs[i] = confirmed(recs[i], self.now)
            return recs
        self._write(t, step)

    @rule(pick=st.integers(0, 50), times=st.integers(1, 3), step=st.sampled_from(STEPS))
    def contradict(self, pick, times, step):
        def t(recs):
            if recs:
                i = pick % len(recs)
                for _ in range(times):
                    recs[i] = contradicted(recs[i], self.now)
            return recs
        self._write(t, step)

    @rule(pick=st.integers(0, 50), step=st.sampled_from(STEPS))
    def supersede(self, pick, step):
        rec = new_record("convention", "replacement", self.now)

        def t(recs):
            if recs:
                del recs[pick % len(recs)]
            return recs + [rec]
        self._write(t, step, drop_reason=lambda r: ("superseded", rec["id"]))

    @rule(days=st.integers(0, 100), step=st.sampled_from(STEPS))
    def prune(self, days, step):
        self.now += timedelta(days=days)
        self._write(None, step)

    @invariant()
    def nothing_lost(self):
        content = read_store(self.store)
        assert content.malformed == []
        live = {r["id"] for r in content.records}
        archived = {r["id"] for r in read_archive(self.store)}
        assert self.ever <= live | archived, self.ever - live - archived
        # the archive is append-only and every archived line carries a closed reason
        for r in read_archive(self.store):
            assert r["_archive_reason"] in ("expired", "pruned", "superseded", "merged")


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=40, stateful_step_count=12, deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])


def test_torn_archive_tail_is_not_glued_to_the_next_append(tmp_path):
    store = tmp_path / "learnings.jsonl"
    now = datetime(2026, 5, 1, tzinfo=timezone.utc)
    a, b = new_record("convention", "a", now, 0.0), new_record("convention", "b", now, 0.0)
    write_generation(store, lambda r: [a, b], now=now, prune=False)
    try:
        write_generation(store, None, now=now, fault=crash_at("archive-half"))
    except Crash:
        pass
    assert {r["id"] for r in read_store(store).records} == {a["id"], b["id"]}
    write_generation(store, None, now=now)
    assert read_store(store).records == []
    ids = [r["id"] for r in read_archive(store)]
    assert a["id"] in ids and b["id"] in ids
    assert archive_path(store).read_bytes().count(b"\n") >= 3  # the torn line stays on its own line
