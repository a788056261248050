"""Writing inside a workdir: files 0600, directories 0700, every path contained in the workdir.

A path is built from a workdir and relative parts; `..`, absolute parts and symlinked components
are refused, so nothing is ever written outside the workdir. Every folder below the workdir is
reached the way core.statefs reaches the miner's own state (one O_NOFOLLOW open per folder, from
the workdir down), so a link planted on the way is refused at the write itself, not only when a
path was first checked. Writes are atomic (temp file + rename).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath

import orjson

from core import statefs
from core.runs.errors import Refused
from core.safeio import UnsafeFile

FILE_MODE = 0o600
DIR_MODE = 0o700


def contained(root: Path, rel: str | Path) -> Path:
    """root/rel, refused when rel could leave root (absolute, `..`, a symlinked component)."""
    rel = PurePosixPath(str(rel))
    if rel.is_absolute() or any(part in ("..", "") for part in rel.parts) or "\x00" in str(rel):
        raise Refused(f"path {str(rel)!r} is not inside the workdir")
    path = Path(root)
    for part in rel.parts:
        if part == ".":
            continue
        path = path / part
        if path.is_symlink():
            raise Refused(f"{path} is a symbolic link; refusing to follow it out of the workdir")
    return path


def ensure_dir(root: Path, rel: str | Path = ".") -> Path:
    path = Path(root)
    if not path.exists():
        path.mkdir(parents=True, mode=DIR_MODE)
        os.chmod(path, DIR_MODE)
    target = contained(path, rel)
    if target == path:
        return path
    try:
        statefs.ensure_dir(target, root=path, dir_mode=DIR_MODE)
    except UnsafeFile as exc:
        raise Refused(str(exc)) from None
    return target


def write_bytes(root: Path, rel: str | Path, data: bytes, *, create_only: bool = False) -> Path:
    """Atomically write root/rel with mode 0600. `create_only` refuses to replace an existing file."""
    path = contained(root, rel)
    ensure_dir(root, PurePosixPath(str(rel)).parent)
    try:
        if not create_only:
            statefs.write_atomic(path, data, mode=FILE_MODE, root=root, dir_mode=DIR_MODE)
            return path
        dir_fd, name = statefs.dir_of(path, root=root)
    except UnsafeFile as exc:
        raise Refused(str(exc)) from None
    try:
        tmp = f".{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                raise Refused(f"{path} already exists; not overwritten") from None
        finally:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def write_json(root: Path, rel: str | Path, payload) -> Path:
    return write_bytes(root, rel, orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")


def sha256_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size
