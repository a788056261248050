"""kitsoki-miner's own files under a workspace's `.artifacts/`: reached from the workspace down,
never through a symbolic link, only ever regular files.

`.artifacts/` lives in the workspace, so a clone, a teammate's commit or an agent can plant
anything there: `.artifacts/mining -> /home/me`, a `trace.jsonl` linked to a file outside, a FIFO
named `proposal.json`, a folder named `workspace.lock`. Every open here walks from the workspace
folder with O_DIRECTORY|O_NOFOLLOW per folder (a link anywhere on the way fails with ELOOP, never
followed) and opens the file itself with O_NOFOLLOW|O_NONBLOCK, then checks the opened descriptor
is a regular file. Problems raise core.safeio.UnsafeFile (an OSError) whose message names the path
and what is wrong with it, so a person knows which file to remove.

Which folder is "the workspace": the parent of the last `.artifacts` component of the path (the
layout every state path has, `<workspace>/.artifacts/...`). A path with no `.artifacts` component
(a learnings `--store` somewhere else) is checked from its own folder: only its last component is
held to the no-link, regular-file rule.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from core.safeio import UnsafeFile, kind_of, os_problem, read_regular

STATE_DIR = ".artifacts"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

__all__ = ["STATE_DIR", "UnsafeFile", "split", "open_dir", "open_file", "read_bytes", "write_atomic", "replace_in",
           "ensure_dir", "check_path", "remove_tree", "dir_of"]


def split(path: Path | str, root: Path | str | None = None) -> tuple[Path, tuple[str, ...]]:
    """(the folder the walk starts from, the components below it down to the file). A `root` the
    path lies under (a folder of the tool's own chosen elsewhere, such as a runs workdir) is where
    the walk starts instead."""
    path = Path(os.path.abspath(path))
    if root is not None:
        base = Path(os.path.abspath(root))
        try:
            below = path.relative_to(base).parts
        except ValueError:
            raise UnsafeFile(path, f"is not inside {base}", errno.EINVAL) from None
        if below:
            return base, below
    parts = path.parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == STATE_DIR:
            return Path(*parts[:i]), tuple(parts[i:])
    return path.parent, (path.name,)


def _shown(root: Path, parts: tuple[str, ...], upto: int) -> str:
    return str(root.joinpath(*parts[:upto + 1]))


def _link_problem(where: str) -> UnsafeFile:
    return UnsafeFile(where, "is a symbolic link; kitsoki-miner never follows a link in its own state "
                             "(remove the link; a real folder or file is made in its place)", errno.ELOOP)


def _walk(root: Path, parts: tuple[str, ...], create: bool, dir_mode: int = 0o777) -> int:
    """A descriptor of root/parts[0]/.../parts[-1] (a folder), no link followed below root; folders
    made on the way get `dir_mode` (less the umask)."""
    if create and not parts[:1] == (STATE_DIR,):
        os.makedirs(root, exist_ok=True)  # not a workspace's state: an ordinary folder, made as asked
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnsafeFile(root, f"cannot be opened as a folder: {os_problem(exc)}", exc.errno or errno.EIO) \
            from None
    try:
        for i, part in enumerate(parts):
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):
                    os.mkdir(part, dir_mode, dir_fd=fd)
                with suppress(OSError):
                    os.fsync(fd)
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _dir_problem(root, parts, i, exc) from None
            except OSError as exc:
                raise _dir_problem(root, parts, i, exc) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _dir_problem(root: Path, parts: tuple[str, ...], i: int, exc: OSError) -> UnsafeFile:
    where = _shown(root, parts, i)
    if exc.errno == errno.ENOTDIR:  # O_DIRECTORY|O_NOFOLLOW on a link to a folder says ENOTDIR
        with suppress(OSError):
            if stat.S_ISLNK(os.lstat(where).st_mode):
                return _link_problem(where)
    if exc.errno == errno.ELOOP:
        return _link_problem(where)
    if exc.errno == errno.ENOTDIR:
        return UnsafeFile(where, "is not a folder (kitsoki-miner keeps its state in a folder here)", errno.ENOTDIR)
    return UnsafeFile(where, f"cannot be opened as a folder: {os_problem(exc)}", exc.errno or errno.EIO)


def open_dir(path: Path | str, *, create: bool = False, root: Path | str | None = None,
             dir_mode: int = 0o777) -> int:
    """A descriptor of the folder `path` (created, with its parents below the workspace, if asked)."""
    start, parts = split(Path(path) / "_", root)
    return _walk(start, parts[:-1], create, dir_mode)


def dir_of(path: Path | str, *, create: bool = False, root: Path | str | None = None,
           dir_mode: int = 0o777) -> tuple[int, str]:
    """(descriptor of the file's folder, the file's name): for descriptor-relative calls."""
    start, parts = split(path, root)
    return _walk(start, parts[:-1], create, dir_mode), parts[-1]


def ensure_dir(path: Path | str, *, root: Path | str | None = None, dir_mode: int = 0o777) -> Path:
    """mkdir -p below the workspace (or `root`), refusing a link or a non-folder on the way."""
    os.close(open_dir(path, create=True, root=root, dir_mode=dir_mode))
    return Path(path)


def open_file(path: Path | str, flags: int, mode: int = 0o644, *, what: str = "file",
              create_dirs: bool = False) -> int:
    """os.open of a regular file reached without a link; `flags` as for os.open (O_CREAT, O_APPEND...)."""
    dir_fd, name = dir_of(path, create=create_dirs)
    try:
        try:
            fd = os.open(name, flags | _FILE_FLAGS, mode, dir_fd=dir_fd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeFile(path, f"{what} is a symbolic link; kitsoki-miner never follows a link in its "
                                       "own state (remove it)", errno.ELOOP) from None
            if exc.errno == errno.EISDIR:
                raise UnsafeFile(path, f"{what} is a folder, not a file (remove it)", errno.EISDIR) from None
            if exc.errno == errno.ENXIO:  # O_WRONLY|O_NONBLOCK on a FIFO nobody reads
                raise UnsafeFile(path, f"{what} is a named pipe (FIFO); only a regular file is used", exc.errno) \
                    from None
            raise UnsafeFile(path, f"{what} cannot be opened: {os_problem(exc)}", exc.errno or errno.EIO) \
                from None
    finally:
        os.close(dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(path, f"{what} is {kind_of(info.st_mode, 'a folder')}; only a regular file is used (remove it)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: Path | str, max_bytes: int, *, what: str = "file") -> bytes:
    """The bytes of a state file (FileNotFoundError when it, or a folder on the way, is absent)."""
    dir_fd, name = dir_of(path)
    try:
        try:
            return read_regular(name, max_bytes, what=what, follow_symlinks=False, dir_fd=dir_fd)
        except UnsafeFile as exc:  # name the whole path, not the bare file name
            raise UnsafeFile(path, exc.problem.replace("refusing to follow it",
                                                       "kitsoki-miner never follows a link in its own state"),
                             exc.errno or errno.EINVAL) from None
    finally:
        os.close(dir_fd)


def check_path(path: Path | str, *, what: str = "file", must_exist: bool = False) -> Path:
    """`path` when no link and no special file is on its way (absent parts are fine unless
    `must_exist`): for the few APIs that take a path (globbing a folder, a child process's cwd)."""
    try:
        dir_fd, name = dir_of(path)
    except FileNotFoundError:
        if must_exist:
            raise
        return Path(path)
    try:
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            if must_exist:
                raise
            return Path(path)
        if stat.S_ISLNK(info.st_mode):
            raise UnsafeFile(path, f"{what} is a symbolic link; kitsoki-miner never follows a link in its own "
                                   "state (remove it)", errno.ELOOP)
        return Path(path)
    finally:
        os.close(dir_fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_in(dir_fd: int, name: str, data: bytes, *, tmp: str, create_mode: int = 0o644,
               exact_mode: int | None = None, before_replace=None, sync_dir: bool = True) -> None:
    """Replace `name` in the folder `dir_fd` with `data` whole or not at all: the temp file `tmp`
    beside it (created O_EXCL|O_NOFOLLOW with `create_mode` less the umask, or chmodded to
    `exact_mode`), written and fsynced, renamed over `name`, the folder fsynced. `before_replace()`
    runs between the temp file's fsync and the rename (a test seam). `sync_dir=False` leaves the
    rename to the folder's next fsync: after a crash `name` is then the old file or the new one, each
    whole (for a caller to whom either is as good, and whose next step fsyncs the folder anyway)."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, create_mode, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, data)
            if exact_mode is not None:
                os.fchmod(fd, exact_mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    if sync_dir:
        os.fsync(dir_fd)


def write_atomic(path: Path | str, data: bytes, *, mode: int = 0o644, what: str = "file",
                 before_replace=None, root: Path | str | None = None, dir_mode: int = 0o777,
                 sync_dir: bool = True) -> None:
    """Replace `path` with `data` whole or not at all (replace_in, a temp file of a random name). A
    link or special file at `path` is replaced, never written through; `root` and `dir_mode` as for
    dir_of; `sync_dir` as for replace_in."""
    dir_fd, name = dir_of(path, create=True, root=root, dir_mode=dir_mode)
    try:
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise UnsafeFile(path, f"{what} is a folder, not a file (remove it)", errno.EISDIR)
        replace_in(dir_fd, name, data, tmp=f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}", create_mode=mode,
                   before_replace=before_replace, sync_dir=sync_dir)
    finally:
        os.close(dir_fd)


def remove_tree(path: Path | str) -> None:
    """Remove a state folder (or a link or file planted in its place) without following any link."""
    try:
        dir_fd, name = dir_of(path)
    except FileNotFoundError:
        return
    try:
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=dir_fd)  # fd-based: never follows a link inside
        else:
            os.unlink(name, dir_fd=dir_fd)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextmanager
def opened(path: Path | str, flags: int, mode: int = 0o644, *, what: str = "file",
           create_dirs: bool = False) -> Iterator[int]:
    fd = open_file(path, flags, mode, what=what, create_dirs=create_dirs)
    try:
        yield fd
    finally:
        os.close(fd)


# ── no-replace rename (Linux renameat2) ───────────────────────────────────────────────────────
# A file system has no compare-and-swap on a file's contents. What it has: renameat2's
# RENAME_NOREPLACE creates a name only if nobody else did, so a file moved aside, checked, and
# replaced by a no-replace rename never overwrites a save that landed in between. Elsewhere (no
# renameat2, or a file system without the flag) it returns False and the caller falls back to a
# hard link (also no-replace) or, without those, to check-then-rename.

_RENAME_NOREPLACE = 1
_renameat2 = None
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


def _libc_renameat2():
    global _renameat2
    if _renameat2 is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            func = libc.renameat2
            func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            func.restype = ctypes.c_int
            _renameat2 = (func, ctypes)
        except (OSError, AttributeError):
            _renameat2 = False
    return _renameat2


def _rename2(dir_fd: int, src: str, dst: str, flags: int) -> bool:
    found = _libc_renameat2()
    if not found:
        return False
    func, ctypes = found
    sys.audit("os.rename", src, dst, dir_fd, dir_fd)  # as os.rename raises it: audit hooks see every rename
    if func(dir_fd, os.fsencode(src), dir_fd, os.fsencode(dst), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), dst)


def rename_noreplace(dir_fd: int, src: str, dst: str) -> bool:
    """Rename `src` to `dst` only if `dst` does not exist (FileExistsError if it does); False where
    that is not supported."""
    return _rename2(dir_fd, src, dst, _RENAME_NOREPLACE)
