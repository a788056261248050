"""The watermark store: how far each transcript file of a workspace has been mined.

One JSON file per slug under `.artifacts/mining/state/`, replaced atomically (tmp + rename) and
only when a pass completes, so a crashed or cancelled pass leaves it exactly as it was and the next
pass reads the same data again. Per file it keeps a fingerprint (size, mtime, parser version) and
the byte offset and line where the next read resumes, plus the episodes mined from it so far.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import os
import re
import secrets
import stat
from pathlib import Path

import msgspec

from pydantic import BaseModel, Field, PrivateAttr

from core import statefs
from core.mining.episodes import Episode
from core.transcripts.display import display_path

PARSER_VERSION = "5"
"""Bump when readers or episode extraction change what they produce: every file is re-read."""


def kitsoki_slug(path: Path | str) -> str:
    """kitsoki's mining.Slug (recap.sh's rule): `/` and `.` become `-`. Keys `mined_through` and names
    the state files: of the display path (core/transcripts/display.py), so that a workspace in a folder
    named by a secret does not put it in a file name."""
    shown = display_path(path)
    if shown != str(path):  # a redacted name: its `[REDACTED:kind]` kept to characters any file system takes
        shown = re.sub(r"[^A-Za-z0-9_~/.-]", "-", shown)
    return re.sub(r"[/.]", "-", shown)


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
    entrypoint: str | None = None
    """What the file says of who started it (core/transcripts/launch.py), kept so that a read from
    where the last one stopped decides with the whole file's evidence."""
    origin: str | None = None
    kitsoki: bool = False
    person_signs: list[str] = Field(default_factory=list)
    """"interrupted", "refused", "answered": what a person did in it so far."""
    episodes: list[Episode] = Field(default_factory=list)


class MiningState(BaseModel):
    _episodes_file: str = PrivateAttr(default="")
    _episodes_bytes: int = PrivateAttr(default=0)
    _compacted_bytes: int = PrivateAttr(default=0)
    _episodes_loaded: bool = PrivateAttr(default=False)
    _inline: list[str] = PrivateAttr(default_factory=list)
    """Episode-log lines kept in the fingerprints file itself (see save_state)."""
    _recipes_sha256: str = PrivateAttr(default="")
    """The digest of the recipes.json this state was committed with ("": not recorded)."""
    slug: str
    parser: str = PARSER_VERSION
    mined_through: int = 0
    """Newest transcript mtime (unix seconds) mined: kitsoki's watermark."""
    files: dict[str, FileMark] = Field(default_factory=dict)
    others: dict[str, str | None] = Field(default_factory=dict)
    """Sessions seen and left out as other projects' (path -> the folder they recorded): not read
    again to tell, and read when the scope comes to hold them (a worktree added, other projects opted
    in) whatever the watermark says."""

    def all_episodes(self) -> list[Episode]:
        return [ep for mark in self.files.values() for ep in mark.episodes]


class _Marks(BaseModel):
    """The store's small file and its commit point: fingerprints, and how much of the episode
    log they cover. A pass with nothing new reads only this."""

    slug: str
    parser: str = PARSER_VERSION
    mined_through: int = 0
    files: dict[str, FileMark] = Field(default_factory=dict)
    others: dict[str, str | None] = Field(default_factory=dict)
    episodes_file: str = ""
    episodes_bytes: int = 0
    """Bytes of the episode log that belong to this state; anything after is a crashed pass's."""
    compacted_bytes: int = 0
    inline: list[str] = Field(default_factory=list)
    """Episode-log lines that come after the log's `episodes_bytes` (recent live passes' tails)."""
    recipes_sha256: str = ""
    """The digest of recipes.json as this pass wrote it: a recipes.json that does not match (a crash
    before it reached the disk) is made again from the episodes."""


class _LogLine(BaseModel):
    """One line of the episode log: file `f`'s episodes from index `start` on are `e`."""

    f: str
    start: int = 0
    e: list[Episode]


COMPACT_SLACK = 1024 * 1024
"""The episode log is rewritten whole when appends have doubled it (plus this much)."""
INLINE_BYTES = 256 * 1024
"""Live passes keep their new episode-log lines in the fingerprints file (one file to fsync per
pass) until they add up to this much; then they are appended to the log."""


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
        if any(display_path(key) != key for key in (*marks.files, *marks.others)):
            # Kept before transcripts were named by their display paths (core/transcripts/display.py): a
            # key that is a path holding a secret. A seed pass writes the store anew, without it.
            return None
        state = MiningState(slug=marks.slug, parser=marks.parser, mined_through=marks.mined_through,
                            files=marks.files, others=marks.others)
        state._episodes_file = marks.episodes_file
        state._episodes_bytes = marks.episodes_bytes
        state._compacted_bytes = marks.compacted_bytes
        state._inline = marks.inline
        state._recipes_sha256 = marks.recipes_sha256
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
        lines = data.splitlines()
    else:
        lines = []
    for raw in [*lines, *state._inline]:
        line = _LogLine.model_validate_json(raw)
        eps = per_file.setdefault(line.f, [])
        del eps[line.start:]
        eps.extend(line.e)
    for path, mark in state.files.items():
        mark.episodes = per_file.get(path, [])
    state._episodes_loaded = True


_ENCODE = msgspec.json.Encoder().encode


def _line(path: str, start: int, episodes: list[Episode]) -> bytes:
    """One episode-log line: what _LogLine(f=path, start=start, e=episodes) dumps (the same bytes),
    by msgspec (several times faster than pydantic on a seed pass's tens of MB)."""
    return b"".join(_line_parts(path, start, episodes))


