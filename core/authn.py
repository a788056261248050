"""Files kitsoki-miner writes for itself and later acts on are signed with a key kept outside the workspace.

A journal tells recovery which files to rewrite; a staged `proposal.json` tells an accept what to
write and what it was checked against. Both live under the workspace's `.artifacts/`, where anyone
who can commit to the repository (or an agent running in it) can plant one. So each is signed with
HMAC-SHA256 under a per-user key, and a file whose signature does not verify is refused with a
message naming it and never acted on.

The key: 32 random bytes in `$KITSOKI_MINER_KEY_DIR/authn.key` (an absolute path; tests point it
elsewhere), else `$XDG_STATE_HOME/kitsoki-miner/authn.key`, else `~/.local/state/kitsoki-miner/authn.key`;
created on first use (folder 0700, file 0600, made whole with a link so two processes agree on one
key). Where the key would be is checked before anything is created: a key folder or key file that
is (or resolves, through a link, `..` or a relative path) inside the workspace is refused, because a
planted key would make planted files verify. A key that cannot be used (a dangling link, a link
loop, a device, a FIFO, a folder, empty or the wrong size, another user's) raises KeyUnavailable
whose message says what is wrong and how to fix it; `key_problem` gives that message for a status line.

The signature covers the exact bytes of the JSON object as written, the purpose ("journal",
"proposal"), the file's workspace-relative path (so a genuine journal cannot pose as a proposal,
nor one recipe's stage as another's) and the workspace itself: its resolved root and the random id
in `.artifacts/mining/workspace.id` (made on the first signature). So a signed stage or journal
copied into another workspace, a clone, or a re-created folder at the same path does not verify
there. It is the object's last member,
`"mac": "hmac-sha256:<key id>:<workspace fingerprint>:<hex>"`, so the file stays plain JSON for
people and other readers; what is verified, and parsed, is the file without that member.

When the key was lost or replaced, an older genuine file no longer verifies: it is reported as
"signed with another key" (with both key ids), and is still never acted on: a person looks at it.
`NotAuthentic.kind` says which case it is (unsigned, changed, other-key, other-workspace, older).
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import re
import secrets
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from core import statefs
from core.safeio import UnsafeFile, read_regular

KEY_DIR_ENV = "KITSOKI_MINER_KEY_DIR"
KEY_FILE = "authn.key"
KEY_BYTES = 32
MAC_FIELD = "mac"
WORKSPACE_ID_REL = ".artifacts/mining/workspace.id"
_TRAILER = re.compile(rb',\n  "mac": "hmac-sha256:([0-9a-f]{16}):(?:([0-9a-f]{16}):)?([0-9a-f]{64})"\n}\n?\Z')
_WORKSPACE_ID = re.compile(rb"[0-9a-f]{32}\n?")

Refusal = Literal["unsigned", "changed", "other-key", "other-workspace", "older"]


class NotAuthentic(ValueError):
    """A state file kitsoki-miner did not write (or not with this user's current key, or not for
    this workspace). `kind` says which."""

    def __init__(self, path: Path | str, problem: str, *, kind: Refusal = "changed") -> None:
        self.path = str(path)
        self.problem = problem
        self.kind = kind
        super().__init__(f"{self.path}: {problem}")

    @property
    def other_key(self) -> bool:
        """Possibly genuine (another key, an older version, another workspace's copy): a person decides."""
        return self.kind in ("other-key", "older", "other-workspace")


class KeyUnavailable(OSError):
    """The signing key cannot be read or made; nothing is signed or trusted without it."""


@dataclass(frozen=True)
class Key:
    secret: bytes
    path: Path
    created: bool
    """True when this process made the key (it was missing): older files cannot verify."""

    @property
    def id(self) -> str:
        return hashlib.sha256(b"kitsoki-miner key id\0" + self.secret).hexdigest()[:16]


def _fix(path: Path | str) -> str:
    return (f"kitsoki-miner cannot sign or trust its state without it. To fix it, remove {path} (a new key is made "
            f"on next use; proposals signed with the old one are drafted again by `kitsoki-miner propose`), or "
            f"point {KEY_DIR_ENV} at an absolute folder of your own outside the workspace")


def key_dir() -> Path:
    """The folder of this user's key. Raises KeyUnavailable for a relative KITSOKI_MINER_KEY_DIR
    (it would depend on where a command is started, often the workspace itself)."""
    override = os.environ.get(KEY_DIR_ENV)
    if override:
        folder = Path(override).expanduser()
        if not folder.is_absolute():
            raise KeyUnavailable(errno.EINVAL, f"{KEY_DIR_ENV}={override} is a relative path: the key folder must "
                                               "be an absolute path outside the workspace")
        return folder
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state).expanduser() if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
    return base / "kitsoki-miner"


