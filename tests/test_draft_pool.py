"""Drafting on every core (core/proposals/draft_pool.py): a pass drafted by forked helpers stages exactly what
one process stages, in the same order, writes the memos the helpers learned, and survives a helper that dies."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from core.mining.passes import recipes_json, recipes_path
from core.proposals import draft_pool
from test_proposals import recipe

ROOT = Path(__file__).resolve().parents[1]
KITSOKI_WS = ROOT.parent / "shared" / "kitsoki-workspace"
ASKS = ["rotate the signing keys", "archive the stale branches", "summarise the open incidents",
        "export the audit log", "pause the nightly jobs", "refresh the dependency report"]


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    shutil.copytree(KITSOKI_WS, ws, symlinks=True, ignore=shutil.ignore_patterns(".artifacts", ".git"))
    return ws


def _recipes():
    return [recipe("world", "test command", iface="test_cmd", value="make check"),
            *(recipe("intent", ask, phrasings=[(ask, 3), (f"please {ask}", 2)]) for ask in ASKS)]


def _staged(ws: Path) -> dict[str, str]:
    """Every staged file by its digest, less what differs by design: the proposal's time and signature, and
    the workspace's own path and random id (each run has its own copy)."""
    out = {}
    for path in sorted((ws / ".artifacts" / "mining").rglob("*")):
        if not path.is_file() or path.name in ("recipes.json", "trace.jsonl", "workspace.id") or "cache" in path.parts:
            continue
        data = path.read_bytes().replace(str(ws).encode(), b"<ws>")
        if path.name == "proposal.json":
            proposal = orjson.loads(data)
            for volatile in ("drafted_at", "mac"):
                proposal.pop(volatile, None)
            data = orjson.dumps(proposal, option=orjson.OPT_SORT_KEYS)
        out[path.relative_to(ws).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def _memo_kinds(ws: Path, name: str) -> dict[str, int]:
    """How many entries of each kind a memo holds (the keys hash the workspace's path: only counts compare)."""
    entries = orjson.loads((ws / ".artifacts" / "cache" / name).read_bytes())["entries"]
    return {"agents": sum(key.startswith("agents\0") for key in entries),
            "other": sum(not key.startswith("agents\0") for key in entries)}


def _propose(ws: Path, workers: str) -> tuple[dict, str]:
    """`kitsoki-miner propose --json` as the console script runs it (a fresh process with no other thread, so it
    may fork), its log at INFO on stderr: (the report, the log)."""
    script = ("import logging, sys; logging.basicConfig(level=logging.INFO); "
              f"sys.argv = ['kitsoki-miner', 'propose', '--repo', {str(ws)!r}, '--json']; "
              "from server.cli import main; sys.exit(main())")
    env = {**os.environ, draft_pool.WORKERS_ENV: workers}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout), done.stderr


@pytest.mark.skipif(not KITSOKI_WS.is_dir(), reason="needs ../shared/kitsoki-workspace")
def test_a_pass_drafted_on_two_cores_stages_what_one_process_stages(tmp_path):
    runs = {}
    for workers in ("1", "2"):
        ws = _workspace(tmp_path / workers)
        (ws / ".artifacts" / "mining").mkdir(parents=True)
        recipes_path(ws).write_bytes(recipes_json(_recipes()))
        runs[workers] = (ws, *_propose(ws, workers))
    (one, serial, _), (two, pooled, log) = runs["1"], runs["2"]
    assert "in 2 processes" in log  # the drafts really were shared out
    assert len(serial["raised"]) >= draft_pool.MIN_DRAFTS
    assert pooled["raised"] == serial["raised"]  # the same cards, in the same order
    assert [(o["recipe_id"], o["result"], o["reason"]) for o in pooled["outcomes"]] == \
        [(o["recipe_id"], o["result"], o["reason"]) for o in serial["outcomes"]]
    assert _staged(two) == _staged(one)
    # what the helpers' loads learned is in the memos the next command reads, as if one process had loaded
    for memo in ("checked.json", "loaded.json"):
        assert _memo_kinds(two, memo) == _memo_kinds(one, memo)


def test_results_come_back_in_order_from_more_than_one_process(monkeypatch):
    monkeypatch.setenv(draft_pool.WORKERS_ENV, "2")

    def build(n):
        time.sleep(0.05)  # a draft takes time: the helper is up before this process has taken them all
        return n * n, os.getpid()

    out = draft_pool.build_all(list(range(12)), build)
    assert [square for square, _ in out] == [n * n for n in range(12)]
    assert len({pid for _, pid in out}) == 2  # this process and one helper


def test_a_helper_that_dies_costs_time_not_drafts(monkeypatch):
    monkeypatch.setenv(draft_pool.WORKERS_ENV, "3")
    here = os.getpid()

    def build(n):
        if os.getpid() != here and n % 3 == 0:
            os._exit(9)  # a helper killed while it holds a draft
        return n + 100

    assert draft_pool.build_all(list(range(10)), build) == [n + 100 for n in range(10)]


def test_a_process_with_other_threads_never_forks(monkeypatch):
    monkeypatch.setenv(draft_pool.WORKERS_ENV, "2")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        out = draft_pool.build_all(list(range(6)), lambda n: os.getpid())
    finally:
        stop.set()
        other.join()
    assert set(out) == {os.getpid()}


def test_one_worker_or_few_drafts_stay_in_this_process(monkeypatch):
    monkeypatch.setenv(draft_pool.WORKERS_ENV, "1")
    assert set(draft_pool.build_all(list(range(8)), lambda n: os.getpid())) == {os.getpid()}
    monkeypatch.setenv(draft_pool.WORKERS_ENV, "2")
    few = list(range(draft_pool.MIN_DRAFTS - 1))
    assert set(draft_pool.build_all(few, lambda n: os.getpid())) == {os.getpid()}


@pytest.mark.parametrize("load, expected", [(0.1, 4), (1.0, 4), (2.0, 3), (3.6, 1), (9.0, 1)])
def test_by_default_the_cores_other_work_keeps_busy_are_left_to_it(monkeypatch, load, expected):
    monkeypatch.delenv(draft_pool.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert draft_pool.workers() == expected
    monkeypatch.setenv(draft_pool.WORKERS_ENV, "2")  # a person's setting holds whatever the load
    assert draft_pool.workers() == 2
