"""One served workspace: the miner, the proposer after every pass, the inbox kept warm, verdicts.

This is what the language server hosts per workspace folder, with no protocol in it: the server
subscribes to `SidecarEvents` and turns them into notifications, and turns requests into calls
here. It owns no domain rules either; it sequences core calls:

- on start: roll back an interrupted accept (`recover`), read the inbox, start the miner when
  `mining.enabled` (or when the caller says so), watch `.kitsoki.yaml`, the stories and the flows;
- after each pass: run the proposer on the pass's recipes, then refresh the inbox;
- when a kitsoki file changes: refresh the inbox (targets may now be stale) and, when a proposal
  went stale, run the proposer so it is re-drafted against the new bytes or withdrawn;
- a verdict goes through core.proposals.decide (accept through the apply gate); taking one back
  (undo an accept, restore a rejection) through core.proposals.reversal, and a saved file that no
  longer holds a kept accept is that accept undone (noticed on every kitsoki file change);
- a workspace that does not load (a story edited into invalid YAML) is a list of problems, each
  with file, line and column, for the editors to show where it is and why proposals wait;
- a staged draft (`.artifacts/...`) is never a workspace: it is refused (`not_a_workspace`).

The inbox is cached (cards by file) and rebuilt only on those events, so editors can ask for
lenses on every keystroke.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from core.apply import recover
from core.apply.gates import GatePreview
from core.apply.scoped_gate import gate_preview
from core.kitsoki.config import CONFIG_FILE, LOCAL_CONFIG_FILE, ConfigError, KitsokiConfig, load_config
from core.kitsoki.yamlread import ConfigIssue
from core.kitsoki.story import MATERIALIZED_DIR, load_workspace
from core.kitsoki.workspace import DevStorySource, dev_story_source, workspace_sources
from core.locks import WorkspaceBusy
from core.mining.passes import PassReport
from core.mining.recipes import Recipe
from core.mining.service import MinerService, MinerStatus, trace_path
from core.proposals.decide import VERDICT_LOCK_TIMEOUT, Decision, decide
from core.attention import attention
from core.authn import KeyUnavailable
from core.proposals.inbox import history, inbox
from core.proposals.model import Proposal
from core.proposals.proposer import ProposerReport, run_proposer
from core.proposals.reversal import Decided, Reversal, decided, notice_dropped, restore_rejected, undo_accept
from core.proposals.settings import SettingsError, configured_drafter, gate_settings
from core.proposals.shown import show_refined
from core.proposals.staging import load_proposal
from core.questions import AskedStore, QuestionBook
from core.quiet import long_work
from core.trace import TraceCorrupt, Trace, TraceBusyError

log = logging.getLogger("kitsoki_miner.sidecar")

Control = Literal["pause", "resume", "now", "scope"]


@dataclass
class SidecarEvents:
    """Callbacks, called on worker threads; each is optional."""

    pass_started: Callable[[Path], None] | None = None
    pass_progress: Callable[[Path, int, int], None] | None = None
    pass_ran: Callable[[Path, PassReport, ProposerReport | None], None] | None = None
    proposals_changed: Callable[[Path, list[Proposal], set[str]], None] | None = None
    """(workspace, every open card, the workspace-relative files whose cards changed)."""
    decided: Callable[[Path, Decision], None] | None = None
    raised: Callable[[Path, list[Proposal]], None] | None = None
    """Proposals raised by a proposer run and never asked about before: the question cards to ask."""
    questions_withdrawn: Callable[[Path, list[str], str], None] | None = None
    """(workspace, question ids, why): questions that no longer wait (decided, or no longer open)."""
    taken_back: Callable[[Path, Reversal], None] | None = None
    """A verdict taken back (an undo, a restore, or a saved file that dropped a kept accept)."""
    problems_changed: Callable[[Path, set[str]], None] | None = None
    """(workspace, files): the load problems of these files changed (to publish or clear)."""


STATE_DIR = ".artifacts"


def not_a_workspace(root: Path) -> str | None:
    """Why `root` cannot be served, or None. A staged draft (`.artifacts/mining/<id>/` holds a
    `.kitsoki.yaml` of its own) is never a workspace: mining there would raise proposals about a
    draft, and an accept there would change another proposal's draft, not the live file."""
    parts = Path(root).absolute().parts
    if STATE_DIR in parts:
        top = Path(*parts[:parts.index(STATE_DIR)])
        return (f"{root} is inside {top / STATE_DIR} (kitsoki-miner's own state, where drafts are staged), "
                f"not a workspace; open {top} instead")
    return None


