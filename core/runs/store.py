"""Run directories and `run.json`: finding a run by its exact Run ID, reading and saving its record."""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timezone
from pathlib import Path

import orjson
from pydantic import ValidationError

from core.runs.errors import BrokenRun, NotFound
from core.runs.files import ensure_dir, write_bytes
from core.runs.model import Event, RunRecord

RUN_FILE = "run.json"
RUN_ID = re.compile(r"[0-9a-f]{12}")
RUN_DIR = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,47})_(?P<id>[0-9a-f]{12})")


def now() -> datetime:
    return datetime.now(timezone.utc)


def new_run_id() -> str:
    return secrets.token_hex(6)


def run_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:48].rstrip("-._")
    return name or "run"


def run_dirs(workdir: Path) -> list[tuple[Path, str]]:
    """(directory, run id) for every run directory in the workdir, sorted by name."""
    out = []
    if not Path(workdir).is_dir():
        return out
    for entry in sorted(Path(workdir).iterdir()):
        m = RUN_DIR.fullmatch(entry.name)
        if m and entry.is_dir() and not entry.is_symlink():
            out.append((entry, m["id"]))
    return out


def find_dir(workdir: Path, run_id: str) -> Path:
    if not RUN_ID.fullmatch(run_id or ""):
        raise NotFound(f"{run_id!r} is not a Run ID (12 lowercase hex digits)", run_id=run_id)
    found = [d for d, rid in run_dirs(workdir) if rid == run_id]
    if not found:
        raise NotFound(f"no run {run_id} in {workdir}", run_id=run_id)
    if len(found) > 1:
        raise BrokenRun(f"several directories carry Run ID {run_id}: {', '.join(str(d) for d in found)}",
                        run_id=run_id)
    return found[0]


def read_run(run_dir: Path, run_id: str) -> RunRecord:
    path = run_dir / RUN_FILE
    if not path.is_file():
        raise BrokenRun(f"run directory {run_dir} (Run ID {run_id}) has no {RUN_FILE}", run_id=run_id,
                        run_dir=str(run_dir))
    try:
        record = RunRecord.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError) as exc:
        raise BrokenRun(f"{path} (Run ID {run_id}) cannot be read: {str(exc).splitlines()[0]}",
                        run_id=run_id, run_dir=str(run_dir)) from None
    if record.run_id != run_id:
        raise BrokenRun(f"{path} names Run ID {record.run_id}, but its directory says {run_id}",
                        run_id=run_id, run_dir=str(run_dir))
    return record


def load(workdir: Path, run_id: str) -> tuple[Path, RunRecord]:
    run_dir = find_dir(workdir, run_id)
    return run_dir, read_run(run_dir, run_id)


def save(workdir: Path, record: RunRecord) -> None:
    record.updated_at = now()
    ensure_dir(workdir, record.dir)
    data = orjson.dumps(record.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"
    write_bytes(workdir, f"{record.dir}/{RUN_FILE}", data)


def event(record: RunRecord, kind: str, message: str, *, error: bool = False) -> Event:
    ev = Event(at=now(), kind=kind, message=message)
    record.events.append(ev)
    if error:
        record.last_error = ev
    return ev


def all_runs(workdir: Path) -> tuple[list[tuple[Path, RunRecord]], list[dict]]:
    runs, broken = [], []
    for run_dir, rid in run_dirs(workdir):
        try:
            runs.append((run_dir, read_run(run_dir, rid)))
        except BrokenRun as exc:
            broken.append({"run_id": rid, "run_dir": str(run_dir), "message": str(exc)})
    return runs, broken
