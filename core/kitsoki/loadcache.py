"""What a story's load came to, kept across processes: `.artifacts/cache/loaded.json`.

Every CLI command is a new process, and its first load of the workspace parsed, folded and built
every story again (about 80% of an accept that runs no flow). Most commands need only some of them
in full: an accept of a `.kitsoki.yaml` change needs to know that every story still loads and which
files each reads (the gate's scope), not their states. So the outcome of each story's load is kept:
whether it loads (else the issues that refuse it) and its outline (core.kitsoki.model.Story less
its definition, world, intents and states: slug, app id and title, the files it reads, what it
imports, its hosts, its exits). The root instance is kept the same way (core.kitsoki.workspace.
load_root_instance), under its synthesized file and a digest of what `root:` says (the config's bytes
are read by every load anyway; the entry checks what the root's load read: dev-story's files or our
summary of it), so an accept knows the root both before its edit and after it (the proposer's staged
load of the same draft left that entry). A story known from the memo is handed out with that outline and
loads for real on the first read of anything else (`Story._realize`); the result is the same story
(the memo holds nothing a load would not give again, and a story is loaded again whenever a thing
its load looked at may have changed).

An entry is keyed by the code (every source file of core/, as the load checks' memo is), the app's
path, whether it is materialized, and where `@kitsoki/` imports resolve; and it is used only when:
- every file the load read (its own, its includes, every import's, the library summary) has the
  same content now: sha256 of the bytes read now against the recorded one (a file that was missing
  must still be missing); the recorded (size, mtime_ns, inode) of each is what finds the digest of
  an unchanged file again within a process without reading it twice;
- everything else the load asked answers the same again: each include glob matches the same files
  (a new room file matching `include:` is seen), each import's `source:` resolves to the same app
  and origin (a kitsoki checkout appearing around the workspace is seen), the agent checks'
  environment variables and file probes (core.kitsoki.probed.Probes), and every environment
  variable and path the load looked at (core.kitsoki.probed's record, which a hit replays into the
  current load's record, so a memo keyed on it, the proposer's, stays complete).

The digest recorded for a YAML file is that of the very bytes the load parsed (the parse cache keeps
it with the tree), so a file written a moment ago is remembered as what was read, never as what is
there later; a file read otherwise (the library summary) is hashed when the entry is stored, and
only when it is settled (unchanged since the load and older than the parse cache's racy window). The
file is signed like every state file the tool acts on (core.authn, read and written through
core.statefs); one that does not verify, or names other code, is not used, and loads run as before.
It is written only into a workspace that already has kitsoki-miner's state (`.artifacts/`).
Deleting it is always safe.
"""

from __future__ import annotations

import glob as globlib
import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from core.kitsoki.checked import SealedMemo, code_digest, memo_of
from core.kitsoki.checked import forget as forget_memos
from core.kitsoki.parse import RACY_SECONDS, Signature, signature

log = logging.getLogger("kitsoki_miner.kitsoki")

LOADED_FILE = Path(".artifacts") / "cache" / "loaded.json"
PURPOSE = "loaded"
MAX_BYTES = 32 << 20
MAX_ENTRIES = 2048
MAX_HASHED_BYTES = 16 << 20
"""A file larger than this is not hashed (the loader refuses it anyway): such a story is not memoized."""


# --- the content of files, hashed once per process per (path, signature) ----------------------------

_DIGESTS: dict[str, tuple[Signature, str]] = {}
_DIGESTS_LOCK = threading.Lock()


def file_digest(path: str) -> tuple[Signature | None, str | None]:
    """(signature, sha256 hex) of `path` as it is now; (None, None) when it is missing; (sig, None)
    when it cannot be read or changed while it was read."""
    sig = signature(path)
    if sig is None:
        return None, None
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(path)
    if known is not None and known[0] == sig and time.time() - sig.mtime_ns / 1e9 > RACY_SECONDS:
        return sig, known[1]
    if sig.size > MAX_HASHED_BYTES:
        return sig, None
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_HASHED_BYTES + 1)
    except OSError:
        return sig, None
    if signature(path) != sig:
        return sig, None
    digest = hashlib.sha256(data).hexdigest()
    with _DIGESTS_LOCK:
        _DIGESTS[path] = (sig, digest)
    return sig, digest


