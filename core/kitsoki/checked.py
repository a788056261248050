"""The loader's memo of its load-time checks, kept across processes: `.artifacts/cache/checked.json`.

kitsoki's load-time checks (core.kitsoki.checks.validate_definition: states, views, expressions) are
close to half of what loading a story costs, and every CLI command is a new process that loads the
workspace again. The checks read nothing but the story's definition, which is made from the files
its load read (its own, its includes, its imports' files) and our code. So their verdict (the
issues, usually none) is kept under a key made of exactly that: the code (core.proposals.memo's
every source file of core/ and the library we carry, by path, size and mtime), the app's path, and the sha256 of every file the load read (of the
overlay's bytes for a staged draft). A story whose files did not change is not checked again; one
whose bytes changed has another key. The agent checks (core.kitsoki.agent_checks) look beyond the
definition (environment variables, whether a starlark script and its sidecar exist): their verdict is
kept with every such probe and its answer, and used only while each probe answers the same.

It is written only into a workspace that already has kitsoki-miner's state (`.artifacts/`): loading a
checkout never starts one. The file is signed like every state file the tool acts on (core.authn; read through core.statefs):
one that does not verify is never used, and checks run as before. Deleting it is always safe.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from core.kitsoki.yamlread import ConfigIssue

log = logging.getLogger("kitsoki_miner.kitsoki")

CHECKED_FILE = Path(".artifacts") / "cache" / "checked.json"
PURPOSE = "checked"
MAX_BYTES = 16 << 20
MAX_ENTRIES = 4096
AGENTS = "agents\0"
"""The prefix of an agent-checks entry (its value: issues, fatal, and the probes it depends on)."""
_CODE: str | None = None


class SealedMemo:
    """A memo a workspace keeps across processes in one signed JSON file (`FILE`, under `.artifacts/`),
    shared by the loads of a process (thread-safe). A file that does not verify (core.authn, read
    through core.statefs), or whose `_stamp()` members differ, is not used: the work is done again."""

    FILE: Path
    PURPOSE: str
    MAX_ENTRIES = MAX_ENTRIES
    MAX_BYTES = MAX_BYTES
    WHAT = "memo"

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)
        self.path = self.workspace / self.FILE
        self._lock = threading.Lock()
        self._entries: dict[str, Any] | None = None
        self._used: set[str] = set()
        self._dirty = False
        self._written: dict[str, Any] = {}
        """What this process stored while writes are deferred (a draft pool's helper): handed back, not flushed."""

    def _store(self, key: str, value: Any) -> None:
        """Keep `value` under `key` (the caller holds the lock)."""
        self._load()[key] = value
        self._used.add(key)
        self._dirty = True
        if _DEFERRED:
            self._written[key] = value

    def _stamp(self) -> dict[str, Any]:
        """Members written beside the entries that must read back the same for them to be used."""
        return {}

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            from core import authn, statefs

            entries: dict[str, Any] = {}
            try:
                raw = statefs.read_bytes(self.path, self.MAX_BYTES, what=self.FILE.name)
                data = authn.unseal(raw, purpose=self.PURPOSE, rel=self.FILE.as_posix(), path=self.path,
                                    what=self.FILE.name, workspace=self.workspace)
                if all(data.get(k) == v for k, v in self._stamp().items()) and isinstance(data.get("entries"), dict):
                    entries = data["entries"]
            except FileNotFoundError:
                pass
            except (OSError, ValueError) as exc:  # unsigned, planted, another key, no key: not used
                log.info("%s not used: %s", self.path, exc)
            self._entries = entries
        return self._entries

    def flush(self) -> None:
        """Write what this process learned (entries used now first, then older ones up to the bound)."""
        with self._lock:
            if _DEFERRED or not self._dirty or self._entries is None:
                return
            if not (self.workspace / ".artifacts").is_dir():
                return  # a load alone never starts a workspace's state (a read-only checkout stays untouched)
            kept = {k: self._entries[k] for k in self._used if k in self._entries}
            for k, v in self._entries.items():
                if len(kept) >= self.MAX_ENTRIES:
                    break
                kept.setdefault(k, v)
            self._dirty = False
        from core import authn, statefs

        try:
            data = authn.seal({**self._stamp(), "entries": kept}, purpose=self.PURPOSE, rel=self.FILE.as_posix(),
                              workspace=self.workspace)
            statefs.ensure_dir(self.path.parent)
            statefs.write_atomic(self.path, data, what=self.FILE.name)
        except (OSError, ValueError) as exc:  # only costs time later
            log.info("the %s was not written: %s", self.WHAT, exc)


class CheckedMemo(SealedMemo):
    """One workspace's memo of load checks."""

    FILE = CHECKED_FILE
    PURPOSE = PURPOSE
    WHAT = "load checks' memo"

    def key(self, app: str, signatures: dict[str, Any], overlay: dict[str, bytes]) -> tuple[str, bool] | None:
        """(the key, whether a verdict may be stored under it), or None when a file the load read
        changed since (its signature differs): the bytes hashed now may not be the ones checked."""
        from core.kitsoki.loadcache import file_digest
        from core.kitsoki.parse import RACY_SECONDS

        h = hashlib.sha256(f"{code_digest()}\0{app}\n".encode())
        settled = True
        now = time.time()
        for file in sorted(signatures):
            data = overlay.get(file)
            if data is not None:
                settled = False  # a staged draft's: looked up, never kept (the next pass drafts anew)
            else:
                sig = signatures[file]
                current, digest = file_digest(file)  # read once per process while unchanged
                if digest is None or sig is None or current != sig:
                    return None  # gone, unreadable or changed since: nothing to key on
                settled = settled and now - sig.mtime_ns / 1e9 > RACY_SECONDS
                h.update(file.encode() + b"\0" + bytes.fromhex(digest))
                continue
            h.update(file.encode() + b"\0" + hashlib.sha256(data).digest())
        return h.hexdigest(), settled

    def get(self, key: str) -> list[ConfigIssue] | None:
        with self._lock:
            found = self._load().get(key)
            if found is None:
                return None
            self._used.add(key)
        try:
            return [ConfigIssue.model_validate(issue) for issue in found]
        except ValueError:
            return None

    def put(self, key: str, issues: list[ConfigIssue]) -> None:
        with self._lock:
            self._store(key, [issue.model_dump(mode="json") for issue in issues])

    def get_agents(self, key: str) -> tuple[list[ConfigIssue], bool, dict[str, Any]] | None:
        """The agent checks' (issues, fatal, probes) kept under `key`, when every environment variable
        and file they looked at (core.kitsoki.probed.Probes) still answers the same."""
        from core.kitsoki.probed import Probes

        with self._lock:
            found = self._load().get(AGENTS + key)
        if not isinstance(found, dict) or not isinstance(found.get("probes"), dict) or \
                not Probes.still(found["probes"]):
            return None
        try:
            issues = [ConfigIssue.model_validate(issue) for issue in found["issues"]]
            fatal = found["fatal"]
        except (KeyError, TypeError, ValueError):
            return None
        if not isinstance(fatal, bool):
            return None
        with self._lock:
            self._used.add(AGENTS + key)
        return issues, fatal, found["probes"]

    def put_agents(self, key: str, issues: list[ConfigIssue], fatal: bool, probes: dict[str, Any]) -> None:
        with self._lock:
            self._store(AGENTS + key, {"issues": [issue.model_dump(mode="json") for issue in issues],
                                       "fatal": fatal, "probes": probes})


def code_digest() -> str:
    """Which code made a memo: every file under core/ by path, size and mtime (once per process)."""
    global _CODE
    if _CODE is None:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256()
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                info = os.stat(os.path.join(folder, name))
                h.update(f"{os.path.relpath(os.path.join(folder, name), root)}\0{info.st_size}\0"
                         f"{info.st_mtime_ns}\n".encode())
        _CODE = h.hexdigest()
    return _CODE


_MEMOS: dict[tuple[type, str], SealedMemo] = {}
_MEMOS_LOCK = threading.Lock()


def memo_of(kind: type, workspace: Path) -> Any:
    """The process's one `kind` memo of `workspace`."""
    key = (kind, os.path.abspath(workspace))
    with _MEMOS_LOCK:
        memo = _MEMOS.get(key)
        if memo is None:
            memo = _MEMOS[key] = kind(Path(key[1]))
        return memo


_DEFERRED = False
"""Set in a draft pool's helper process (core.proposals.draft_pool): its memos are written by the process
that forked it, from what `take_written` hands back, so two processes never write one file."""


def defer_writes() -> None:
    """From now on this process's memos keep what they learn for `take_written` and never flush."""
    global _DEFERRED
    _DEFERRED = True


def take_written() -> list[tuple[type, str, dict[str, Any]]]:
    """(kind, workspace, entries) stored since the last call, of every memo of this process."""
    out = []
    with _MEMOS_LOCK:
        memos = list(_MEMOS.items())
    for (kind, workspace), memo in memos:
        with memo._lock:
            if memo._written:
                out.append((kind, workspace, memo._written))
                memo._written = {}
    return out


def absorb(written: list[tuple[type, str, dict[str, Any]]]) -> None:
    """Take in what a helper's memos learned (take_written), as if this process had stored it; the
    memos touched are flushed."""
    touched = []
    for kind, workspace, entries in written:
        memo = memo_of(kind, Path(workspace))
        with memo._lock:
            for key, value in entries.items():
                memo._store(key, value)
        touched.append(memo)
    for memo in dict.fromkeys(touched):
        memo.flush()


def memo_for(workspace: Path) -> CheckedMemo:
    return memo_of(CheckedMemo, workspace)


def forget(kind: type | None = CheckedMemo) -> None:
    """Drop every memo (of `kind`; None: of every kind) held in this process (a cold start, for
    benchmarks and tests)."""
    with _MEMOS_LOCK:
        for key in [k for k in _MEMOS if kind is None or k[0] is kind]:
            del _MEMOS[key]
