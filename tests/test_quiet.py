"""core/quiet.py: the server's long work runs without collector pauses, and memory stays bounded; elsewhere
nothing changes. (How much it helps is measured by tests/bench/server_busy.py, not here.)"""

from __future__ import annotations

import gc
import sys
import threading
import weakref
from pathlib import Path

import pytest

from core import quiet

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def server_process(monkeypatch):
    """This process as the server sets it up, put back as it was afterwards."""
    interval = sys.getswitchinterval()
    monkeypatch.setattr(quiet, "_enabled", False)
    monkeypatch.setattr(quiet, "_depth", 0)
    monkeypatch.setattr(quiet, "_frozen_at_collect", 0)
    quiet.enable()
    yield
    sys.setswitchinterval(interval)
    gc.unfreeze()
    gc.enable()


def test_outside_the_server_long_work_changes_nothing(monkeypatch):
    monkeypatch.setattr(quiet, "_enabled", False)
    frozen = gc.get_freeze_count()
    with quiet.long_work():
        assert gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_in_the_server_long_work_collects_nothing_and_freezes_what_survived(server_process):
    assert sys.getswitchinterval() == pytest.approx(quiet.SWITCH_INTERVAL_S)
    kept = []
    with quiet.long_work():
        assert not gc.isenabled()
        with quiet.long_work():  # a propose inside a pass: still paused when the inner one ends
            kept.append([{"n": i} for i in range(1000)])
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= 1000  # the survivors are never walked again


def test_work_on_two_threads_resumes_collection_when_the_last_one_ends(server_process):
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with quiet.long_work():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(5)
    with quiet.long_work():
        pass
    assert not gc.isenabled()  # the other thread's work still runs
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_cycles_left_by_the_work_are_collected_once_the_frozen_set_grows_enough(server_process, monkeypatch):
    monkeypatch.setattr(quiet, "RECLAIM_AFTER", 10)

    class Node:
        pass

    left = []
    with quiet.long_work():
        for _ in range(100):
            a, b = Node(), Node()
            a.other, b.other = b, a  # garbage only a collection frees
            left.append(weakref.ref(a))
        del a, b
    assert not any(ref() is not None for ref in left)  # collected when the work ended, not frozen for good


def test_flow_runs_collect_the_young_less_often_and_put_the_thresholds_back():
    before = gc.get_threshold()
    with quiet.fewer_collections():
        with quiet.fewer_collections():
            assert gc.get_threshold()[0] >= quiet.FEW_COLLECTIONS[0]
        assert gc.get_threshold()[0] >= quiet.FEW_COLLECTIONS[0]
    assert gc.get_threshold() == before


def test_a_short_command_collects_nothing_while_it_starts_and_again_once_a_flow_run_begins():
    """`kitsoki-miner accept` as its own process (server/cli.py): no collection while it imports and
    loads; the first flow run freezes what start-up made and turns the collector on again."""
    import subprocess

    code = (
        "import gc\n"
        "from core import quiet\n"
        "quiet.pause_startup()\n"
        "assert not gc.isenabled()\n"
        "kept = [[i] for i in range(1000)]\n"
        "frozen = gc.get_freeze_count()\n"
        "with quiet.fewer_collections():\n"
        "    assert gc.isenabled() and gc.get_freeze_count() > frozen\n"
        "with quiet.fewer_collections():\n"
        "    assert gc.isenabled()\n"
        "assert gc.isenabled()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_cli_pauses_the_collector_for_short_commands_only():
    from server import cli

    assert {"accept", "refine", "reject", "proposals"} <= cli._COLLECTOR_OFF_AT_START
    assert not cli._COLLECTOR_OFF_AT_START & (cli._COLLECTOR_OFF | {"flows", "serve", "mcp"})
