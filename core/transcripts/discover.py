"""Where a repository's transcripts live, and how files group into sessions (the resolver).

Claude Code keeps `~/.claude/projects/<slug>/<sessionId>.jsonl` (also `~/.config/claude/projects`,
or the comma-separated roots in CLAUDE_CONFIG_DIR); the slug replaces every character outside
[A-Za-z0-9] with `-`, so it is lossy and each file's `cwd` confirms the match. A Windows repository
(`C:\\...`) has its sessions under both `C--...` and `c--...` (the drive letter's case varies), and its
path compares case-insensitively on the drive. Pi keeps `~/.pi/agent/sessions/--<path>--/` (or
PI_CODING_AGENT_DIR). Codex CLI keeps `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` and
`~/.codex/archived_sessions/` (or under CODEX_HOME), not by project: the `cwd` of each file's
session_meta line says whose it is. No history is an empty result.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from core.transcripts.display import display_path
from core.transcripts.lines import NOT_A_TRANSCRIPT, sniff_format

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def claude_slug(project: str | Path) -> str:
    return _NOT_ALNUM.sub("-", str(project))


def pi_dirname(project: str | Path) -> str:
    text = re.sub(r"^[/\\]", "", str(project))
    return "--" + re.sub(r"[/\\:]", "-", text) + "--"


_WINDOWS = re.compile(r"^[A-Za-z]:[\\/]")


def same_project(cwd: str, repo: str | Path) -> bool:
    """Whether a recorded `cwd` names `repo`: exact, except a Windows drive letter in any case."""
    a, b = str(cwd), str(repo)
    if _WINDOWS.match(a) and _WINDOWS.match(b):
        return a[0].lower() == b[0].lower() and a[1:].replace("/", "\\").rstrip("\\") == b[1:].replace("/", "\\").rstrip("\\")
    return Path(a) == Path(b)


def repo_path(repo: str | Path) -> str | Path:
    """The repository as given, resolved unless it is a Windows path (which this OS cannot resolve)."""
    text = str(repo)
    if _WINDOWS.match(text):
        return text
    return Path(repo).expanduser().resolve()


def claude_slugs(repo: str | Path) -> list[str]:
    slug = claude_slug(repo)
    if _WINDOWS.match(str(repo)):
        return list(dict.fromkeys([slug[0].upper() + slug[1:], slug[0].lower() + slug[1:]]))
    return [slug]


def codex_roots(home: Path, env: Mapping[str, str]) -> list[Path]:
    """Where Codex CLI writes rollouts: sessions/ and archived_sessions/ under CODEX_HOME or ~/.codex."""
    configured = env.get("CODEX_HOME", "").strip()
    base = Path(configured).expanduser() if configured else home / ".codex"
    return [base / "sessions", base / "archived_sessions"]


def codex_meta(path: Path) -> dict:
    """The payload of a rollout's session_meta line (the first lines), {} when there is none."""
    try:
        with open(path, "rb") as fh:
            for _ in range(5):
                raw = fh.readline(8 * 1024 * 1024)
                if not raw:
                    break
                if b'"session_meta"' not in raw:
                    continue
                try:
                    rec = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if type(rec) is dict and rec.get("type") == "session_meta" and type(rec.get("payload")) is dict:
                    return rec["payload"]
    except OSError:
        return {}
    return {}


def claude_roots(home: Path, env: Mapping[str, str]) -> list[Path]:
    """The `projects/` folders Claude Code may write to, existing or not."""
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    if configured:
        bases = [Path(p.strip()).expanduser() for p in configured.split(",") if p.strip()]
    else:
        bases = [home / ".claude", home / ".config" / "claude"]
    return [b / "projects" for b in bases]


def pi_root(home: Path, env: Mapping[str, str]) -> Path:
    agent_dir = env.get("PI_CODING_AGENT_DIR", "").strip()
    return (Path(agent_dir).expanduser() if agent_dir else home / ".pi" / "agent") / "sessions"


@dataclass
class SessionFiles:
    """The files one session is read from: a Claude trunk plus subagent files, or one Pi file."""

    format: str
    trunk: Path | None
    subagents: list[Path] = field(default_factory=list)

    @property
    def paths(self) -> list[Path]:
        return ([self.trunk] if self.trunk else []) + self.subagents

    @property
    def size(self) -> int:
        total = 0
        for p in self.paths:
            try:
                total += p.stat().st_size
            except OSError:
                pass
        return total