def _line_parts(path: str, start: int, episodes: list[Episode]):
    """_line's bytes in pieces of one episode each: a 300 MB session's line is megabytes, and a seed
    pass writing it whole held it twice. (Compact JSON: the pieces joined are the line msgspec
    encodes whole.)"""
    yield _ENCODE({"f": path, "start": start, "e": []})[:-2]  # without the closing "]}"
    for i, episode in enumerate(episodes):
        yield _ENCODE(episode) if i == 0 else b"," + _ENCODE(episode)
    yield b"]}\n"


def save_state(workspace: Path, state: MiningState, changed: dict[str, int] | None = None,
               recipes_sha256: str = "") -> Path:
    """Commit the state. `changed` maps each file read in this pass to the index from which its
    episodes changed; those tails are added to the episode log (None: write the log anew).

    The fingerprints file, replaced atomically, is the commit point: it names the log and how many
    of its bytes count. A crash before it leaves the previous state whole; bytes a crashed pass
    appended are cut off by the next save. A live pass's tails (a few KB) go into the fingerprints
    file itself until they reach INLINE_BYTES, so such a pass fsyncs one file; then they are appended
    to the log (fsynced before the fingerprints that count them).
    """
    folder = statefs.ensure_dir(state_path(workspace, state.slug).parent)
    current = folder / state._episodes_file if _episodes_name(state.slug, state._episodes_file) and \
        state._episodes_file else None
    appendable = (
        changed is not None and current is not None and statefs.check_path(current).exists()
        and state._episodes_bytes <= 2 * state._compacted_bytes + COMPACT_SLACK
    )
    if appendable:
        inline = state._inline + [_line(p, k, state.files[p].episodes[k:]).decode()
                                  for p, k in sorted(changed.items())]
        size = state._episodes_bytes
        if sum(len(x) for x in inline) > INLINE_BYTES:
            body = "".join(inline).encode()
            with os.fdopen(statefs.open_file(current, os.O_RDWR, what="the episode log"), "r+b") as fh:
                fh.truncate(state._episodes_bytes)
                fh.seek(state._episodes_bytes)
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            size, inline = size + len(body), []
        name, compacted = current.name, state._compacted_bytes
    else:
        name, size = _write_log(folder, state.slug,
                                (part for p, m in sorted(state.files.items()) for part in _line_parts(p, 0, m.episodes)))
        compacted, inline = size, []
    marks = _Marks(slug=state.slug, parser=state.parser, mined_through=state.mined_through, episodes_file=name,
                   episodes_bytes=size, compacted_bytes=compacted, files=dict(sorted(state.files.items())),
                   others=dict(sorted(state.others.items())), inline=inline,
                   recipes_sha256=recipes_sha256)
    path = state_path(workspace, state.slug)
    # The episodes live in the log; the fingerprints file leaves them out (no copies made). Files are
    # listed by path, not in the order a pass's workers finished them: the same history, the same bytes.
    write_atomic(path, marks.model_dump_json(exclude={"files": {"__all__": {"episodes"}}}).encode())
    if name != state._episodes_file:
        for old in folder.glob(f"{state.slug}.episodes.*"):
            if old.name != name:
                old.unlink(missing_ok=True)
    state._episodes_file, state._episodes_bytes, state._compacted_bytes = name, size, compacted
    state._inline, state._recipes_sha256 = inline, recipes_sha256
    state._episodes_loaded = True
    return path


_WRITE_CHUNK = 1 << 20


def _write_log(folder: Path, slug: str, lines) -> tuple[str, int]:
    """A new episode log, named after its content's hash, written piece by piece (a seed pass's log
    is tens of MB: never held whole in memory) to a temp file, fsynced, renamed into place."""
    digest = hashlib.sha256()
    dir_fd, _ = statefs.dir_of(folder / "x", create=True)
    tmp = f".{slug}.episodes.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    size = 0
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb", closefd=False) as fh:
                # pieces gathered into chunks of about _WRITE_CHUNK: one hash update and one write
                # each, instead of one per episode
                pending: list[bytes] = []
                held = 0
                for line in itertools.chain(lines, (None,)):
                    if line is not None:
                        pending.append(line)
                        held += len(line)
                        if held < _WRITE_CHUNK:
                            continue
                    chunk = b"".join(pending)
                    digest.update(chunk)
                    fh.write(chunk)
                    size += len(chunk)
                    pending, held = [], 0
                fh.flush()
                os.fsync(fd)
        finally:
            os.close(fd)
        name = f"{slug}.episodes.{digest.hexdigest()[:16]}.jsonl"
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        os.fsync(dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    finally:
        os.close(dir_fd)
    return name, size


def write_unsynced(path: Path, data: bytes, *, what: str = "file") -> None:
    """statefs.write_atomic without its fsyncs: a temp file beside `path` renamed over it, so a reader
    sees the old file or the new one, whole; after the machine itself stops, possibly neither. For
    a file a durable record checks and that can be made again (recipes.json: the state records its
    digest)."""
    dir_fd, name = statefs.dir_of(path, create=True)
    try:
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise statefs.UnsafeFile(path, f"{what} is a folder, not a file (remove it)", errno.EISDIR)
        tmp = f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Whole or not at all, never through a link planted in `.artifacts/` (core.statefs)."""
    statefs.write_atomic(path, data)