# --- what a load asked besides reading files ---------------------------------------------------------


def _probes_json(probes: list[tuple]) -> list[list[Any]] | None:
    out = []
    for probe in probes:
        if probe[0] == "glob":
            out.append(["glob", probe[1], list(probe[2]), list(probe[3])])
        elif probe[0] == "source":
            out.append(["source", probe[1], probe[2], probe[3], probe[4]])
        elif probe[0] == "agents":
            out.append(["agents", probe[1]])
        else:
            return None  # a probe this memo does not know how to ask again: never memoized
    return out


def _still(probes: list[Any], sources: Any, asked: dict[tuple, Any]) -> bool:
    """Whether every probe answers now as it did when the entry was stored. `asked` holds the
    answers found during this workspace load (stories share includes and imports)."""
    from core.kitsoki.probed import Probes
    from core.kitsoki.imports import SourceError, resolve_source

    try:
        for probe in probes:
            kind = probe[0]
            if kind == "glob":
                key = ("glob", probe[1])
                answer = asked.get(key)
                if answer is None:
                    matches = sorted(globlib.glob(probe[1], include_hidden=True))
                    answer = asked[key] = (matches, [os.path.realpath(m) for m in matches])
                if answer[0] != probe[2] or answer[1] != probe[3]:
                    return False
            elif kind == "source":
                key = ("source", probe[1], probe[2])
                answer = asked.get(key)
                if answer is None:
                    try:
                        resolved = resolve_source(probe[1], Path(probe[2]), sources)
                        answer = (str(resolved.path), resolved.origin)
                    except SourceError as exc:
                        answer = (None, str(exc))
                    asked[key] = answer
                if probe[3] != answer[0] or probe[4] != answer[1]:
                    return False
            elif kind == "agents":
                if not Probes.still(probe[1]):
                    return False
            else:
                return False
    except (OSError, ValueError, TypeError, IndexError, KeyError):
        return False
    return True


# --- a story's outline ---------------------------------------------------------------------------------


def outline(story: Any) -> dict[str, Any]:
    """The fields of a loaded Story that are not built from its definition, as JSON data."""
    return {
        "slug": story.slug, "path": str(story.path), "app_id": story.app_id, "title": story.title, "root": story.root,
        "exits": {name: [w.file, w.line, w.column] for name, w in story.exits.items()},
        "imports": story.imports,
        "folded": {alias: [str(info.source), info.origin, info.entry] for alias, info in story.folded.items()},
        "imported": [str(p) for p in story.imported], "import_files": [str(p) for p in story.import_files],
        "hosts": list(story.hosts), "materialized": story.materialized, "files": [str(p) for p in story.files],
        "open_world": story.open_world,
    }


def story_of(data: dict[str, Any]) -> Any:
    """A Story with the outline `data` (its definition, world, intents and states not built)."""
    from core.kitsoki.build import _make, _where
    from core.kitsoki.model import ImportInfo, Story

    story = Story.model_construct(
        slug=data["slug"], path=Path(data["path"]), app_id=data["app_id"], title=data["title"], root=data["root"],
        exits={name: _where(tuple(at)) for name, at in data["exits"].items()}, imports=data["imports"],
        folded={alias: _make(ImportInfo, alias=alias, source=Path(source), origin=origin, entry=entry)
                for alias, (source, origin, entry) in data["folded"].items()},
        imported=[Path(p) for p in data["imported"]], import_files=[Path(p) for p in data["import_files"]],
        hosts=list(data["hosts"]), materialized=data["materialized"], files=[Path(p) for p in data["files"]],
        open_world=data["open_world"])
    for name in ("world", "intents", "states"):
        story.__dict__.pop(name, None)
    return story


# --- the memo ------------------------------------------------------------------------------------------


def sources_key(sources: Any) -> str:
    return f"{sources.kitsoki_repo}\0{sources.library}\0{sources.repo_from}"


