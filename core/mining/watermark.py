"""The watermark store: how far each transcript file of a workspace has been mined.

One JSON file per slug under `.artifacts/mining/state/`, replaced atomically (tmp + rename) and
only when a pass completes, so a crashed or cancelled pass leaves it exactly as it was and the next
pass reads the same data again. Per file it keeps a fingerprint (size, mtime, parser version) and
the byte offset and line where the next read resumes, plus the episodes mined from it so far.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import orjson
from pydantic import BaseModel, Field

from core.mining.episodes import Episode

PARSER_VERSION = "1"
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
    slug: str
    parser: str = PARSER_VERSION
    mined_through: int = 0
    """Newest transcript mtime (unix seconds) mined: kitsoki's watermark."""
    files: dict[str, FileMark] = Field(default_factory=dict)

    def all_episodes(self) -> list[Episode]:
        return [ep for mark in self.files.values() for ep in mark.episodes]


def state_path(workspace: Path, slug: str) -> Path:
    return workspace / ".artifacts" / "mining" / "state" / f"{slug}.json"


def load_state(workspace: Path, slug: str) -> MiningState | None:
    """The stored state, or None when this slug was never mined (or the store is unreadable)."""
    path = state_path(workspace, slug)
    try:
        state = MiningState.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValueError:
        # A store we cannot read is treated as absent: the next pass is a seed pass again.
        return None
    return state if state.parser == PARSER_VERSION else None


def save_state(workspace: Path, state: MiningState) -> Path:
    path = state_path(workspace, state.slug)
    write_atomic(path, state.model_dump_json().encode())
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