class MineStatus(BaseModel):
    workspace: str
    enabled: bool
    paused: bool
    running: bool
    last_pass: PassReport | None = None
    last_error: str | None = None
    transcript_dirs: list[str] = []
    mined_through: int = 0
    pending: int = 0
    proposer_error: str | None = None
    dev_story: DevStorySource | None = None
    """Where the root instance's dev-story comes from: KITSOKI_REPO, a kitsoki checkout, or the
    library we carry (with the kitsoki commit it was read from)."""
    note: str | None = None
    """What a person should know about mining here, e.g. where a pass that read 0 sessions looked."""
    problems: list[ConfigIssue] = []
    """Why the workspace does not load (file, line, column, message): proposals wait until it does."""
    outcomes: str | None = None
    """Whether the accepted changes stuck (core.proposals.outcomes.status_line), after the last pass."""
    attention: list[str] = []
    """What a person must read first (core.attention): a signing key that cannot be used, an accept
    that is not settled. Each line says what, where, and how to fix it."""


@dataclass
class _Cards:
    all: list[Proposal] = field(default_factory=list)
    by_id: dict[str, Proposal] = field(default_factory=dict)
    by_path: dict[str, list[Proposal]] = field(default_factory=dict)


class WorkspaceSidecar:
    def __init__(self, workspace: Path, *, events: SidecarEvents | None = None, mining: bool | None = None,
                 transcript_dirs: Iterable[Path] = (), watch: bool = True, home: Path | None = None,
                 env: dict[str, str] | None = None, workers: int | None = None) -> None:
        self.workspace = Path(workspace).absolute()
        refused = not_a_workspace(self.workspace)
        if refused:
            raise ValueError(refused)
        self.events = events or SidecarEvents()
        self.mining_override = mining
        self.extra_dirs = [Path(d) for d in transcript_dirs]
        self.watch = watch
        self.home, self.env, self.workers = home, env, workers
        self.config: KitsokiConfig | None = None
        self.config_error: str | None = None
        self.proposer_error: str | None = None
        self.miner: MinerService | None = None
        self._cards = _Cards()
        self.questions = QuestionBook()
        self.asked = AskedStore(self.workspace)
        self.problems: list[ConfigIssue] = []
        """The workspace's load problems, from the last config read or proposer run."""
        self._config_problems: list[ConfigIssue] = []
        self._proposer_problems: list[ConfigIssue] = []
        self._gates: dict[tuple[str, int, int], GatePreview] = {}
        self.tree_version = 0
        """Counts kitsoki file changes: a gate preview depends on flows the inbox does not track."""
        self.generation = 0
        """Counts inbox refreshes that changed something: answers built from the cards keep until it moves."""
        self._cards_lock = threading.Lock()
        self._propose_lock = threading.Lock()
        self._stop = threading.Event()
        self._life = threading.Lock()
        self._watcher: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        # Start and stop exclude each other: the server lists a sidecar before it has started, so a
        # shutdown can arrive mid-start (it then waits, and stops what the start made).
        with self._life:
            if not self._stop.is_set():
                self._start()

    def _start(self) -> None:
        try:
            recovered = recover(self.workspace, Trace(trace_path(self.workspace)))
            for record in recovered:
                log.warning("rolled back an interrupted accept of %s: %s", record.get("recipe_id"), record)
        except (WorkspaceBusy, TraceBusyError, OSError) as exc:  # OSError: a state folder that is a link...
            log.warning("could not check for interrupted accepts: %s", exc)
        self._load_config()
        self._set_problems()
        self.refresh()
        # Proposals never asked about in an editor (raised by `kitsoki-miner propose`, or by a server
        # whose editor closed first) are asked once now; the others were asked when raised.
        asked = self.asked.ids()
        fresh = [c for c in self._cards.all if c.status == "pending" and c.recipe_id not in asked]
        self.questions.known(c.recipe_id for c in self._cards.all if c.status != "pending" or c.recipe_id in asked)
        self._ask(fresh)
        mining = self.config.mining if self.config else None
        enabled = self.mining_override if self.mining_override is not None else bool(mining and mining.enabled)
        if mining is not None:
            dirs = [Path(d).expanduser() for d in mining.transcript_dirs]
            dirs = [d if d.is_absolute() else self.workspace / d for d in dirs] + self.extra_dirs
            self.miner = MinerService(
                self.workspace, enabled=enabled, cadence_seconds=mining.cadence_seconds,
                first_pass_sample=mining.first_pass_sample, priority_threshold=mining.priority_threshold,
                transcript_dirs=dirs, mined_through=mining.mined_through, home=self.home, env=self.env,
                on_pass=self._after_pass, on_progress=self._progress, on_start=self._started, workers=self.workers,
                other_projects=mining.other_projects, project_paths=mining.project_paths)
            self.miner.start(watch=self.watch and enabled, run_first_pass=enabled)
        if self.watch:
            self._watcher = threading.Thread(target=self._watch_kitsoki, name="kitsoki-watch", daemon=True)
            self._watcher.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        with self._life:
            if self.miner is not None:
                self.miner.stop(timeout)
            if self._watcher is not None:
                self._watcher.join(timeout)

    def _load_config(self) -> None:
        try:
            self.config = load_config(self.workspace)
            self.config_error = None
            self._config_problems = []
        except ConfigError as exc:
            self.config, self.config_error = None, str(exc)
            self._config_problems = list(exc.issues)

    # -- status and control ------------------------------------------------------------------------

    def status(self) -> MineStatus:
        pending = len(self._cards.all)
        source = dev_story_source(self.workspace, workspace_sources(self.workspace, self.config, self.env, self.home))
        outcomes = self._outcomes_line()
        notice = attention(self.workspace)
        if self.miner is None:
            return MineStatus(workspace=str(self.workspace), enabled=False, paused=False, running=False,
                              last_error=self.config_error, pending=pending, proposer_error=self.proposer_error,
                              dev_story=source, problems=self.problems, outcomes=outcomes, attention=notice)
        miner: MinerStatus = self.miner.status()
        return MineStatus(workspace=str(self.workspace), pending=pending, proposer_error=self.proposer_error,
                          dev_story=source, note=mining_note(miner), problems=self.problems, outcomes=outcomes,
                          attention=notice,
                          **miner.model_dump(exclude={"slug"}))

    def _outcomes_line(self) -> str | None:
        """What the last follow-up of the accepted changes found (read from its signed record)."""
        from core.proposals.outcomes import OutcomesError, read_outcomes, status_line

        try:
            data = read_outcomes(self.workspace)
        except (OutcomesError, OSError) as exc:
            return f"outcomes unreadable: {exc}"
        return status_line(data) if data.outcomes else None

    def follow_outcomes(self) -> None:
        """After a pass: follow each decided proposal (uses, free-form asks); a kept change unused for
        the window is offered for revert as a proposal."""
        from core.proposals.outcomes import follow

        try:
            follow(self.workspace)
        except Exception as exc:  # noqa: BLE001 - following up never stops a pass; the log says why
            log.warning("outcomes not followed: %s", exc)

    def control(self, action: Control, dirs: list[Path] | None = None) -> MineStatus:
        if self.miner is None:
            raise ValueError(f"mining is not available in {self.workspace}: "
                             f"{self.config_error or 'no mining: block could be read'}")
        if action == "pause":
            self.miner.pause()
        elif action == "resume":
            self.miner.enabled = True
            self.miner.resume()
        elif action == "now":
            self.miner.enabled = True
            self.miner.run_now(timeout=0)  # a person asked: no cadence wait, and do not block the caller
        elif action == "scope":
            if not dirs:
                raise ValueError("scope needs at least one transcript folder (dirs)")
            missing = [str(d) for d in dirs if not Path(d).is_dir()]
            if missing:
                raise ValueError(f"not a folder: {', '.join(missing)}")
            self.miner.set_scope([Path(d) for d in dirs])
        return self.status()

    # -- the inbox -----------------------------------------------------------------------------------

    def cards(self, path: str | None = None) -> list[Proposal]:
        cards = self._cards
        return list(cards.all) if path is None else list(cards.by_path.get(path, ()))

    def card(self, recipe_id: str) -> Proposal | None:
        cards = self._cards
        found = cards.by_id.get(recipe_id)
        if found is None and len(recipe_id) >= 4:
            matches = [p for rid, p in cards.by_id.items() if rid.startswith(recipe_id)]
            found = matches[0] if len(matches) == 1 else None
        return found

    def paths(self) -> list[str]:
        return list(self._cards.by_path)

    def refresh(self) -> set[str]:
        """Re-read the inbox; notify the files whose cards changed. Returns those files."""
        with self._cards_lock:
            try:
                fresh = inbox(self.workspace)
            except TraceCorrupt as exc:  # kitsoki refuses this trace too: no card can be trusted; say why
                self.proposer_error = str(exc)
                log.warning("the trace is refused: %s", exc)
                fresh = []
            except (KeyUnavailable, OSError) as exc:  # said by the status's attention lines, never a crash
                log.warning("no proposal can be shown: %s", exc)
                fresh = []
            old = self._cards
            by_path: dict[str, list[Proposal]] = defaultdict(list)
            for card in fresh:
                for change in card.files:
                    by_path[change.path].append(card)
            new = _Cards(all=fresh, by_id={c.recipe_id: c for c in fresh}, by_path=dict(by_path))

            def signature(cards: list[Proposal]) -> list[tuple]:
                return [(c.recipe_id, c.status, c.failure, tuple(f.after_sha256 for f in c.files)) for c in cards]

            changed = {path for path in set(old.by_path) | set(new.by_path)
                       if signature(old.by_path.get(path, [])) != signature(new.by_path.get(path, []))}
            if signature(old.all) != signature(new.all):
                changed.add("")  # something changed, even if no file did (a suggestion card)
            self._cards = new
            if changed:
                self.generation += 1
        if changed and self.events.proposals_changed is not None:
            self.events.proposals_changed(self.workspace, fresh, changed - {""})
        self._withdraw(self.questions.sweep(new.by_id), "its proposal is no longer open")
        return changed - {""}

    def show_refined(self, recipe_id: str, seen: Mapping[str, bytes] | None = None) -> None:
        """A refined draft the person has in front of them (saved in the editor, or a card they asked
        to see): validated and signed to be shown, so the card shows its diff and an accept may apply
        it (core.proposals.shown; `seen`: the draft files' bytes the editor shows, which must be all
        of the change). Nothing for a proposal that is not being refined."""
        if history(Trace(trace_path(self.workspace))).get(recipe_id) != "refining":
            return
        proposal = load_proposal(self.workspace, recipe_id)
        if proposal is not None:
            show_refined(self.workspace, proposal, seen=seen)
            self.refresh()

    def propose(self, recipes: list[Recipe] | None = None) -> ProposerReport | None:
        """Run the proposer (one at a time); refresh and announce what it raised."""
        with self._propose_lock:
            try:
                drafter = configured_drafter(self.workspace, self.config) if self.config else None
                with long_work():  # a no-op outside the server (core.quiet)
                    report = run_proposer(self.workspace, recipes, drafter=drafter)
                self.proposer_error = None
                self._set_problems(report.problems)  # stories refused alone: their reasons, on their lines
            except Exception as exc:  # noqa: BLE001 - a workspace that does not load is a status, not a crash
                self.proposer_error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)
                log.warning("proposer did not run: %s", self.proposer_error)
                self._set_problems(list(exc.issues) if isinstance(exc, ConfigError) else [])
                self.refresh()
                return None
        self.refresh()
        self._ask([c for rid in report.raised if (c := self.card(rid)) is not None])
        return report

    def _ask(self, cards: list[Proposal]) -> None:
        """Send the question cards of these proposals, each once (and remember it across sessions)."""
        asked = [c for rid in self.questions.ask(c.recipe_id for c in cards) if (c := self.card(rid)) is not None]
        if asked:
            self.asked.add(c.recipe_id for c in asked)
        if asked and self.events.raised is not None:
            self.events.raised(self.workspace, asked)

    def _set_problems(self, proposer: list[ConfigIssue] | None = None) -> None:
        """The load problems now known (the config's, and the last proposer run's unless `proposer`
        replaces them); the files whose problems changed are announced, so editors publish or
        clear them."""
        if proposer is not None:
            self._proposer_problems = proposer
        merged = list({(i.file, i.line, i.column, i.message): i
                       for i in [*self._config_problems, *self._proposer_problems]}.values())
        old, self.problems = self.problems, merged
        if [(i.file, i.line, i.column, i.message) for i in old] == [(i.file, i.line, i.column, i.message)
                                                                     for i in merged]:
            return
        with self._cards_lock:
            self.generation += 1  # the lenses of stale proposals say why they wait
        files = {self._rel(i.file) for i in [*old, *merged]}
        if self.events.problems_changed is not None:
            self.events.problems_changed(self.workspace, files)
        # a stale card says why it waits (the first problem): its files' cards changed with the problems
        stale = {change.path for card in self._cards.all if card.status == "stale" for change in card.files}
        if stale and self.events.proposals_changed is not None:
            self.events.proposals_changed(self.workspace, list(self._cards.all), stale)

    def _rel(self, file: str) -> str:
        path = Path(file)
        try:
            return (path if path.is_absolute() else self.workspace / path).relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)

    def problems_for(self, rel: str) -> list[ConfigIssue]:
        return [issue for issue in self.problems if self._rel(issue.file) == rel]

    def decide(self, recipe_id: str, verdict: str, *, unsaved: Iterable[str] = (),
               hook: Callable[[str], None] | None = None) -> Decision:
        # A proposer run of this very sidecar may be staging (it holds the workspace lock for
        # moments): wait for it rather than answer "busy" for ourselves.
        kwargs = ({"unsaved": list(unsaved), "hook": hook, "lock_timeout": VERDICT_LOCK_TIMEOUT}
                  if verdict == "accept" else {})
        try:
            decision = decide(self.workspace, recipe_id, verdict, **kwargs)
            if self.questions.settle(decision.recipe_id):
                self._withdraw([decision.recipe_id], f"answered: {decision.verdict}")
        finally:
            self.refresh()
        if self.events.decided is not None:
            self.events.decided(self.workspace, decision)
        return decision

    def gate_preview(self, recipe_id: str) -> GatePreview:
        """What accepting this proposal will run (for the confirmation asked before an accept)."""
        return planned_gate(self.workspace, recipe_id)

    def gate_preview_cached(self, recipe_id: str) -> GatePreview:
        """`gate_preview`, reused until the inbox or a kitsoki file changes (lenses ask often)."""
        key = (recipe_id, self.generation, self.tree_version)
        found = self._gates.get(key)
        if found is None:
            found = self.gate_preview(recipe_id)
            if len(self._gates) > 512:
                self._gates.clear()
            self._gates[key] = found
        return found

    def undo(self, recipe_id: str) -> Reversal:
        """Undo a kept accept: its bytes put back through the apply journal, the proposal offered again."""
        return self._took_back(undo_accept(self.workspace, recipe_id))

    def restore(self, recipe_id: str) -> Reversal:
        """Take a rejection back: the proposal is offered again."""
        return self._took_back(restore_rejected(self.workspace, recipe_id))

    def decided(self, state: str | None = None) -> list[Decided]:
        return decided(self.workspace, state=state)

    def _took_back(self, reversal: Reversal) -> Reversal:
        self.questions.settle(reversal.recipe_id)  # offered again by its lens, not asked again
        self.refresh()
        if any(card.status == "stale" for card in self._cards.all):
            self.propose()
        if self.events.taken_back is not None:
            self.events.taken_back(self.workspace, reversal)
        return reversal

    def closed_state(self, recipe_id: str) -> tuple[str | None, Proposal | None]:
        """For a proposal that left the inbox: where it stands (accepted, rejected, withdrawn) and
        its last staged card, if it is still on disk."""
        state = history(Trace(trace_path(self.workspace))).get(recipe_id)
        return state, load_proposal(self.workspace, recipe_id)

    # -- event plumbing --------------------------------------------------------------------------------

    def _withdraw(self, ids: list[str], why: str) -> None:
        if ids and self.events.questions_withdrawn is not None:
            self.events.questions_withdrawn(self.workspace, ids, why)

    def _started(self) -> None:
        if self.events.pass_started is not None:
            self.events.pass_started(self.workspace)

    def _progress(self, done: int, total: int) -> None:
        if self.events.pass_progress is not None:
            self.events.pass_progress(self.workspace, done, total)

    def _after_pass(self, report: PassReport, recipes: list[Recipe]) -> None:
        with long_work():
            self.follow_outcomes()
            proposer = self.propose(recipes)
        if self.events.pass_ran is not None:
            self.events.pass_ran(self.workspace, report, proposer)

    def kitsoki_files_changed(self, paths: Iterable[str] = ()) -> None:
        """A kitsoki file changed (the watcher, or an editor's didSave): re-check the inbox, and
        re-draft what went stale."""
        paths = list(paths)
        self.tree_version += 1
        if any(Path(p).name in (CONFIG_FILE, LOCAL_CONFIG_FILE) for p in paths):
            self._load_config()
            self._set_problems()
        rels = [self._rel(p) for p in paths]
        try:  # a saved file that no longer holds a kept accept: that accept was undone by hand
            dropped = notice_dropped(self.workspace, rels)
        except (WorkspaceBusy, TraceBusyError, OSError) as exc:
            log.warning("could not check for undone accepts: %s", exc)
            dropped = []
        for reversal in dropped:
            self.questions.settle(reversal.recipe_id)
        self.refresh()
        if any(card.status == "stale" for card in self._cards.all) or \
                any(self._rel(i.file) in rels for i in self.problems):
            self.propose()
        for reversal in dropped:
            if self.events.taken_back is not None:
                self.events.taken_back(self.workspace, reversal)

    def _watched(self) -> tuple[list[Path], list[Path]]:
        """(folders watched recursively, folders watched at the top only): the story folders, the
        materialized roots and ./flows; the workspace itself only for its config files."""
        folders = [self.workspace / d for d in (self.config.story_dirs if self.config else ["./stories"])]
        folders += [self.workspace / MATERIALIZED_DIR, self.workspace / "flows"]
        deep = sorted({Path(f).resolve() for f in folders if Path(f).is_dir()})
        return deep, [self.workspace]

    def _watch_kitsoki(self) -> None:
        deep, shallow = self._watched()
        threads = [threading.Thread(target=self._watch_loop, args=(paths, recursive), daemon=True,
                                    name=f"kitsoki-watch-{'deep' if recursive else 'top'}")
                   for paths, recursive in ((deep, True), (shallow, False)) if paths]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _watch_loop(self, paths: list[Path], recursive: bool) -> None:
        from watchfiles import watch

        def relevant(_change, path: str) -> bool:
            return ".artifacts" not in Path(path).parts and path.endswith((".yaml", ".yml"))

        try:
            for changes in watch(*paths, stop_event=self._stop, watch_filter=relevant, debounce=400, step=100,
                                 rust_timeout=500, yield_on_timeout=False, recursive=recursive):
                if self._stop.is_set():
                    return
                if changes:
                    try:
                        self.kitsoki_files_changed([path for _change, path in changes])
                    except Exception:  # noqa: BLE001 - the watcher must outlive one bad refresh
                        log.exception("refresh after a kitsoki file change failed")
        except Exception:  # noqa: BLE001
            log.exception("kitsoki file watcher stopped")


