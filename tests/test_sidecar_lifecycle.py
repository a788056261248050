"""A shutdown can reach a workspace's sidecar while it is still starting (the server lists it
first, then starts it off the event loop): stop waits for the start and ends every thread it made."""

from __future__ import annotations

import threading

from core.demo.walkthrough import lay_out
from core.sidecar import WorkspaceSidecar


def _threads_of(ws_threads: set[str]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in ws_threads and t.is_alive()]


def test_stop_during_start_waits_and_ends_every_thread(tmp_path, monkeypatch):
    _, ws, transcripts = lay_out(tmp_path / "demo")
    sidecar = WorkspaceSidecar(ws, watch=True, mining=True, transcript_dirs=[transcripts], workers=1)
    in_start, release = threading.Event(), threading.Event()
    real_refresh = WorkspaceSidecar.refresh

    def slow_refresh(self, *args, **kwargs):  # the start is caught half-way
        in_start.set()
        release.wait(10)
        return real_refresh(self, *args, **kwargs)

    monkeypatch.setattr(WorkspaceSidecar, "refresh", slow_refresh)
    errors: list[BaseException] = []

    def run(fn):
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    starter = threading.Thread(target=run, args=(sidecar.start,))
    starter.start()
    assert in_start.wait(10)
    stopper = threading.Thread(target=run, args=(sidecar.stop,))
    stopper.start()
    stopper.join(0.3)
    assert stopper.is_alive(), "stop returned while the start was still making threads"
    release.set()
    starter.join(30)
    stopper.join(30)
    assert not errors, errors
    names = {"kitsoki-watch"} | {t.name for t in threading.enumerate() if t.name.startswith("miner-")}
    assert not _threads_of(names)


def test_a_stopped_sidecar_does_not_start(tmp_path):
    _, ws, transcripts = lay_out(tmp_path / "demo")
    sidecar = WorkspaceSidecar(ws, watch=True, mining=True, transcript_dirs=[transcripts], workers=1)
    sidecar.stop()
    sidecar.start()
    assert sidecar.miner is None
    assert not [t for t in threading.enumerate() if t.name == "kitsoki-watch" and t.is_alive()]
