"""Checked writes: every change to a workspace file goes through directory descriptors and is
conditional on what is there at the instant it happens.

Why: a person's editor may save the file an accept is writing, at any moment. So a write never
overwrites blindly: the new bytes go to a temp file beside the target; whatever is at the target is
moved aside in one step and checked there to be exactly what was expected (inode and bytes); the
temp file takes the name only while nothing is there (RENAME_NOREPLACE, or a hard link); and the
file moved aside is checked again, so a save written into it in place is put back. Anything
unexpected is kept at the target and named (`ChangedUnderUs`). Every descriptor is opened from the
workspace root with O_NOFOLLOW, so a planted symlink makes a file be left, never a write outside.
The journal (core.apply.journal) records what these writes replace; its docstring names the windows
that stay open and why.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from core import statefs

TMP_SUFFIX = ".kitsoki-miner.tmp"
SWAP_SUFFIX = ".kitsoki-miner.swap"
_NAME_MAX = 255
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tmp_name(name: str, suffix: str = TMP_SUFFIX) -> str:
    """The temp file a write of `name` goes through, beside it. Deterministic, so recovery can
    find a stray one from the journal alone; hashed when the plain form would be too long."""
    plain = f".{name}{suffix}"
    if len(os.fsencode(plain)) <= _NAME_MAX:
        return plain
    return f".{sha256_hex(os.fsencode(name))[:32]}{suffix}"


def swap_name(name: str) -> str:
    """Where a complete new file waits for its swap, and where the file it replaced (or one being
    removed) lands: unlike tmp_name, what is found here after a crash may be a person's version."""
    return tmp_name(name, SWAP_SUFFIX)



def open_root(workspace: Path) -> int:
    return os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def open_dir(root_fd: int, parts: tuple[str, ...], *, create: bool = False) -> int:
    """A descriptor of the directory `parts` below root, never following a symlink (ELOOP).
    With `create`, missing directories are made (mode 0777 less the umask)."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                os.fsync(fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(dir_fd: int, name: str) -> tuple[bytes, int] | None:
    """(bytes, permission bits) of a regular file, None when absent; a symlink or special file
    raises (O_NOFOLLOW; O_NONBLOCK so a FIFO cannot hang us)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"{name} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Seen:
    """What a file held when it was last looked at: its bytes' sha256 (None: it was absent) and,
    when known, its inode (device, number). Recovery after a crash knows only the bytes."""

    sha256: str | None
    inode: tuple[int, int] | None = None


class ChangedUnderUs(Exception):
    """At the moment of a write the file was not what was expected: someone else's version is kept
    (and the write undone). `why` says what was found."""

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.why = why
        super().__init__(f"{name}: {why}")


def peek(dir_fd: int, name: str) -> tuple[os.stat_result | None, bytes | None]:
    """(lstat-like info, bytes) of `name`: (None, None) when absent, bytes None when it is not a
    regular file. Never follows a link, never blocks on a FIFO."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            try:
                return os.stat(name, dir_fd=dir_fd, follow_symlinks=False), None
            except FileNotFoundError:
                return None, None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return info, None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return info, b"".join(chunks)
    finally:
        os.close(fd)


def _matches(expect: Seen, info: os.stat_result | None, data: bytes | None) -> bool:
    if expect.sha256 is None:
        return info is None
    if info is None or data is None or sha256_hex(data) != expect.sha256:
        return False
    return expect.inode is None or (info.st_dev, info.st_ino) == expect.inode


def _why(expect: Seen, info: os.stat_result | None, data: bytes | None) -> str:
    if info is None:
        return "it was deleted while the accept ran"
    if expect.sha256 is None:
        return "someone else created it while the accept ran"
    if data is None:
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        return f"it became {what} while the accept ran"
    if sha256_hex(data) != expect.sha256:
        return "it was edited while the accept ran (its bytes are not the ones the accept checked)"
    return "it was replaced by another file while the accept ran (an editor's save)"


def _ino(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _unlink_if(dir_fd: int, name: str, inode: tuple[int, int]) -> None:
    """Remove `name` only while it is the file `inode` (ours): never someone else's."""
    with suppress(FileNotFoundError):
        if _ino(os.stat(name, dir_fd=dir_fd, follow_symlinks=False)) == inode:
            os.unlink(name, dir_fd=dir_fd)