def mining_note(miner: MinerStatus) -> str | None:
    """Say where a pass looked when it read nothing, so an empty inbox is never a silent mystery."""
    last = miner.last_pass
    if not miner.enabled:
        return "mining is off (mining.enabled in .kitsoki.yaml, or the editor's mining option)"
    # A live pass that finds nothing new is normal; a seed pass, or one that saw no transcript at all, is not.
    if last is None or last.sessions > 0 or (last.trigger == "live" and last.files_seen > 0):
        return None
    where = ", ".join(miner.transcript_dirs) or "no folder"
    if last.other_projects and not last.reads_other_projects:
        # The transcripts are there; none was recorded in this workspace (or its worktrees).
        return (f"the last pass read 0 sessions: the {last.other_projects} it found in {where} belong to other "
                f"projects. If this project was worked in at another path, list it in mining.project_paths "
                f"(.kitsoki.yaml); mining.other_projects: true reads them all, for suggestions only")
    return (f"the last pass read 0 sessions; it looked in {where}. Point mining.transcript_dirs "
            f"(.kitsoki.yaml) or the editor's transcriptDirs at your transcripts (~/.claude/projects is fine: "
            f"only sessions recorded in this workspace are read)")


def planned_gate(workspace: Path, recipe_id: str | None = None) -> GatePreview:
    """The flow gate an accept of `recipe_id` runs, as a person is told before it: the same scope
    function and settings core.proposals.decide.accept gates with, on the tree the accept would
    produce (the staged draft's bytes standing in for the live files)."""
    from core.proposals.staging import StagedStateError, staged_files

    try:
        model = load_workspace(workspace)
        settings = gate_settings(model.config)
    except (ValueError, SettingsError) as exc:
        return GatePreview(kind="unknown", runs=[], note=f"the workspace does not load: {exc}")
    proposal = load_proposal(workspace, recipe_id) if recipe_id else None
    if proposal is None or not proposal.files:
        return GatePreview(kind="unknown", runs=[], note="no staged change to gate")
    try:
        staged = staged_files(workspace, proposal)
        return gate_preview(workspace, settings, [c.path for c in proposal.files], staged)
    except (ValueError, StagedStateError) as exc:
        return GatePreview(kind="unknown", runs=[], note=f"the staged draft does not load: {exc}")