_cache: dict[str, Key] = {}
_cache_lock = threading.Lock()


def load_key(workspace: Path | None = None) -> Key:
    """This user's key, made on first use. With `workspace`, a key that is (or would be made) inside
    it is refused before anything is created. Raises KeyUnavailable naming the file when it cannot be."""
    folder = key_dir()
    path = folder / KEY_FILE
    if workspace is not None:
        _check_outside(folder, path, workspace)
    with _cache_lock:
        cached = _cache.get(str(path))
        if cached is not None and _same_file(path, cached):
            return cached
        key = _read_or_make(folder, path)
        _cache[str(path)] = key
        return key


def key_problem(workspace: Path | None = None) -> str | None:
    """Why this user's key cannot be used here (what is wrong and how to fix it), or None."""
    try:
        load_key(workspace)
    except KeyUnavailable as exc:
        return f"the signing key cannot be used: {exc.strerror or exc}"
    return None


def _same_file(path: Path, key: Key) -> bool:
    try:
        return read_regular(path, KEY_BYTES, what="the signing key") == key.secret
    except OSError:
        return False


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # 3.11 says RuntimeError for a link loop
        raise KeyUnavailable(errno.ELOOP, f"{path} cannot be resolved ({exc}); " + _fix(path)) from None


def _check_outside(folder: Path, path: Path, workspace: Path) -> None:
    """Before anything is created: neither the key folder nor the key file may resolve (following
    the links that exist, `..`, a relative start) into the workspace."""
    root = _resolved(Path(workspace).absolute())
    for candidate in (folder, path):
        where = _resolved(candidate.absolute())
        if where == root or where.is_relative_to(root):
            shown = candidate if where == candidate else f"{candidate} (which is {where})"
            raise KeyUnavailable(errno.EPERM, f"the signing key {shown} is inside the workspace {workspace}; a key "
                                              f"there could be planted, so none is made or used. Point {KEY_DIR_ENV} "
                                              "(or XDG_STATE_HOME / HOME) at a folder outside it")


def _read_or_make(folder: Path, path: Path) -> Key:
    try:
        return Key(_read_key(path), path, created=False)
    except FileNotFoundError:
        pass
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = folder / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces: a key another process made first wins
            created = True
        except FileExistsError:
            created = False
        finally:
            os.unlink(tmp)
    except OSError as exc:
        raise KeyUnavailable(exc.errno or errno.EIO, f"the signing key {path} cannot be made: "
                                                     f"{exc.strerror or exc}; point {KEY_DIR_ENV} at an absolute "
                                                     "folder you can write, outside the workspace") from None
    try:
        return Key(_read_key(path), path, created=created)
    except FileNotFoundError:  # a link whose target vanished between our link() and the read
        raise KeyUnavailable(errno.ENOENT, f"the signing key {path} vanished as it was made; " + _fix(path)) from None


def _read_key(path: Path) -> bytes:
    try:
        secret = read_regular(path, KEY_BYTES, what="the signing key")
    except FileNotFoundError:
        if os.path.islink(path):  # a dangling link: never made "through" it, never a traceback
            raise KeyUnavailable(errno.ENOENT, f"the signing key {path} is a link to {os.readlink(path)}, which does "
                                               "not exist; " + _fix(path)) from None
        raise
    except UnsafeFile as exc:
        raise KeyUnavailable(exc.errno or errno.EIO, f"{exc}; " + _fix(path)) from None
    if len(secret) != KEY_BYTES:
        raise KeyUnavailable(errno.EINVAL, f"the signing key {path} is {len(secret)} bytes, not {KEY_BYTES}; "
                                           + _fix(path))
    info = os.stat(path)
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise KeyUnavailable(errno.EPERM, f"the signing key {path} belongs to another user; " + _fix(path))
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o600)  # ours, and only ours to read
    return secret


# ── the workspace a signature is bound to ─────────────────────────────────────────────────────