def keep_aside(dir_fd: int, src: str, name: str) -> str:
    """Move someone's file at `src` to a visible name of its own beside `name` (never replacing
    anything); the new name."""
    n = 0
    while True:
        candidate = f"{name}.kitsoki-miner-kept" + (f"-{n}" if n else "")
        try:
            os.link(src, candidate, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            n += 1
            continue
        os.unlink(src, dir_fd=dir_fd)
        os.fsync(dir_fd)
        return candidate


def put_back(dir_fd: int, held: str, name: str) -> str:
    """Someone's file was moved to `held` by us: back to `name` unless a newer one is there now
    (then it is kept aside, and that is said)."""
    try:
        if statefs.rename_noreplace(dir_fd, held, name):
            return ""
        os.link(held, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        os.unlink(held, dir_fd=dir_fd)
        return ""
    except FileExistsError:
        return f"; a newer version was saved meanwhile, so that one was moved to {keep_aside(dir_fd, held, name)}"


def _place(dir_fd: int, tmp: str, name: str) -> None:
    """`tmp` becomes `name` only if nothing is at `name` (FileExistsError otherwise): one atomic step
    (RENAME_NOREPLACE, or a hard link); check-then-rename only on a file system that has neither."""
    if statefs.rename_noreplace(dir_fd, tmp, name):
        return
    try:
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: check, then rename
        if peek(dir_fd, name)[0] is not None:
            raise FileExistsError(errno.EEXIST, name) from None
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    os.unlink(tmp, dir_fd=dir_fd)


def take_back(dir_fd: int, name: str, is_ours: Callable[[os.stat_result, bytes | None], bool]) -> str:
    """Move our own file off `name` (to the temp name, which only ever holds our bytes) so a person's
    version can go back there; a save that landed on `name` meanwhile is kept aside and said."""
    tmp = tmp_name(name)
    try:
        os.rename(name, tmp, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except FileNotFoundError:
        return ""
    info, data = peek(dir_fd, tmp)
    if info is not None and is_ours(info, data):
        os.unlink(tmp, dir_fd=dir_fd)
        return ""
    return f"; a newer version saved meanwhile was moved to {keep_aside(dir_fd, tmp, name)}"


def _swap_checked(dir_fd: int, tmp: str, name: str, expect: Seen, ours: tuple[int, int]) -> None:
    """`tmp` (complete) takes `name`'s place only if `name` is `expect` at that instant.

    Whatever is at `name` is moved to the swap name in one step, and checked there: a save that
    landed before the move is what is checked (and goes back when it is not the expected file); a
    save that lands after it creates a new file at `name`, and `tmp` is put at `name` only while
    nothing is there (RENAME_NOREPLACE or a hard link), so that save is kept. Then the file moved
    aside is checked once more (a write through a descriptor an editor opened before the move lands
    in it) and removed only while it is exactly the expected file. An editor's file watcher sees the
    file go and come back at once, which it reads as a change and reloads (keeping its undo
    history); an atomic exchange would read as created-then-deleted and be dropped. Recovery puts
    back what it finds under the swap name when `name` is missing (a crash between the two steps)."""
    swap = swap_name(name)
    if peek(dir_fd, swap)[0] is not None:  # left by an earlier crash that recovery did not see
        keep_aside(dir_fd, swap, name)
    try:
        os.rename(name, swap, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except FileNotFoundError:
        raise ChangedUnderUs(name, "it was deleted while the accept ran") from None
    info, data = peek(dir_fd, swap)
    if not _matches(expect, info, data):
        why = _why(expect, info, data) + put_back(dir_fd, swap, name)
        os.fsync(dir_fd)
        raise ChangedUnderUs(name, why)
    try:
        _place(dir_fd, tmp, name)
    except FileExistsError:  # saved while it was aside: the person's new file stays at `name`
        info, data = peek(dir_fd, swap)
        if _matches(expect, info, data):
            os.unlink(swap, dir_fd=dir_fd)  # the file we checked, unchanged: nobody's edit
            note = ""
        else:
            note = f"; an earlier save was moved to {keep_aside(dir_fd, swap, name)}"
        os.fsync(dir_fd)
        raise ChangedUnderUs(name, "it was saved while the accept wrote it" + note) from None
    except BaseException:  # a fault (a full disk): the checked file goes back to its name now
        with suppress(OSError):
            put_back(dir_fd, swap, name)
        raise
    info, data = peek(dir_fd, swap)
    if _matches(expect, info, data):
        os.unlink(swap, dir_fd=dir_fd)  # exactly the expected file: its bytes are in the journal
        return
    why = _why(expect, info, data) + " (a save written into it as the accept replaced it)"
    why += take_back(dir_fd, name, lambda info, _data: _ino(info) == ours) + put_back(dir_fd, swap, name)
    os.fsync(dir_fd)
    raise ChangedUnderUs(name, why)


def _create_checked(dir_fd: int, tmp: str, name: str) -> None:
    try:
        _place(dir_fd, tmp, name)
    except FileExistsError:
        raise ChangedUnderUs(name, "someone else created it while the accept ran") from None


def write_checked(dir_fd: int, name: str, data: bytes, mode: int | None, expect: Seen,
                  before_replace: Callable[[], None] | None = None) -> Seen:
    """Put `data` at `name` only if what is there at that instant is `expect` (module docstring):
    the temp file tmp_name(name) (a leftover removed first) is written, fsynced and chmodded to
    `mode` (None: a new file, 0644 less the umask), then swapped in and what it replaced checked.
    Raises ChangedUnderUs (the person's version left at `name`) otherwise. What is there now."""
    tmp = tmp_name(name)
    with suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644 if mode is None else 0o600, dir_fd=dir_fd)
    try:
        try:
            statefs._write_all(fd, data)
            if mode is not None:
                os.fchmod(fd, mode)
            os.fsync(fd)
            ours = _ino(os.fstat(fd))
        finally:
            os.close(fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    try:
        if before_replace is not None:
            before_replace()
        if expect.sha256 is None:
            _create_checked(dir_fd, tmp, name)
        else:
            _swap_checked(dir_fd, tmp, name, expect, ours)
    except BaseException:
        with suppress(OSError):
            _unlink_if(dir_fd, tmp, ours)
        raise
    os.fsync(dir_fd)
    return Seen(sha256_hex(data), ours)


def remove_checked(dir_fd: int, name: str, expect: Seen) -> None:
    """Delete `name` only if it is `expect` at that instant: it is moved aside first (one atomic
    step), checked, and put back (ChangedUnderUs) when it is someone else's."""
    held = swap_name(name)
    if peek(dir_fd, held)[0] is not None:  # left by an earlier crash that recovery did not see
        keep_aside(dir_fd, held, name)
    try:
        os.rename(name, held, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except FileNotFoundError:
        raise ChangedUnderUs(name, "it was deleted while the accept ran") from None
    info, data = peek(dir_fd, held)
    if _matches(expect, info, data):
        os.unlink(held, dir_fd=dir_fd)
        os.fsync(dir_fd)
        return
    why = _why(expect, info, data) + put_back(dir_fd, held, name)
    os.fsync(dir_fd)
    raise ChangedUnderUs(name, why)


def seen_file(dir_fd: int, name: str) -> Seen:
    """What `name` holds now (sha256 and inode), for a later write_checked."""
    info, data = peek(dir_fd, name)
    if info is None:
        return Seen(None)
    if data is None:
        raise OSError(errno.EINVAL, f"{name} is not a regular file")
    return Seen(sha256_hex(data), _ino(info))