class LoadMemo(SealedMemo):
    """One workspace's memo of story loads."""

    FILE = LOADED_FILE
    PURPOSE = PURPOSE
    MAX_ENTRIES = MAX_ENTRIES
    MAX_BYTES = MAX_BYTES
    WHAT = "load memo"

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace)
        self.hits = self.misses = 0
        """Counted for tests and benchmarks."""
        self._asked: dict[tuple, Any] = {}
        self._asked_sources: Any = None

    def _stamp(self) -> dict[str, Any]:
        return {"code": code_digest()}

    def begin(self, sources: Any) -> None:
        """A new workspace load: what the filesystem answered during the last one is asked again."""
        with self._lock:
            self._asked = {}
            self._asked_sources = sources

    @staticmethod
    def name(app: str, materialized: bool, sources: Any) -> str:
        return hashlib.sha256(f"{os.path.abspath(app)}\0{materialized}\0{sources_key(sources)}".encode()).hexdigest()

    def get(self, app: str, materialized: bool, sources: Any, overlay: dict[str, bytes]
            ) -> tuple[Any, list[dict], dict[str, Signature | None], dict[str, Any]] | None:
        """(outline or None, issues, signatures now, probes) of the app's load, when nothing it looked
        at changed; `probes` (core.kitsoki.probed) are the environment variables and paths it looked at."""
        from core.kitsoki import probed

        name = self.name(app, materialized, sources)
        with self._lock:
            entry = self._load().get(name)
        if not isinstance(entry, dict):
            self.misses += 1
            return None
        with self._lock:
            if self._asked_sources != sources:
                self._asked, self._asked_sources = {}, sources
            asked = self._asked
        try:
            files, probes = entry["files"], entry["probes"]
            signatures: dict[str, Signature | None] = {}
            for file, digest in files.items():
                if file in overlay:
                    raise LookupError
                known = asked.get(("file", file))  # stories share imports: each file read once a load
                if known is None:
                    known = asked[("file", file)] = file_digest(file)
                sig, now = known
                if digest is None:
                    if sig is not None:
                        raise LookupError
                elif now is None or now != digest:
                    raise LookupError
                signatures[file] = sig
            if not _still(probes, sources, asked) or not probed.still(entry["probed"]):
                raise LookupError
            found = (entry["story"], entry["issues"], signatures, entry["probed"])
        except (LookupError, TypeError, ValueError, AttributeError):
            self.misses += 1
            return None
        with self._lock:
            self._used.add(name)
        self.hits += 1
        return found

    def put(self, app: str, materialized: bool, sources: Any, story: Any, issues: list[Any],
            signatures: dict[str, Signature | None], probes: list[tuple], looked: dict[str, Any]) -> None:
        """Remember a load: its outcome, the digest of every file it read, what it asked (`probes`:
        globs, import resolutions, agent checks) and the environment variables and paths it looked at
        (`looked`, core.kitsoki.probed's record)."""
        probe_data = _probes_json(probes)
        if probe_data is None:
            return
        from core.kitsoki.parse import PARSE_CACHE

        now = time.time()
        files: dict[str, str | None] = {}
        for file, sig in signatures.items():
            if sig is None:
                if signature(file) is not None:
                    return
                files[file] = None
                continue
            parsed = PARSE_CACHE.parsed_sha256(file, sig)
            if parsed is not None:  # the digest of the very bytes the load parsed
                files[file] = parsed
                continue
            # Not parsed here (the library summary): hashed now, so only when it is settled.
            if now - sig.mtime_ns / 1e9 <= RACY_SECONDS:
                return
            current, digest = file_digest(file)
            if current != sig or digest is None:
                return
            files[file] = digest
        try:
            import orjson

            data = outline(story) if story is not None else None
            if data is not None and orjson.loads(orjson.dumps(data)) != data:
                return  # something in it JSON would not give back (a NaN default): not memoized
            entry = {"files": files, "probes": probe_data, "probed": looked, "story": data,
                     "issues": [issue.model_dump(mode="json") for issue in issues]}
            orjson.dumps(entry)
        except (TypeError, ValueError, AttributeError):
            return
        name = self.name(app, materialized, sources)
        with self._lock:
            self._store(name, entry)


def memo_for(workspace: Path) -> LoadMemo:
    return memo_of(LoadMemo, workspace)


def forget() -> None:
    """Drop every memo and digest held in this process (a cold start, for benchmarks and tests)."""
    forget_memos(LoadMemo)
    with _DIGESTS_LOCK:
        _DIGESTS.clear()
