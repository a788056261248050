"""Files kitsoki-miner writes for itself and later acts on are signed with a key kept outside the workspace.

A journal tells recovery which files to rewrite; a staged `proposal.json` tells an accept what to
write and what it was checked against. Both live under the workspace's `.artifacts/`, where anyone
who can commit to the repository (or an agent running in it) can plant one. So each is signed with
HMAC-SHA256 under a per-user key, and a file whose signature does not verify is refused with a
message naming it and never acted on.

The key: 32 random bytes in `$KITSOKI_MINER_KEY_DIR/authn.key` (tests point that elsewhere), else
`$XDG_STATE_HOME/kitsoki-miner/authn.key`, else `~/.local/state/kitsoki-miner/authn.key`; created on
first use (folder 0700, file 0600, made whole with a link so two processes agree on one key). A
key folder inside the workspace is refused: a planted key would make planted files verify.

The signature covers the exact bytes of the JSON object as written, the purpose ("journal",
"proposal") and the file's workspace-relative path (so a genuine journal cannot pose as a proposal,
nor one recipe's stage as another's). It is the object's last member,
`"mac": "hmac-sha256:<key id>:<hex>"`, so the file stays plain JSON for people and other readers;
what is verified, and parsed, is the file without that member.

When the key was lost or replaced, an older genuine file no longer verifies: it is reported as
"signed with another key" (with both key ids), and is still never acted on: a person looks at it.
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
from typing import Any

import orjson

from core.safeio import UnsafeFile, read_regular

KEY_DIR_ENV = "KITSOKI_MINER_KEY_DIR"
KEY_FILE = "authn.key"
KEY_BYTES = 32
MAC_FIELD = "mac"
_TRAILER = re.compile(rb',\n  "mac": "hmac-sha256:([0-9a-f]{16}):([0-9a-f]{64})"\n}\n?\Z')


class NotAuthentic(ValueError):
    """A state file kitsoki-miner did not write (or not with this user's current key)."""

    def __init__(self, path: Path | str, problem: str, *, other_key: bool = False) -> None:
        self.path = str(path)
        self.problem = problem
        self.other_key = other_key
        super().__init__(f"{self.path}: {problem}")


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


def key_dir() -> Path:
    override = os.environ.get(KEY_DIR_ENV)
    if override:
        return Path(override).expanduser()
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state).expanduser() if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
    return base / "kitsoki-miner"


_cache: dict[str, Key] = {}
_cache_lock = threading.Lock()


def load_key() -> Key:
    """This user's key, made on first use. Raises KeyUnavailable naming the file when it cannot be."""
    folder = key_dir()
    path = folder / KEY_FILE
    with _cache_lock:
        cached = _cache.get(str(path))
        if cached is not None and _same_file(path, cached):
            return cached
        key = _read_or_make(folder, path)
        _cache[str(path)] = key
        return key


def _same_file(path: Path, key: Key) -> bool:
    try:
        return read_regular(path, KEY_BYTES, what="the signing key") == key.secret
    except OSError:
        return False


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
                                                     f"{exc.strerror or exc}") from None
    return Key(_read_key(path), path, created=created)


def _read_key(path: Path) -> bytes:
    try:
        secret = read_regular(path, KEY_BYTES, what="the signing key")
    except FileNotFoundError:
        raise
    except UnsafeFile as exc:
        raise KeyUnavailable(exc.errno or errno.EIO, f"{exc}; kitsoki-miner cannot sign or trust its state "
                                                     "without it") from None
    if len(secret) != KEY_BYTES:
        raise KeyUnavailable(errno.EINVAL, f"the signing key {path} is {len(secret)} bytes, not {KEY_BYTES}: "
                                           "remove it and kitsoki-miner makes a new one (files signed with "
                                           "the old one are then refused)")
    info = os.stat(path)
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise KeyUnavailable(errno.EPERM, f"the signing key {path} belongs to another user")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o600)  # ours, and only ours to read
    return secret


def _check_outside(key: Key, workspace: Path | None) -> None:
    if workspace is None:
        return
    try:
        inside = key.path.resolve().is_relative_to(Path(workspace).resolve())
    except OSError:
        inside = False
    if inside:
        raise KeyUnavailable(errno.EPERM, f"the signing key {key.path} is inside the workspace {workspace}; "
                                          f"a key there could be planted. Point {KEY_DIR_ENV} outside it")


def _mac(key: Key, purpose: str, rel: str, body: bytes) -> str:
    message = b"kitsoki-miner\0" + purpose.encode() + b"\0" + rel.encode() + b"\0" + body
    return hmac.new(key.secret, message, hashlib.sha256).hexdigest()


def seal(obj: dict[str, Any], *, purpose: str, rel: str, workspace: Path | None = None) -> bytes:
    """The signed bytes of a JSON object to be written at workspace-relative `rel`."""
    if not obj or MAC_FIELD in obj:
        raise ValueError(f"a signed object needs at least one member and no {MAC_FIELD!r} member")
    key = load_key()
    _check_outside(key, workspace)
    body = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    mac = _mac(key, purpose, rel, body)
    return body[:-2] + f',\n  "{MAC_FIELD}": "hmac-sha256:{key.id}:{mac}"\n}}\n'.encode()


def unseal(data: bytes, *, purpose: str, rel: str, path: Path | str, what: str,
           workspace: Path | None = None) -> dict[str, Any]:
    """The JSON object of a signed file, or NotAuthentic saying why it is not trusted."""
    match = _TRAILER.search(data)
    if match is None:
        raise NotAuthentic(path, f"{what} is not signed by kitsoki-miner (it was not written by this tool, "
                                 "or by a version before signing); it is not used")
    key = load_key()
    _check_outside(key, workspace)
    body = data[:match.start()] + b"\n}"
    key_id, mac = match.group(1).decode(), match.group(2).decode()
    if key_id != key.id:
        how = "was missing and has just been made" if key.created else "is a different one"
        raise NotAuthentic(path, f"{what} was signed with another key (id {key_id}); this user's key {key.path} "
                                 f"(id {key.id}) {how}. It may be genuine and older than the key, or planted: "
                                 "it is not used", other_key=True)
    if not hmac.compare_digest(mac, _mac(key, purpose, rel, body)):
        raise NotAuthentic(path, f"{what} was changed after kitsoki-miner wrote it (its signature does not "
                                 "match); it is not used")
    value = orjson.loads(body)
    if type(value) is not dict:  # pragma: no cover - we only ever sign objects
        raise NotAuthentic(path, f"{what} is not a JSON object")
    return value
