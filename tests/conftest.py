"""Shared test helpers: the real corpus in ../shared (CI always has it) and fixture builders."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"

if not os.environ.get("KITSOKI_MINER_KEY_DIR"):  # core.authn's signing key: never the user's own in tests
    os.environ["KITSOKI_MINER_KEY_DIR"] = tempfile.mkdtemp(prefix="kitsoki-miner-test-key-")
    atexit.register(shutil.rmtree, os.environ["KITSOKI_MINER_KEY_DIR"], True)


def pytest_collection_modifyitems(config, items):
    if CORPUS.is_dir():
        return
    skip = pytest.mark.skip(reason=f"{CORPUS} is not present")
    for item in items:
        if "corpus" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def corpus() -> Path:
    return CORPUS


def jsonl(path: Path, records: list, *, trailing_newline: bool = True) -> Path:
    """Write records (dicts, or raw bytes/str lines as given) as a JSONL file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for rec in records:
        if isinstance(rec, bytes):
            lines.append(rec)
        elif isinstance(rec, str):
            lines.append(rec.encode())
        else:
            lines.append(orjson.dumps(rec))
    data = b"\n".join(lines)
    path.write_bytes(data + (b"\n" if trailing_newline else b""))
    return path


CLI = [sys.executable, "-m", "server.cli"]
