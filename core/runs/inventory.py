"""Inventory: every session's identity from its header, and the projects they belong to.

Only headers (and each file's tail, for the last instant) are read: Claude `cwd`/`sessionId`/
`timestamp`, the Pi session header (`id`, `cwd`, `timestamp`, `version`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import orjson

from core.runs.model import ProjectEntry, ProjectsPage, SessionIdentity
from core.transcripts.discover import SessionFiles, codex_meta, discover, first_field
from core.transcripts.display import display_path, display_stem
from core.transcripts.normalize import clean_id
from core.transcripts.pi import CURRENT_VERSION as PI_VERSION

_TAIL = 256 * 1024
_STAMP = re.compile(rb'"timestamp"\s*:\s*"([^"]{10,40})"')


@dataclass
class Sources:
    """Where history is read from: the default roots under `home` (Claude, Pi), plus `dirs`."""

    home: Path | None = None
    env: Mapping[str, str] | None = None
    dirs: list[Path] = field(default_factory=list)

    def units(self) -> list[SessionFiles]:
        env = os.environ if self.env is None else self.env
        home = Path(env.get("HOME", "~")).expanduser() if self.home is None else self.home
        return discover(None, self.dirs, home=home, env=env)  # no dirs: the default roots


def parse_instant(text) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _last_instant(path: Path) -> datetime | None:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _TAIL))
            tail = fh.read()
    except OSError:
        return None
    stamps = [parse_instant(m.decode("utf-8", "replace")) for m in _STAMP.findall(tail)]
    stamps = [s for s in stamps if s is not None]
    return max(stamps) if stamps else None


def _pi_header(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            for _ in range(5):
                raw = fh.readline(1024 * 1024)
                if not raw:
                    return {}
                try:
                    rec = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                return rec if isinstance(rec, dict) and rec.get("type") == "session" else {}
    except OSError:
        return {}
    return {}


def identify(unit: SessionFiles) -> SessionIdentity | None:
    """The identity of one session, or None when it names no project (no `cwd` anywhere)."""
    paths = unit.paths
    if not paths:
        return None
    ends = [e for e in (_last_instant(p) for p in paths) if e is not None]
    if unit.format == "pi":
        head = _pi_header(unit.trunk)
        project = head.get("cwd")
        version = head.get("version", 1 if head else None)
        supported = bool(head) and type(version) is int and version <= PI_VERSION
        sid = head.get("id") if isinstance(head.get("id"), str) else display_stem(unit.trunk)
        started = parse_instant(head.get("timestamp"))
        version_text = str(version) if version is not None else None
    elif unit.format == "codex":
        meta = codex_meta(unit.trunk)
        project = meta.get("cwd")
        sid = next((v for v in (meta.get("id"), meta.get("session_id")) if isinstance(v, str) and v), display_stem(unit.trunk))
        started = parse_instant(meta.get("timestamp"))
        version_text = meta.get("cli_version") if isinstance(meta.get("cli_version"), str) else None
        supported = bool(meta)
    else:
        first = unit.trunk or paths[0]
        project = first_field(first, "cwd")
        sid = (display_stem(unit.trunk) if unit.trunk else first_field(first, "sessionId")) or display_stem(first)
        started = parse_instant(first_field(first, "timestamp"))
        version_text = first_field(first, "version")
        supported = project is not None
    if not isinstance(project, str) or not project:
        return None
    # read straight from the records: redacted like everything else that leaves a reader
    return SessionIdentity(
        id=clean_id(sid, True), format=unit.format, project=os.path.normpath(clean_id(project, True)),
        started_at=started, ended_at=max(ends) if ends else started, files=[display_path(p) for p in paths],
        bytes=unit.size, version=clean_id(version_text, True), supported=supported,
    )


def inventory(sources: Sources | None = None) -> list[SessionIdentity]:
    """Every session with a project, in physical source order: by first instant, then id."""
    found = [i for i in (identify(u) for u in (sources or Sources()).units()) if i is not None]
    return sorted(found, key=order_key)


def order_key(s: SessionIdentity):
    start = s.started_at or datetime.min.replace(tzinfo=timezone.utc)
    return (s.started_at is None, start, s.id, s.files)


def list_projects(sources: Sources | None = None, *, offset: int = 0, limit: int = 50) -> ProjectsPage:
    """Projects (full roots) named by session headers, most recently active first, a page at a time."""
    by_project: dict[str, list[SessionIdentity]] = {}
    for s in inventory(sources):
        by_project.setdefault(s.project, []).append(s)
    entries = []
    for project, sessions in by_project.items():
        stamps = [s.ended_at for s in sessions if s.ended_at]
        entries.append(ProjectEntry(project=project, sessions=len(sessions), latest=max(stamps) if stamps else None))
    floor = datetime.min.replace(tzinfo=timezone.utc)
    entries.sort(key=lambda e: (-(e.latest or floor).timestamp() if e.latest else float("inf"), e.project))
    offset, limit = max(0, offset), max(1, min(limit, 500))
    page = entries[offset:offset + limit]
    nxt = offset + limit if offset + limit < len(entries) else None
    return ProjectsPage(projects=page, total=len(entries), offset=offset, next_offset=nxt)
