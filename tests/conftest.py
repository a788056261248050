"""Shared test helpers: the real corpus in ../shared (CI always has it) and fixture builders."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


def pytest_collectstart(collector):
    # Every conftest here is imported as the module `conftest` (no packages), and each import
    # replaces the last: point the name at the conftest of the folder being collected, so
    # `from conftest import jsonl` here and `from conftest import adversarial_cases` in
    # tests/adversarial/ both find theirs whatever the order of collection.
    if isinstance(collector, pytest.Module):
        here = str(collector.path.parent / "conftest.py")
        for plugin in collector.config.pluginmanager.get_plugins():
            if getattr(plugin, "__file__", None) == here:
                sys.modules["conftest"] = plugin
                return


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
