"""The watermark store: how far each transcript file of a workspace has been mined.

One JSON file per slug under `.artifacts/mining/state/`, replaced atomically (tmp + rename) and
only when a pass completes, so a crashed or cancelled pass leaves it exactly as it was and the next
pass reads the same data again. Per file it keeps a fingerprint (size, mtime, parser version) and
the byte offset and line where the next read resumes, plus the episodes mined from it so far.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

import orjson
from pydantic import BaseModel, Field, PrivateAttr

from core.mining.episodes import Episode

PARSER_VERSION = "2"
"""Bump when readers or episode extraction change what they produce: every file is re-read."""


def kitsoki_slug(path: Path | str) -> str:
    """kitsoki's mining.Slug (recap.sh's rule): `/` and `.` become `-`. Keys `mined_through`."""
    return re.sub(r"[/.]", "-", str(path))


class FileMark(BaseModel):
    format: str
    size: int
    mtime_ns: int
    parser: str = PARSER_VERSION
    offset: int = 0
    """Byte offset where the next read of this file resumes (a line boundary)."""
    line: int = 0
    """Lines read so far (the next read starts at line + 1)."""
    session: str
    project: str | None = None
    agent_session: bool = False
    episodes: list[Episode] = Field(default_factory=list)


class MiningState(BaseModel):
    _episodes_file: str = PrivateAttr(default="")
    slug: str
    parser: str = PARSER_VERSION
    mined_through: int = 0
    """Newest transcript mtime (unix seconds) mined: kitsoki's watermark."""
    files: dict[str, FileMark] = Field(default_factory=dict)

    def all_episodes(self) -> list[Episode]:
        return [ep for mark in self.files.values() for ep in mark.episodes]


class _Marks(BaseModel):
    """The store's small file: fingerprints only, so a pass with nothing new reads little."""

    slug: str
    parser: str = PARSER_VERSION
    mined_through: int = 0
    files: dict[str, FileMark] = Field(default_factory=dict)
    episodes_file: str = ""
    """The generation of the episodes file these fingerprints belong to."""


class _Episodes(BaseModel):
    files: dict[str, list[Episode]] = Field(default_factory=dict)


def state_path(workspace: Path, slug: str) -> Path:
    return workspace / ".artifacts" / "mining" / "state" / f"{slug}.json"


def load_state(workspace: Path, slug: str, *, with_episodes: bool = True) -> MiningState | None:
    """The stored state, or None when this slug was never mined (or the store is unreadable).

    Without episodes, only fingerprints are read (a warm pass); episodes load when needed.
    """
    try:
        marks = _Marks.model_validate_json(state_path(workspace, slug).read_bytes())
        if marks.parser != PARSER_VERSION:
            return None
        state = MiningState(slug=marks.slug, parser=marks.parser, mined_through=marks.mined_through,
                            files=marks.files)
        state._episodes_file = marks.episodes_file
        if with_episodes:
            load_episodes(workspace, state)
    except (FileNotFoundError, ValueError):
        # Absent or unreadable: the next pass is a seed pass again.
        return None
    return state


def load_episodes(workspace: Path, state: MiningState) -> None:
    folder = state_path(workspace, state.slug).parent
    stored = _Episodes.model_validate_json((folder / state._episodes_file).read_bytes())
    for path, mark in state.files.items():
        mark.episodes = stored.files.get(path, [])


def save_state(workspace: Path, state: MiningState) -> Path:
    """Episodes go to a new generation file first; the fingerprints file, replaced atomically,
    is the commit point that names it. A crash before that leaves the old pair intact."""
    path = state_path(workspace, state.slug)
    body = _Episodes(files={p: m.episodes for p, m in state.files.items()}).model_dump_json().encode()
    name = f"{state.slug}.episodes.{hashlib.sha256(body).hexdigest()[:16]}.json"
    write_atomic(path.parent / name, body)
    marks = _Marks(slug=state.slug, parser=state.parser, mined_through=state.mined_through, episodes_file=name,
                   files={p: m.model_copy(update={"episodes": []}) for p, m in state.files.items()})
    write_atomic(path, marks.model_dump_json().encode())
    for old in path.parent.glob(f"{state.slug}.episodes.*.json"):
        if old.name != name:
            old.unlink(missing_ok=True)
    state._episodes_file = name
    return path


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dumps(model: BaseModel) -> bytes:
    return orjson.dumps(model.model_dump(mode="json"), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
