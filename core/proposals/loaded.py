"""Which stories have loaded before: a story refused now that loaded in an earlier proposer run is a
story being edited (a person saved it half-way), not one kitsoki always skips.

While such a story does not load, the inventory misses its intents, so a recipe it models would map
as a gap (and draft a new story beside it). The proposer raises nothing new until it loads again.
A story that never loaded (a copy missing its scripts, say) is skipped as kitsoki skips it.

The file (`.artifacts/mining/loaded-stories.json`) is not trusted: one that is unreadable, too big
or of the wrong shape counts as empty; the worst a planted one does is make proposals wait for a
story to load, and the proposer says which.
"""

from __future__ import annotations

import logging
from pathlib import Path

import orjson

from core import statefs
from core.kitsoki.model import RefusedStory, Workspace

log = logging.getLogger("kitsoki_miner.proposals")

LOADED_FILE = Path(".artifacts") / "mining" / "loaded-stories.json"
MAX_BYTES = 1 << 20


def _relative(workspace: Path, app: Path) -> str:
    try:
        return Path(app).resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(app)


def _read(workspace: Path) -> set[str]:
    try:
        value = orjson.loads(statefs.read_bytes(workspace / LOADED_FILE, MAX_BYTES, what=LOADED_FILE.name))
    except FileNotFoundError:
        return set()
    except (OSError, orjson.JSONDecodeError) as exc:
        log.info("%s not used: %s", LOADED_FILE, exc)
        return set()
    if isinstance(value, dict) and isinstance(value.get("loaded"), list):
        return {rel for rel in value["loaded"] if isinstance(rel, str)}
    return set()


def stories_being_edited(workspace: Path, model: Workspace) -> list[RefusedStory]:
    """The refused stories that loaded before; remembers the stories that load now."""
    workspace = Path(workspace)
    known = _read(workspace)
    now = {_relative(workspace, story.path) for story in model.stories}
    editing = [refusal for refusal in model.refused if _relative(workspace, refusal.app) in known]
    # a story whose app.yaml is gone is forgotten; a refused one is remembered until it loads again
    keep = {rel for rel in known if (workspace / rel).exists()} | now
    if keep != known:
        try:
            statefs.write_atomic(workspace / LOADED_FILE, orjson.dumps({"loaded": sorted(keep)}),
                                 what=LOADED_FILE.name)
        except OSError as exc:  # only a later run may not recognise a story being edited
            log.warning("could not remember the stories that load in %s: %s", LOADED_FILE, exc)
    return editing
