"""The operator-question lifecycle: each proposal is asked about once, and the question is
withdrawn when the proposal is decided or leaves the inbox.

A question ("Capture as structure?" with the proposal's title) goes to the editors when the
proposer raises a proposal. Re-drafting the same proposal (its file changed) does not ask again:
the person already has that question, or already answered it. Any verdict settles it (a refine
too: the person chose to edit the draft). A proposal that leaves the inbox some other way (a
verdict from the CLI or another editor, a withdrawal) takes its waiting question with it.

Across sessions, `AskedStore` remembers which proposals were ever asked about in an editor
(`.artifacts/mining/asked.json`), so a proposal raised while no editor was listening (by
`kitsoki-miner propose`, or `demo --pending`) is asked once when an editor next serves the
workspace, and one already asked is not asked again after a restart.

Thread-safe: the sidecar calls it from the proposer's thread, the watcher and verdict threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from pathlib import Path

import orjson

from core import statefs
from core.ids import is_recipe_id

log = logging.getLogger(__name__)

ASKED_FILE = Path(".artifacts") / "mining" / "asked.json"
MAX_ASKED_BYTES = 4 << 20


class QuestionBook:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked: set[str] = set()
        """Every question ever sent in this session (never asked again)."""
        self._waiting: set[str] = set()
        """Sent and not yet settled or withdrawn."""

    def ask(self, ids: Iterable[str]) -> list[str]:
        """The ids to ask now: those never asked before, in the order given."""
        out = []
        with self._lock:
            for question_id in ids:
                if question_id in self._asked:
                    continue
                self._asked.add(question_id)
                self._waiting.add(question_id)
                out.append(question_id)
        return out

    def known(self, ids: Iterable[str]) -> None:
        """Proposals that were already open when this session began: they were asked about when
        they were raised, so re-drafting them does not ask again."""
        with self._lock:
            self._asked.update(ids)

    def settle(self, question_id: str) -> bool:
        """A verdict landed. True when the question was still waiting (the editors should drop it)."""
        with self._lock:
            self._asked.add(question_id)  # a verdict sent before the question arrived: never ask it
            if question_id in self._waiting:
                self._waiting.discard(question_id)
                return True
            return False

    def sweep(self, open_ids: Iterable[str]) -> list[str]:
        """The waiting questions whose proposal is no longer open: withdraw them."""
        still = set(open_ids)
        with self._lock:
            gone = sorted(self._waiting - still)
            self._waiting -= set(gone)
        return gone

    def waiting(self) -> list[str]:
        with self._lock:
            return sorted(self._waiting)


class AskedStore:
    """The proposals ever asked about in an editor, kept in `.artifacts/mining/asked.json`. The file
    is not trusted: one that is unreadable, too big or not a list of recipe ids counts as empty (the
    worst a planted one does is ask a question again, or not)."""

    def __init__(self, workspace: Path) -> None:
        self.path = Path(workspace) / ASKED_FILE
        self._lock = threading.Lock()
        self._ids: set[str] | None = None

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._load())

    def _load(self) -> set[str]:
        if self._ids is None:
            self._ids = set()
            try:
                value = orjson.loads(statefs.read_bytes(self.path, MAX_ASKED_BYTES, what="asked.json"))
                if isinstance(value, dict) and isinstance(value.get("asked"), list):
                    self._ids = {rid for rid in value["asked"] if is_recipe_id(rid)}
            except FileNotFoundError:
                pass
            except (OSError, orjson.JSONDecodeError) as exc:
                log.info("%s not used: %s", self.path, exc)
        return self._ids

    def add(self, ids: Iterable[str]) -> None:
        with self._lock:
            known = self._load()
            new = {rid for rid in ids if is_recipe_id(rid)} - known
            if not new:
                return
            known |= new
            try:
                statefs.write_atomic(self.path, orjson.dumps({"asked": sorted(known)}), what="asked.json")
            except OSError as exc:  # the question was asked; only a later session may ask it again
                log.warning("could not remember the questions asked in %s: %s", self.path, exc)
