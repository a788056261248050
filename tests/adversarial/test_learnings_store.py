"""The learnings store with special files where its store, archive, lock or backups go.

Pass rule: the command answers (never a hang), a special file is refused by name, and no record is
lost: every record is still in the store or in the archive, byte for byte, and nothing is written
through a link.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from statekit import snapshot

from core.learnings.store import (
    StoreError,
    append_learning,
    archive_path,
    backup_name,
    lock_path,
    read_archive,
    read_store,
    write_generation,
)

pytestmark = pytest.mark.adversarial("learnings")

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def record(rid: str, confidence: float = 0.7, expires: datetime | None = None) -> dict:
    return {"id": rid, "type": "fragile-file", "subject": f"subject {rid}", "insight": "an insight that matters",
            "evidence": "seen in three sessions", "confidence": confidence, "source_session": "s-1",
            "created_at": "2026-02-01T00:00:00Z",
            "expires_at": (expires or NOW + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "schema_version": 1}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "metrics" / "learnings.jsonl"
    path.parent.mkdir()
    lines = [record("keep"), record("dead", confidence=0.0), record("old", expires=NOW - timedelta(days=1))]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    return path


def _ids(records: list[dict]) -> set[str]:
    return {r["id"] for r in records}


def _in_thread(fn):
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "the store write hung"
    return box


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.mkdir()


def _link_out(path: Path) -> None:
    outside = path.parent.parent / "outside-target"
    outside.write_bytes(b"outside bytes\n")
    os.symlink(outside, path)


def _dev_zero(path: Path) -> None:
    os.symlink("/dev/zero", path)


KINDS = {"fifo": _fifo, "folder": _folder, "link-outside": _link_out, "dev-zero": _dev_zero}
WHERE = {"archive": archive_path, "lock": lock_path}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("where", sorted(WHERE))
def test_a_special_archive_or_lock_loses_no_record(store: Path, where: str, kind: str) -> None:
    before = store.read_bytes()
    target = WHERE[where](store)
    KINDS[kind](target)
    outside = snapshot(store.parent.parent)
    box = _in_thread(lambda: write_generation(store, None, now=NOW))
    assert isinstance(box.get("error"), (StoreError, OSError)), box
    assert str(target) in str(box["error"])
    assert store.read_bytes() == before, "the store changed although its archive could not be written"
    lock = lock_path(store).relative_to(store.parent.parent).as_posix()
    assert {k: v for k, v in snapshot(store.parent.parent).items() if k != lock} == \
           {k: v for k, v in outside.items() if k != lock}, "written through a link, or a file appeared"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_special_store_is_refused_by_name_and_nothing_is_made_beside_it(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "learnings.jsonl"
    KINDS[kind](path)
    listing = sorted(os.listdir(tmp_path))
    for call in (lambda: read_store(path), lambda: write_generation(path, None, now=NOW),
                 lambda: append_learning(path, record("new"), now=NOW)):
        box = _in_thread(call)
        assert isinstance(box.get("error"), StoreError) and str(path) in str(box["error"]), box
    assert sorted(os.listdir(tmp_path)) == listing


def test_a_backup_name_planted_as_a_link_is_replaced_not_written_through(store: Path) -> None:
    outside = store.parent.parent / "outside-target"
    outside.write_bytes(b"outside bytes\n")
    os.symlink(outside, backup_name(store, NOW))
    write_generation(store, None, now=NOW)
    assert outside.read_bytes() == b"outside bytes\n"
    assert not backup_name(store, NOW).is_symlink()


def test_a_prune_keeps_every_record_somewhere(store: Path) -> None:
    before = _ids(read_store(store).records)
    write_generation(store, None, now=NOW)
    assert _ids(read_store(store).records) | _ids(read_archive(store)) == before
    assert _ids(read_store(store).records) == {"keep"}


def test_concurrent_appends_and_prunes_lose_no_record(store: Path) -> None:
    errors: list[BaseException] = []

    def appender(n: int) -> None:
        try:
            for i in range(15):
                append_learning(store, record(f"a{n}-{i}"), now=NOW)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    def pruner() -> None:
        try:
            for _ in range(5):
                write_generation(store, None, now=NOW)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=appender, args=(n,)) for n in range(3)] + [threading.Thread(target=pruner)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    everything = _ids(read_store(store).records) | _ids(read_archive(store))
    assert {f"a{n}-{i}" for n in range(3) for i in range(15)} | {"keep", "dead", "old"} <= everything
