"""Shared test helpers: the real corpus in ../shared (CI always has it) and fixture builders."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


def _point_conftest_at_own_folder(config, path: Path) -> None:
    """Each folder's conftest.py is imported as the module `conftest` and the last one loaded wins
    (tests/adversarial's comes first in a whole run): point `conftest` at the one of `path`'s folder,
    so a test's `from conftest import ...` (at import or inside the test) means that one."""
    best = None
    for plugin in config.pluginmanager.get_plugins():
        file = getattr(plugin, "__file__", None)
        if file and Path(file).name == "conftest.py" and path.is_relative_to(Path(file).parent):
            if best is None or len(Path(file).parts) > len(Path(best.__file__).parts):
                best = plugin
    if best is not None:
        sys.modules["conftest"] = best


def pytest_collectstart(collector):
    if isinstance(collector, pytest.Module):
        _point_conftest_at_own_folder(collector.config, collector.path)


def pytest_runtest_setup(item):
    _point_conftest_at_own_folder(item.config, item.path)


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