def _jsonl_files(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    found: list[str] = []
    stack = [str(folder)]
    while stack:  # scandir: file types come with the listing, no stat per file
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.name.endswith(".jsonl") and entry.is_file():
                        found.append(entry.path)
        except OSError:
            continue
    return [Path(p) for p in sorted(found)]


def first_field(path: Path, key: str) -> str | None:
    """`key` of the first record that has it (a few lines in), without reading the file."""
    try:
        with open(path, "rb") as fh:
            for _ in range(50):
                raw = fh.readline(4 * 1024 * 1024)
                if not raw:
                    return None
                if key.encode() not in raw:
                    continue
                try:
                    value = orjson.loads(raw).get(key)
                except (orjson.JSONDecodeError, AttributeError):
                    continue
                if type(value) is str:
                    return value
    except OSError:
        return None
    return None


_HEAD_LINES = 50
_LINE_LIMIT = 4 * 1024 * 1024
_HEAD_BYTES = 64 * 1024


def _head_lines(fh) -> list[bytes]:
    """The first _HEAD_LINES pieces `fh.readline(_LINE_LIMIT)` gives (fewer at the end of the file),
    cut from one read of the file's head where it holds them (a readline call per line was most of
    the time spent screening a seed pass's files)."""
    head = fh.read(_HEAD_BYTES)
    lines: list[bytes] = []
    pos = 0
    while len(lines) < _HEAD_LINES:
        nl = head.find(b"\n", pos)
        if nl < 0:
            break
        lines.append(head[pos:nl + 1])
        pos = nl + 1
    if len(lines) < _HEAD_LINES:
        if len(head) < _HEAD_BYTES:  # the whole file: its unterminated last line, if any, is the last piece
            if pos < len(head):
                lines.append(head[pos:])
        else:  # a line runs past the head: read on from its start as readline would
            fh.seek(pos)
            while len(lines) < _HEAD_LINES:
                raw = fh.readline(_LINE_LIMIT)
                if not raw:
                    break
                lines.append(raw)
    return lines


def first_fields(path: Path, keys: tuple[str, ...]) -> dict[str, str | None]:
    """first_field for several keys, reading the file's first lines once."""
    found: dict[str, str | None] = dict.fromkeys(keys)
    wanted = {key: key.encode() for key in keys}
    try:
        with open(path, "rb") as fh:
            lines = _head_lines(fh)
    except OSError:
        return found
    joined = b"".join(lines)
    wanted = {key: needle for key, needle in wanted.items() if needle in joined}  # none, most often
    for raw in lines:
        if not wanted:
            break
        present = [key for key, needle in wanted.items() if needle in raw]
        if not present:
            continue
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(rec) is not dict:
            continue
        for key in present:
            value = rec.get(key)
            if type(value) is str:
                found[key] = value
                del wanted[key]
    return found


def group_sessions(
    files: Iterable[Path], fmt: str = "auto", known: Mapping[str, str] | None = None
) -> list[SessionFiles]:
    """Group transcript files into sessions: Claude subagent files join their trunk.

    `known` maps paths to formats already established (a watermark store): those are not sniffed.
    """
    trunks: dict[Path, SessionFiles] = {}
    by_id: dict[str, SessionFiles] = {}
    flat_agents: list[Path] = []
    nested: list[tuple[Path, Path]] = []
    pi: list[SessionFiles] = []
    for path in files:
        if fmt != "auto":
            kind = fmt
        elif path.name.startswith("agent-") or path.parent.name == "subagents":
            kind = "claude"  # only Claude Code writes subagent files; no need to open them
        else:
            kind = (known and known.get(display_path(path))) or sniff_format(path) or "claude"
        if kind == NOT_A_TRANSCRIPT:
            continue  # an index or a prompt history kept beside the transcripts
        if kind in ("pi", "codex"):
            pi.append(SessionFiles(kind, path))
        elif path.parent.name == "tool-results":
            continue  # a tool result Claude Code spilled beside the transcript, not a transcript
        elif path.parent.name == "subagents":
            if path.name.startswith("agent-"):
                nested.append((path, _trunk_of(path.parent.parent)))
            # other files under subagents/ are not transcripts
        elif len(path.parts) > 4 and path.parts[-3] == "workflows" and path.parts[-4] == "subagents":
            # <sid>/subagents/workflows/<run>/agent-*.jsonl: a workflow's agents belong to <sid>;
            # the run's journal.jsonl is the workflow's own log, not a transcript
            if path.name.startswith("agent-"):
                nested.append((path, _trunk_of(path.parents[3])))
        elif path.parent.parent.name == "subagents" or "workflows" in path.parts[-4:-1]:
            continue
        elif path.name.startswith("agent-"):
            flat_agents.append(path)
        else:
            unit = SessionFiles("claude", path)
            trunks[path] = unit
            by_id.setdefault(path.stem, unit)
    orphans: dict[str, SessionFiles] = {}
    for path, trunk in nested:
        unit = trunks.get(trunk) or by_id.get(trunk.stem)
        if unit is None:
            unit = orphans.setdefault(trunk.stem, SessionFiles("claude", None))
        unit.subagents.append(path)
    for path in flat_agents:
        # Older layout: agent-<id>.jsonl beside the session files; the records name the session.
        sid = first_field(path, "sessionId") or path.stem
        unit = trunks.get(path.with_name(f"{sid}.jsonl")) or by_id.get(sid)
        if unit is None:
            unit = orphans.setdefault(sid, SessionFiles("claude", None))
        unit.subagents.append(path)
    return list(trunks.values()) + list(orphans.values()) + pi


def _trunk_of(folder: Path) -> Path:
    """The trunk file beside a session's folder (`<sid>/` -> `<sid>.jsonl`), whatever dots the name holds."""
    return folder.with_name(folder.name + ".jsonl")


def named_folders(root: Path, names: frozenset[str], prefixes: tuple[str, ...]) -> list[Path]:
    """The folders of `root` named one of `names` or starting with one of `prefixes` (a slug is
    lossy: a folder inside the project shares its slug's start, so may a sibling; the records' cwd
    decides)."""
    try:
        with os.scandir(root) as entries:
            return sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)
                          and (e.name in names or e.name.startswith(prefixes)))
    except OSError:
        return []


