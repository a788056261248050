"""The always-on miner: watcher debounce, one pass at a time, pause/resume/now/scope, paused records."""

import time
from pathlib import Path

import orjson

from builders import prompt, tool_result, tool_use, uid
from conftest import jsonl
from core.mining.service import MinerService, trace_path
from core.trace import Trace


def records(sid: str, i: int) -> list[dict]:
    a, b, c = uid(), uid(), uid()
    return [prompt(a, None, f"regenerate the api client #{i}", session=sid),
            tool_use(b, a, f"m{i}", f"t{i}", "Bash", {"command": "make client"}, session=sid),
            tool_result(c, b, f"t{i}", "ok", session=sid)]


def service(tmp_path, **kw) -> tuple[MinerService, Path]:
    d = tmp_path / "transcripts"
    jsonl(d / "s1.jsonl", records("s1", 0))
    ws = tmp_path / "ws"
    ws.mkdir()
    kw.setdefault("project_paths", ["/work/proj"])  # where the builders' sessions ran
    svc = MinerService(ws, transcript_dirs=[d], home=Path("/nonexistent"), env={}, **kw)
    return svc, d


def pass_records(ws: Path) -> list[dict]:
    return [e.payload for e in Trace(trace_path(ws)).events() if e.kind == "mining.pass_ran"]


def wait_for(predicate, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_first_pass_runs_off_the_callers_thread_and_is_recorded(tmp_path):
    svc, _ = service(tmp_path)
    svc.start(watch=False)
    try:
        assert wait_for(lambda: svc.passes_done == 1)
        status = svc.status()
        assert status.last_pass.trigger == "seed" and not status.running and status.last_error is None
        [record] = pass_records(svc.workspace)
        assert record["trigger"] == "seed" and record["sessions"] == 1
    finally:
        svc.stop()


def test_paused_requests_are_recorded_not_run_and_now_still_runs(tmp_path):
    svc, _ = service(tmp_path, cadence_seconds=0.2)
    svc.start(watch=False, run_first_pass=False)
    try:
        svc.pause()
        assert svc.request_pass() is False
        assert svc.passes_done == 0
        assert pass_records(svc.workspace) == [{"trigger": "live", "slug": svc.slug, "sessions": 0, "recipes": 0,
                                                "job_id": "", "paused": True}]
        report = svc.run_now(timeout=20)  # a person asked: runs even while paused
        assert report is not None and report.trigger == "seed"
        svc.resume()
        assert svc.request_pass() is True
        assert wait_for(lambda: svc.passes_done == 2)
    finally:
        svc.stop()


def test_a_burst_of_writes_gives_one_pass(tmp_path):
    svc, d = service(tmp_path, cadence_seconds=1.0)
    svc.start(watch=True, run_first_pass=True)
    try:
        assert wait_for(lambda: svc.passes_done == 1)
        time.sleep(0.5)  # let the watcher settle on the folder
        with open(d / "s1.jsonl", "ab") as fh:
            for i in range(1, 21):  # an agent streaming lines
                for rec in records("s1", i):
                    fh.write(orjson.dumps(rec) + b"\n")
                fh.flush()
                time.sleep(0.01)
        assert wait_for(lambda: svc.passes_done >= 2)
        time.sleep(2.5)  # past the debounce: no second pass for the same burst
        assert svc.passes_done == 2
        assert svc.status().last_pass.files_read == 1
    finally:
        svc.stop()


def test_scope_changes_what_is_mined(tmp_path):
    svc, _ = service(tmp_path)
    other = tmp_path / "other"
    jsonl(other / "s9.jsonl", records("s9", 0))
    svc.start(watch=False, run_first_pass=False)
    try:
        svc.set_scope([other])
        report = svc.run_now(timeout=20)
        assert report.files_seen == 1 and str(other) in svc.status().transcript_dirs
    finally:
        svc.stop()
