"""Seed and live mining passes over a workspace's transcripts.

Seed (no watermark for the slug yet): the `first_pass_sample` most recently written sessions, agent
sessions dropped. Live: only what changed since the watermark, agent sessions kept; a Claude file
that grew is read from where the last pass stopped, so only its new bytes are parsed; an unchanged
file is only stat()ed. Recipes are mined from every episode the store holds. The store, the recipes
file and the trace record are written only when the pass completes: a pass that crashes or is
cancelled changes nothing, and the next one reads the same data again.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import orjson
from pydantic import BaseModel, Field, ValidationError

from core import statefs

from core.mining.recipes import Recipe, RecipesFile
from core.transcripts.display import display_path as file_key  # state keys: no secret of a path in them
from core.transcripts.display import display_stem

if TYPE_CHECKING:
    from core.mining.recipes import RecipeIndex
    from core.mining.watermark import FileMark, MiningState
    from core.transcripts.discover import SessionFiles
    from core.transcripts.scope import Scope

# What a pass runs (the transcript readers, episodes, the watermark store) is imported by the functions
# that run it: `propose`, `proposals` and the language server's start read recipes.json through this
# module and must not load the mining half first.

Trigger = Literal["seed", "live"]
OUTCOMES_FILE = Path(".artifacts") / "mining" / "outcomes.json"
"""core.proposals.outcomes.OUTCOMES_FILE: without it no accepted change is followed, so none weighs a recipe."""


class PassCancelled(Exception):
    """The pass was cancelled before it completed; nothing was written."""


class PassReport(BaseModel):
    trigger: Trigger
    slug: str
    sessions: int
    """Sessions read in this pass."""
    recipes: int
    job_id: str
    files_seen: int = 0
    files_read: int = 0
    bytes_read: int = 0
    mined_through: int = 0
    recipes_path: str = ""
    other_projects: int = 0
    """Sessions under the folders looked in that belong to other projects (another `cwd`): left out,
    or, with `reads_other_projects`, read for suggestions only."""
    reads_other_projects: bool = False
    """mining.other_projects / --other-projects was on for this pass."""


class MineResult(BaseModel):
    """What `kitsoki-miner mine --json` prints; schema in schemas/mine-result.schema.json."""

    pass_: PassReport = Field(alias="pass")
    recipes: list[Recipe]

    model_config = {"populate_by_name": True}


MAX_RECIPES_BYTES = 512 << 20
MINE_BATCH_BYTES = 2 << 20
"""Small transcripts travel to a worker in batches of about this much (ingest.parallel_map): mining a byte
costs about twice what counting it does, and at the end of a pass the caller waits for the batches the pool
has already handed a helper (up to two), which with `sessions`' 8 MB batches was a fifth of a seed's read."""


class RecipesFileError(ValueError):
    """`recipes.json` cannot be used; the message names the file and the field. Nothing was written."""


def recipes_path(workspace: Path) -> Path:
    return Path(workspace) / ".artifacts" / "mining" / "recipes.json"


def read_recipes(workspace: Path) -> list[Recipe]:
    """The recipes of the last pass ([] when there was none). A file that is not a regular file,
    does not parse, or does not fit the recipes schema raises RecipesFileError naming the file and
    the first fields that are wrong: it is never half-used."""
    path = recipes_path(workspace)
    try:
        raw = statefs.read_bytes(path, MAX_RECIPES_BYTES, what="recipes.json")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecipesFileError(f"{exc}; run `kitsoki-miner mine --seed` to write it again") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RecipesFileError(f"{path}: not valid JSON ({exc}); run `kitsoki-miner mine --seed` to write it "
                               "again") from None
    try:
        return RecipesFile.model_validate(data).recipes
    except ValidationError as exc:
        problems = []
        for error in exc.errors()[:5]:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"]).lstrip(".")
            problems.append(f"{where or '(top)'}: {error['msg']}")
        more = f"; and {exc.error_count() - 5} more" if exc.error_count() > 5 else ""
        raise RecipesFileError(f"{path}: {'; '.join(problems)}{more}; run `kitsoki-miner mine --seed` to write "
                               "it again") from None


@dataclass
class _Candidate:
    format: str
    path: Path
    size: int
    mtime_ns: int


def _stat(fmt: str, path: Path) -> _Candidate | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return _Candidate(fmt, path, st.st_size, st.st_mtime_ns)


_SIGNS = ("interrupted", "refused", "answered")


def _identity(file, path: Path, mark: FileMark | None) -> dict:
    """The session, project and launch of a Claude file's episodes (a resumed read: what the mark
    says where the new part does not, and who started it from the evidence of both parts)."""
    from core.transcripts.launch import PersonSigns, claude_launch

    signs = PersonSigns(*(getattr(file.signs, s) or bool(mark and s in mark.person_signs) for s in _SIGNS))
    entrypoint = (mark.entrypoint if mark else None) or file.entrypoint
    origin = (mark.origin if mark else None) or file.origin
    kitsoki = file.kitsoki or bool(mark and mark.kitsoki)
    launch = claude_launch(entrypoint, origin=origin, kitsoki=kitsoki, signs=signs)
    return dict(
        session=file.session_id or (mark.session if mark else display_stem(path)),
        project=file.cwd or (mark.project if mark else None),
        agent_session=launch.agent, entrypoint=entrypoint, origin=origin, kitsoki=kitsoki,
        person_signs=[s for s in _SIGNS if getattr(signs, s)],
    )


def mine_file(
    fmt: str, path: Path, size: int, mtime_ns: int, mark: FileMark | None, screen: bool = False
) -> tuple[str, FileMark, int, int] | None:
    """Episodes of one transcript file, resuming from `mark` when the file only grew.

    Returns (path, new mark, bytes read, index of the first episode that changed); with `screen`,
    None for a session a program started (the seed pass leaves those out: who started a session is
    decided with the whole file's evidence, core/transcripts/launch.py)."""
    from core.mining.episodes import attach_results, episodes, step_episodes
    from core.mining.watermark import FileMark
    from core.transcripts.codex import read_codex_session
    from core.transcripts.pi import read_pi_session
    from core.transcripts.steps import read_claude_steps

    if fmt in ("pi", "codex"):  # read whole: no resume from an offset for these formats (yet)
        session = read_pi_session(path) if fmt == "pi" else read_codex_session(path)
        if screen and session.agent_session:
            return None
        eps = list(episodes(session))
        new = FileMark(format=fmt, size=size, mtime_ns=mtime_ns, offset=size,
                       line=session.accounting.lines_read, session=session.id, project=session.project,
                       agent_session=session.agent_session, episodes=eps)
        return file_key(path), new, size, 0
    # A Claude file is read as steps (core/transcripts/steps.py): what its episodes take, no turns.
    resume = mark is not None and mark.format == fmt and size >= mark.size and 0 < mark.offset <= size
    if resume:
        read = read_claude_steps(path, start=mark.offset, first_line=mark.line + 1)
        carry = mark.episodes[-1] if mark.episodes else None
        if carry is not None and read.orphan_results:
            attach_results(carry, read.orphan_results)
        who = _identity(read.file, path, mark)
        fresh = list(step_episodes(read.steps, **_episode_identity(who), file=file_key(path), carry=carry))
        kept = mark.episodes[:-1] if carry is not None else mark.episodes
        eps = kept + fresh
        start, changed_from = mark.offset, len(kept)
    else:
        read = read_claude_steps(path)
        who = _identity(read.file, path, None)
        if screen and who["agent_session"]:
            return None
        eps = list(step_episodes(read.steps, **_episode_identity(who), file=file_key(path)))
        start = changed_from = 0
    file = read.file
    new = FileMark(format=fmt, size=size, mtime_ns=mtime_ns, offset=file.end_offset, line=file.last_line,
                   **who, episodes=eps)
    return file_key(path), new, file.end_offset - start, changed_from


def _load_readers() -> None:
    """Import what mine_file runs (the readers, episodes, the ask reader and its stemmers) and compile the
    ask reader's lexicon before the worker processes are forked: they inherit them instead of each doing
    it again (about 0.15 s of CPU per process, on the pass's critical path)."""
    import core.mining.episodes  # noqa: F401
    import core.mining.watermark  # noqa: F401
    import core.transcripts.codex  # noqa: F401
    import core.transcripts.pi  # noqa: F401
    import core.transcripts.steps  # noqa: F401
    from core.mining.asks import lexicon_ready

    lexicon_ready()


def _episode_identity(who: dict) -> dict:
    return {k: who[k] for k in ("session", "project", "agent_session")}


def _share_strings(mark: FileMark) -> None:
    """One copy of each stem, signature, tool name and argument across all files: they come from a
    small vocabulary (a person runs the same commands on the same paths), and each file's episodes
    arrive from a worker with copies of their own (a seed pass keeps tens of thousands of episodes
    in memory)."""
    intern = sys.intern
    for ep in mark.episodes:
        ep.stems = [intern(s) for s in ep.stems]
        for action in ep.actions:
            action.signature = intern(action.signature)
            action.tool = intern(action.tool)
            action.argument = intern(action.argument)
            action.file = intern(action.file)


def _recipes_stand(path: Path, state: MiningState) -> bool:
    """Whether recipes.json is the one the stored state was committed with (when it says)."""
    if not state._recipes_sha256:
        return True
    try:
        body = statefs.read_bytes(path, MAX_RECIPES_BYTES, what="recipes.json")
    except OSError:
        return True  # read_recipes names the problem
    return hashlib.sha256(body).hexdigest() == state._recipes_sha256


def _changed_trunks(paths: Iterable[Path], state: MiningState) -> list[SessionFiles]:
    """The transcript trunks among watcher-reported paths (subagent files are not mined)."""
    from core.transcripts.discover import SessionFiles
    from core.transcripts.lines import NOT_A_TRANSCRIPT, sniff_format

    out = []
    for path in sorted({Path(p) for p in paths}):
        if path.suffix != ".jsonl" or path.name.startswith("agent-") or path.parent.name == "subagents":
            continue
        mark = state.files.get(file_key(path))
        fmt = mark.format if mark is not None else (sniff_format(path) or "claude")
        if fmt == NOT_A_TRANSCRIPT:
            continue
        out.append(SessionFiles(fmt, path))
    return out


def _sort_by_scope(units: list[SessionFiles], scope: Scope, state: MiningState) -> tuple[list[SessionFiles], int,
                                                                                          set[str], set[str]]:
    """(the sessions this pass may read, how many belong to other projects, the files the state had
    mined that now do (their episodes leave), the files it had set aside that now belong (they are
    read whatever the watermark: they never had their turn)). The state remembers every session's
    project, so only new files have their first lines read."""
    from core.transcripts.scope import split_by_scope

    known = {path: mark.project for path, mark in state.files.items()}
    known.update(state.others)
    split = split_by_scope(units, scope, known)
    dropped, returned = set(), set()
    for unit in split.other:
        key = file_key(unit.trunk or unit.subagents[0])
        if key in state.files:
            del state.files[key]
            dropped.add(key)
        state.others[key] = split.projects[key]
    for unit in split.kept:
        key = file_key(unit.trunk or unit.subagents[0])
        if key in state.others:
            del state.others[key]
            returned.add(key)
    others = len(split.other) + sum(1 for unit in split.kept if not scope.owns(split.projects.get(
        file_key(unit.trunk or unit.subagents[0])), unit.trunk))
    return split.kept, others, dropped, returned


@dataclass
class PassMemory:
    """What a long-lived miner keeps between passes so a live pass does not reload the store."""

    state: MiningState | None = None
    index: RecipeIndex | None = None
    scope: str = ""
    """The scope (Scope.key) the index was built for: another one rebuilds it."""


def _run_pass(
    workspace: Path,
    *,
    repo: Path | None = None,
    dirs: Iterable[Path] = (),
    trigger: Trigger | None = None,
    first_pass_sample: int = 12,
    priority_threshold: float = 0.0,
    mined_through: Mapping[str, int] | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    on_complete: Callable[[PassReport, list[Recipe]], None] | None = None,
    memory: PassMemory | None = None,
    changed_paths: Iterable[Path] | None = None,
    other_projects: bool = False,
    project_paths: Iterable[str] = (),
) -> tuple[PassReport, list[Recipe]]:
    """One pass for the workspace's slug; returns its report and the ranked recipes.

    Only the workspace's own sessions are read (core/transcripts/scope.py), whichever folders the
    transcripts come from; the others are counted. `other_projects` reads them too, for suggestions
    only; `project_paths` are other folders this project was worked in. `changed_paths` (from a file watcher) lets a live pass with a remembered state look only at
    those files instead of walking every transcript folder.
    """
    from core.mining.recipes import RecipeIndex
    from core.mining.watermark import (
        MiningState,
        kitsoki_slug,
        load_episodes,
        load_state,
        save_state,
        write_unsynced,
    )
    from core.transcripts.discover import discover
    from core.transcripts.ingest import parallel_map
    from core.transcripts.scope import workspace_scope

    repo = (repo or workspace).resolve()
    slug = kitsoki_slug(repo)
    remembered = memory.state if memory is not None else None
    if memory is not None:
        memory.state = None  # until this pass completes, what was remembered may be half-changed
    if remembered is not None and remembered.slug == slug:
        state = remembered
    else:
        state = load_state(workspace, slug, with_episodes=False)
    if trigger is None:
        trigger = "seed" if state is None else "live"
    if state is None or trigger == "seed":
        state = MiningState(slug=slug, mined_through=(mined_through or {}).get(slug, 0))
        fresh_seed = True
    else:
        fresh_seed = False

    scope = workspace_scope(repo, other_projects=other_projects, project_paths=project_paths)
    same_scope = memory is not None and memory.scope == scope.key
    if changed_paths is not None and remembered is state and not fresh_seed and same_scope:
        units = _changed_trunks(changed_paths, state)
    else:
        known = {path: mark.format for path, mark in state.files.items()}
        units = discover(repo, dirs, home=home, env=env, known=known, scope=scope)
    kept, others, dropped, returned = _sort_by_scope([u for u in units if u.trunk is not None], scope, state)
    seen = [c for u in kept if (c := _stat(u.format, u.trunk)) is not None]
    sample = max(0, first_pass_sample)
    if fresh_seed:
        # The most recent sessions first; each is read whole, since who started it is decided with the
        # whole file's evidence (a person's interrupt in an SDK session, kitsoki's tools), and the ones
        # programs started are dropped until `sample` people's sessions are read.
        todo = sorted(seen, key=lambda c: (-c.mtime_ns, str(c.path)))
    else:
        todo = []
        for c in seen:
            mark = state.files.get(file_key(c.path))
            if mark is None:
                if c.mtime_ns > state.mined_through * 1_000_000_000 or file_key(c.path) in returned:
                    todo.append(c)
            elif (mark.size, mark.mtime_ns) != (c.size, c.mtime_ns):
                todo.append(c)

    out = recipes_path(workspace)
    if not todo and not dropped and not fresh_seed and out.exists() and _recipes_stand(out, state):
        # Nothing new: the stored recipes stand. Only fingerprints were read and files stat()ed.
        recipes = read_recipes(workspace)
        for recipe in recipes:
            recipe.below_threshold = recipe.priority < priority_threshold
        body = recipes_json(recipes)
        report = PassReport(trigger=trigger, slug=slug, sessions=0, recipes=len(recipes),
                            job_id=f"{trigger}-{hashlib.sha256(body).hexdigest()[:12]}", files_seen=len(seen),
                            mined_through=state.mined_through, recipes_path=str(out), other_projects=others,
                            reads_other_projects=other_projects)
        if memory is not None:
            memory.state = state
        if on_complete is not None:
            on_complete(report, recipes)
        return report, recipes
    if not fresh_seed:
        load_episodes(workspace, state)
    _load_readers()

    bytes_read = 0
    changed: dict[str, int] = {}
    examined: list[_Candidate] = []
    pending = todo if not fresh_seed or sample > 0 else []
    while pending:
        batch = pending[:sample] if fresh_seed else pending
        pending = pending[len(batch):]
        examined += batch
        jobs = [(c.format, c.path, c.size, c.mtime_ns, state.files.get(file_key(c.path)), fresh_seed) for c in batch]
        sizes = [max(1, c.size - (state.files[file_key(c.path)].offset if file_key(c.path) in state.files else 0))
                 for c in batch]
        for mined in parallel_map(mine_file, jobs, sizes, workers=workers, progress=progress,
                                  batch_bytes=MINE_BATCH_BYTES):
            if cancel is not None and cancel.is_set():
                raise PassCancelled()
            if mined is None:
                continue  # a program's session, left out of the seed
            path, mark, read, changed_from = mined
            _share_strings(mark)
            state.files[path] = mark
            changed[path] = changed_from
            bytes_read += read
        if fresh_seed:
            sample -= sum(1 for c in batch if file_key(c.path) in state.files)
            if sample <= 0:
                break
    if cancel is not None and cancel.is_set():
        raise PassCancelled()
    todo = [c for c in examined if file_key(c.path) in state.files] if fresh_seed else examined

    if todo:
        # kitsoki's watermark: the newest session the pass mined (a seed's sample, people's sessions);
        # a later live pass keeps programs' sessions newer than it.
        state.mined_through = max(state.mined_through, max(c.mtime_ns for c in todo) // 1_000_000_000)
    # Recipes come from this project's sessions. With other projects opted in, what recurs only when
    # theirs are counted too is kept, marked: its evidence is not this project's (a suggestion at most).
    own = {p: m for p, m in state.files.items() if not other_projects or scope.owns(m.project, Path(p))}
    episodes_now = [ep for m in own.values() for ep in m.episodes]
    index = memory.index if memory is not None and memory.scope == scope.key else None
    if index is not None:
        index.sync_files({p: own[p].episodes if p in own else [] for p in (*changed, *dropped)}, episodes_now)
    else:
        index = RecipeIndex(episodes_now, project_of=this_project)
    recipes = index.recipes(priority_threshold)
    if (Path(workspace) / OUTCOMES_FILE).exists() or (Path(workspace) / OUTCOMES_FILE).is_symlink():
        from core.proposals.outcomes import weigh_recipes  # the proposals' modules load only when there is one

        recipes = weigh_recipes(workspace, recipes, priority_threshold)  # like a change that did not stick: lower
    if other_projects and len(own) < len(state.files):
        mine = {r.id for r in recipes}
        ours = {id(ep) for ep in episodes_now}
        everyone = RecipeIndex(state.all_episodes(), project_of=lambda ep: "" if id(ep) in ours else ep.project)
        beyond = [r for r in everyone.recipes(priority_threshold) if r.id not in mine]
        for recipe in beyond:
            recipe.__dict__["other_projects"] = True  # before its JSON is first made
        recipes = sorted(recipes + beyond, key=lambda r: (-r.priority, r.id))
    body = recipes_json(recipes)
    digest = hashlib.sha256(body).hexdigest()
    job_id = f"{trigger}-{digest[:12]}"
    # One file is fsynced per pass: the state's fingerprints, which record recipes.json's digest. The
    # recipes file is replaced atomically but not fsynced: after a crash that kept the state and
    # lost it (or half of it), the next pass finds it does not match and makes it again.
    write_unsynced(out, body, what="recipes.json")
    save_state(workspace, state, None if fresh_seed else changed, recipes_sha256=digest)
    if memory is not None:
        memory.state, memory.index, memory.scope = state, index, scope.key
    report = PassReport(
        trigger=trigger, slug=slug, sessions=len(todo), recipes=len(recipes), job_id=job_id,
        files_seen=len(seen), files_read=len(todo), bytes_read=bytes_read,
        mined_through=state.mined_through, recipes_path=str(out), other_projects=others,
        reads_other_projects=other_projects,
    )
    if on_complete is not None:
        on_complete(report, recipes)
    return report, recipes


def this_project(episode) -> str:
    """Every episode of this workspace's own sessions is one project's, wherever in it (a subfolder, a
    worktree) the session ran."""
    return ""


@functools.wraps(_run_pass)
def run_pass(*args, **kwargs) -> tuple[PassReport, list[Recipe]]:
    from core.transcripts.lines import paused_gc

    # The garbage collector is paused for the pass: a seed pass keeps every episode of the history,
    # and each full collection rescanned them all (several per pass).
    try:
        with paused_gc():
            return _run_pass(*args, **kwargs)
    finally:
        steps = sys.modules.get("core.transcripts.steps")
        if steps is not None:
            steps.forget_inputs()  # the tool inputs this process read, as read (before redaction): not past the pass


def recipes_json(recipes: list[Recipe]) -> bytes:
    """The recipes file: same recipes, same bytes (sorted keys, indented, no wall-clock fields);
    each recipe's part is made once (Recipe.file_bytes), so a live pass only joins them."""
    if not recipes:
        return orjson.dumps({"recipes": []}, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    return b'{\n  "recipes": [\n    ' + b",\n    ".join(r.file_bytes() for r in recipes) + b"\n  ]\n}\n"