def workspace_id(workspace: Path, *, create: bool = False) -> str | None:
    """The random id kept in `.artifacts/mining/workspace.id` (made when `create` and missing; a
    race between two processes keeps the first). None when missing and not created. Raises
    UnsafeFile when the file is a link, not a regular file, or not an id."""
    path = Path(workspace) / WORKSPACE_ID_REL
    try:
        raw = statefs.read_bytes(path, 64, what="the workspace id")
    except FileNotFoundError:
        if not create:
            return None
        dir_fd, name = statefs.dir_of(path, create=True)
        try:
            tmp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=dir_fd)
            try:
                os.write(fd, secrets.token_hex(16).encode() + b"\n")  # 33 bytes: one write
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp, dir_fd=dir_fd)
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        raw = statefs.read_bytes(path, 64, what="the workspace id")
    if not _WORKSPACE_ID.fullmatch(raw):
        raise UnsafeFile(path, "the workspace id is not one kitsoki-miner wrote (32 hex digits); remove it (proposals "
                               "staged here are then drafted again)", errno.EINVAL)
    return raw[:32].decode()


def workspace_fingerprint(workspace: Path, *, create: bool = False) -> str | None:
    """What a signature is bound to: the resolved root and the workspace id, hashed (16 hex digits)."""
    ident = workspace_id(workspace, create=create)
    if ident is None:
        return None
    root = os.fsencode(str(Path(workspace).resolve()))
    return hashlib.sha256(b"kitsoki-miner workspace\0" + root + b"\0" + ident.encode()).hexdigest()[:16]


def _mac(key: Key, purpose: str, rel: str, bound: str, body: bytes) -> str:
    message = (b"kitsoki-miner\0" + purpose.encode() + b"\0" + rel.encode() + b"\0" + bound.encode() + b"\0"
               + body)
    return hmac.new(key.secret, message, hashlib.sha256).hexdigest()


def seal(obj: dict[str, Any], *, purpose: str, rel: str, workspace: Path) -> bytes:
    """The signed bytes of a JSON object to be written at workspace-relative `rel` of `workspace`."""
    if not obj or MAC_FIELD in obj:
        raise ValueError(f"a signed object needs at least one member and no {MAC_FIELD!r} member")
    key = load_key(workspace)
    bound = workspace_fingerprint(workspace, create=True)
    body = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    mac = _mac(key, purpose, rel, bound, body)
    return body[:-2] + f',\n  "{MAC_FIELD}": "hmac-sha256:{key.id}:{bound}:{mac}"\n}}\n'.encode()


def unsigned_body(data: bytes) -> dict[str, Any] | None:
    """The JSON object of a signed file without checking its signature (to show a person what an
    unverifiable file says, never to act on it); None when it is not one."""
    match = _TRAILER.search(data)
    try:
        value = orjson.loads(data[:match.start()] + b"\n}" if match else data)
    except orjson.JSONDecodeError:
        return None
    return value if type(value) is dict else None


def unseal(data: bytes, *, purpose: str, rel: str, path: Path | str, what: str, workspace: Path) -> dict[str, Any]:
    """The JSON object of a signed file, or NotAuthentic saying why it is not trusted."""
    match = _TRAILER.search(data)
    if match is None:
        raise NotAuthentic(path, f"{what} is not signed by kitsoki-miner (it was not written by this tool, "
                                 "or by a version before signing); it is not used", kind="unsigned")
    key = load_key(workspace)
    body = data[:match.start()] + b"\n}"
    key_id, signed_for, mac = match.group(1).decode(), match.group(2), match.group(3).decode()
    if key_id != key.id:
        how = "was missing and has just been made" if key.created else "is a different one"
        raise NotAuthentic(path, f"{what} was signed with another key (id {key_id}); this user's key {key.path} "
                                 f"(id {key.id}) {how}. It may be genuine and older than the key, or planted: "
                                 "it is not used", kind="other-key")
    if signed_for is None:
        raise NotAuthentic(path, f"{what} was signed by an older kitsoki-miner, before signatures named their "
                                 "workspace; it is not used", kind="older")
    try:
        bound = workspace_fingerprint(workspace)
    except UnsafeFile as exc:
        raise NotAuthentic(path, f"{what} cannot be checked: {exc}", kind="other-workspace") from None
    if signed_for.decode() != bound:
        here = f"this one is {bound}" if bound else f"this one has no id yet ({WORKSPACE_ID_REL} is missing)"
        raise NotAuthentic(path, f"{what} was signed for another workspace ({signed_for.decode()}; {here}): it was "
                                 "copied from another folder or clone, or this folder was re-created; it is not "
                                 "used here", kind="other-workspace")
    if not hmac.compare_digest(mac, _mac(key, purpose, rel, bound, body)):
        raise NotAuthentic(path, f"{what} was changed after kitsoki-miner wrote it (its signature does not "
                                 "match); it is not used", kind="changed")
    value = orjson.loads(body)
    if type(value) is not dict:  # pragma: no cover - we only ever sign objects
        raise NotAuthentic(path, f"{what} is not a JSON object")
    return value
