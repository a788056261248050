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
from pathlib import Path

from pydantic import BaseModel, Field, PrivateAttr

from core import statefs
from core.mining.episodes import Episode

PARSER_VERSION = "3"
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
    _episodes_bytes: int = PrivateAttr(default=0)
    _compacted_bytes: int = PrivateAttr(default=0)
    _episodes_loaded: bool = PrivateAttr(default=False)
    slug: str
    parser: str = PARSER_VERSION
    mined_through: int = 0
    """Newest transcript mtime (unix seconds) mined: kitsoki's watermark."""
    files: dict[str, FileMark] = Field(default_factory=dict)

    def all_episodes(self) -> list[Episode]:
        return [ep for mark in self.files.values() for ep in mark.episodes]


class _Marks(BaseModel):
    """The store's small file and its commit point: fingerprints, and how much of the episode
    log they cover. A pass with nothing new reads only this."""

    slug: str
    parser: str = PARSER_VERSION
    mined_through: int = 0
    files: dict[str, FileMark] = Field(default_factory=dict)
    episodes_file: str = ""
    episodes_bytes: int = 0
    """Bytes of the episode log that belong to this state; anything after is a crashed pass's."""
    compacted_bytes: int = 0


class _LogLine(BaseModel):
    """One line of the episode log: file `f`'s episodes from index `start` on are `e`."""

    f: str
    start: int = 0
    e: list[Episode]


COMPACT_SLACK = 1024 * 1024
"""The episode log is rewritten whole when appends have doubled it (plus this much)."""


def state_path(workspace: Path, slug: str) -> Path:
    return workspace / ".artifacts" / "mining" / "state" / f"{slug}.json"


MAX_MARKS_BYTES = 256 << 20
MAX_EPISODE_LOG_BYTES = 4 << 30
_EPISODES_FILE = re.compile(r"[^/\\\0]+\.episodes\.[0-9a-f]{16}\.jsonl")


def _episodes_name(slug: str, name: str) -> bool:
    """A stored episode-log name is used only if it is one this store makes: a plain file name."""
    return name == "" or (_EPISODES_FILE.fullmatch(name) is not None and name.startswith(f"{slug}.episodes."))


def load_state(workspace: Path, slug: str, *, with_episodes: bool = True) -> MiningState | None:
    """The stored state, or None when this slug was never mined (or the store does not parse: the
    next pass is a seed pass). A state file or folder that is a link, a FIFO, a folder where a file
    should be (or a file where the folder should be) raises UnsafeFile naming it.

    Without episodes, only fingerprints are read (a warm pass); episodes load when needed.
    """
    try:
        raw = statefs.read_bytes(state_path(workspace, slug), MAX_MARKS_BYTES, what="the mining state")
    except FileNotFoundError:
        return None
    try:
        marks = _Marks.model_validate_json(raw)
        if marks.parser != PARSER_VERSION or marks.slug != slug or not _episodes_name(slug, marks.episodes_file):
            return None
        state = MiningState(slug=marks.slug, parser=marks.parser, mined_through=marks.mined_through,
                            files=marks.files)
        state._episodes_file = marks.episodes_file
        state._episodes_bytes = marks.episodes_bytes
        state._compacted_bytes = marks.compacted_bytes
        if with_episodes:
            load_episodes(workspace, state)
    except (FileNotFoundError, ValueError):
        # Absent or unreadable: the next pass is a seed pass again.
        return None
    return state


def load_episodes(workspace: Path, state: MiningState) -> None:
    if state._episodes_loaded:
        return
    per_file: dict[str, list[Episode]] = {}
    if state._episodes_file:
        if not _episodes_name(state.slug, state._episodes_file):
            raise ValueError(f"{state._episodes_file!r} is not an episode log of {state.slug}")
        log_path = state_path(workspace, state.slug).parent / state._episodes_file
        with os.fdopen(statefs.open_file(log_path, os.O_RDONLY, what="the episode log"), "rb") as fh:
            data = fh.read(state._episodes_bytes)
        for raw in data.splitlines():
            line = _LogLine.model_validate_json(raw)
            eps = per_file.setdefault(line.f, [])
            del eps[line.start:]
            eps.extend(line.e)
    for path, mark in state.files.items():
        mark.episodes = per_file.get(path, [])
    state._episodes_loaded = True


def _line(path: str, start: int, episodes: list[Episode]) -> bytes:
    return _LogLine(f=path, start=start, e=episodes).model_dump_json().encode() + b"\n"


def save_state(workspace: Path, state: MiningState, changed: dict[str, int] | None = None) -> Path:
    """Commit the state. `changed` maps each file read in this pass to the index from which its
    episodes changed; those tails are appended to the episode log (None: write the log anew).

    The fingerprints file, replaced atomically, is the commit point: it names the log and how many
    of its bytes count. A crash before it leaves the previous state whole; bytes a crashed pass
    appended are cut off by the next save.
    """
    folder = statefs.ensure_dir(state_path(workspace, state.slug).parent)
    current = folder / state._episodes_file if _episodes_name(state.slug, state._episodes_file) and \
        state._episodes_file else None
    appendable = (
        changed is not None and current is not None and statefs.check_path(current).exists()
        and state._episodes_bytes <= 2 * state._compacted_bytes + COMPACT_SLACK
    )
    if appendable:
        body = b"".join(_line(p, k, state.files[p].episodes[k:]) for p, k in sorted(changed.items()))
        with os.fdopen(statefs.open_file(current, os.O_RDWR, what="the episode log"), "r+b") as fh:
            fh.truncate(state._episodes_bytes)
            fh.seek(state._episodes_bytes)
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        name, size, compacted = current.name, state._episodes_bytes + len(body), state._compacted_bytes
    else:
        body = b"".join(_line(p, 0, m.episodes) for p, m in sorted(state.files.items()))
        name = f"{state.slug}.episodes.{hashlib.sha256(body).hexdigest()[:16]}.jsonl"
        write_atomic(folder / name, body)
        size = compacted = len(body)
    marks = _Marks(slug=state.slug, parser=state.parser, mined_through=state.mined_through, episodes_file=name,
                   episodes_bytes=size, compacted_bytes=compacted, files=state.files)
    path = state_path(workspace, state.slug)
    # The episodes live in the log; the fingerprints file leaves them out (no copies made).
    write_atomic(path, marks.model_dump_json(exclude={"files": {"__all__": {"episodes"}}}).encode())
    if name != state._episodes_file:
        for old in folder.glob(f"{state.slug}.episodes.*"):
            if old.name != name:
                old.unlink(missing_ok=True)
    state._episodes_file, state._episodes_bytes, state._compacted_bytes = name, size, compacted
    state._episodes_loaded = True
    return path


def write_atomic(path: Path, data: bytes) -> None:
    """Whole or not at all, never through a link planted in `.artifacts/` (core.statefs)."""
    statefs.write_atomic(path, data)