def discover(
    repo: Path | None = None,
    dirs: Iterable[Path] = (),
    *,
    fmt: str = "auto",
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    known: Mapping[str, str] | None = None,
    scope=None,
) -> list[SessionFiles]:
    """Sessions for `repo` (from the default roots) and from extra `dirs`; all history if neither.

    For a repository: the sessions recorded in it, in a folder inside it or in another checkout of it
    (core/transcripts/scope.py), from the folders Claude Code and Pi name after those places and from
    every Codex rollout. With `scope` (a mining pass's), those are returned as found, for the caller to
    sort by project and count the other projects' (scope.split_by_scope); without it, only the
    repository's own. Files under `dirs` are returned as found either way."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME", "~")).expanduser() if home is None else home
    dirs = [Path(d) for d in dirs]
    found: list[Path] = []
    sort = False
    if repo is not None:
        if scope is None:
            from core.transcripts.scope import workspace_scope

            scope, sort = workspace_scope(repo_path(repo)), True
        if scope.other_projects:
            found = _all_history(fmt, home, env)
        else:
            claude_prefixes = tuple(f + "-" for f in scope.claude_folders)
            pi_prefixes = tuple(f[:-2] + "-" for f in scope.pi_folders)
            if fmt in ("auto", "claude"):
                for root in claude_roots(home, env):
                    for folder in named_folders(root, scope.claude_folders, claude_prefixes):
                        found += _jsonl_files(folder)
            if fmt in ("auto", "pi"):
                for folder in named_folders(pi_root(home, env), scope.pi_folders, pi_prefixes):
                    found += _jsonl_files(folder)
            if fmt in ("auto", "codex"):
                for root in codex_roots(home, env):
                    found += [p for p in _jsonl_files(root) if p.name.startswith("rollout-")]
    elif not dirs:
        found = _all_history(fmt, home, env)
    from_dirs: list[Path] = []
    for folder in dirs:
        # Resolve the folder once (not every file in it) so the same history reached two ways
        # (a symlinked root, a relative and an absolute path) is read once.
        from_dirs += _jsonl_files(folder.resolve() if folder.exists() else folder)
    seen: set[str] = set()
    groups: list[list[Path]] = [[], []]
    for group, paths in ((0, found), (1, from_dirs)):
        for path in paths:
            key = os.path.abspath(path)
            if key not in seen:
                seen.add(key)
                groups[group].append(path)
    units = group_sessions(groups[0], fmt, known)
    if sort:
        from core.transcripts.scope import split_by_scope

        units = split_by_scope(units, scope).kept
    return units + group_sessions(groups[1], fmt, known)


def _all_history(fmt: str, home: Path, env: Mapping[str, str]) -> list[Path]:
    """Every transcript in the default locations."""
    files: list[Path] = []
    if fmt in ("auto", "claude"):
        for root in claude_roots(home, env):
            files += _jsonl_files(root)
    if fmt in ("auto", "pi"):
        files += _jsonl_files(pi_root(home, env))
    if fmt in ("auto", "codex"):
        for root in codex_roots(home, env):
            files += [p for p in _jsonl_files(root) if p.name.startswith("rollout-")]
    return files
