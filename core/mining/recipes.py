"""Recipes: what keeps recurring across sessions, scored, with the evidence that shows it.

Kinds (kitsoki's): intent (a recurring request answered by a consistent set of actions), binding
(a consistent concrete provider for one of dev-story's ifaces), world (a stable knob such as the
base branch), gate (a recurring human decision at the same action). `stub-wire` is a kind the
proposer may assign; the deterministic miner does not infer it.

Priority (one formula for every kind; documented in the README):

    priority = cost × log2(1 + sessions) × (0.5 + 0.5 × recency) × (0.5 + 0.5 × outcome)

- cost: kitsoki's measured cost (tool_calls + edit_rerun_cycles + retries), mean over the episodes
  the evidence sits in;
- sessions: distinct sessions the recipe was seen in;
- recency: 0.5 ** (days between the recipe's last sighting and the newest episode mined / 30), so the
  same transcripts give the same score whenever they are mined;
- outcome: the share of the evidence's actions that neither failed nor were rejected.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from typing import Annotated, Literal

from dataclasses import dataclass

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, with_config

from core.ids import RECIPE_ID_PATTERN

from core.mining.clusters import AskClusters, has_object
from core.mining.episodes import Action, Determinism, Episode
from core.mining.signatures import EDIT_TOOLS, FILE_TOOLS, MACHINERY_TOOLS, SHELL_TOOLS, forks_work

RecipeKind = Literal["intent", "binding", "world", "gate", "stub-wire"]

CONSISTENT_SHARE = 0.5
"""An action belongs to an intent's signature when more than this share of its episodes (and at
least two) have it."""
MIN_SESSIONS = 2
"""A binding or world recipe must recur across sessions: once is an anecdote."""
MIN_ASK_SESSIONS = 3
"""An ask (intent) or a decision (gate) is recurring when it comes back in at least this many sessions."""
OCCASION_GAP = timedelta(minutes=10)
"""Sessions sent the very same words within this of each other are one occasion: one request pasted into
several sessions at once (four threads in a minute, a fan-out to parallel agents), not a request a person kept
coming back to. An ask recurs when it comes back on MIN_ASK_SESSIONS occasions. Other words, however soon
after ("fix concern 1", then in a new session "fix concern 3"), are another occasion."""
GATE_SHARE = 0.25
"""A gate: people decided at the action in at least this share of the sessions it ran in."""
RECENCY_HALF_LIFE_DAYS = 30.0
TRIVIAL = frozenset(f"{tool}: {head}" for tool in ("Bash", "bash") for head in (
    "ls", "cat", "nl", "less", "stat", "head", "tail", "grep", "rg", "find", "echo", "pwd", "wc", "which", "tree", "sed",
    "awk", "sort", "diff", "git status", "git diff", "git log", "git show", "Get-Content", "Get-ChildItem", "Select-String"))
"""Looking around is not how a request is answered: these never define an intent's signature."""
WORLD_AGREEMENT = 0.8
"""The share of a project's evidence for a world key or an iface one value must win."""


# Where a recipe was seen. A plain dataclass (pydantic validates and dumps it inside Recipe): a world
# or binding recipe cites thousands and is rebuilt whenever one more is seen.
@with_config(ConfigDict(extra="ignore"))
@dataclass(slots=True)
class Instance:
    session: str
    path: str
    line_start: int
    line_end: int


class Phrasing(BaseModel):
    text: str
    count: int


class Recipe(BaseModel):
    id: Annotated[str, Field(pattern=RECIPE_ID_PATTERN)]
    """16 lowercase hex digits (`recipe_id`); read back, it becomes a folder name, so no other shape."""
    kind: RecipeKind
    title: str
    priority: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    below_threshold: bool = False
    sessions: Annotated[int, Field(ge=0)]
    phrasings: list[Phrasing] = Field(default_factory=list)
    action_signature: list[str] = Field(default_factory=list)
    instances: list[Instance]
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    tool_calls: int = 0
    edit_rerun_cycles: int = 0
    retries: int = 0
    determinism: Determinism
    projects: list[str] = Field(default_factory=list)
    """The project folders (recorded cwd) the evidence comes from."""
    iface: str | None = None
    """binding: the dev-story iface; world: the world key."""
    value: str | None = None
    """binding: the provider seen (gh, git, beads, ...); world: the value; gate: the decision seen."""
    other_projects: bool = False
    """It recurs only with other projects' sessions counted (mining.other_projects): its evidence is
    not this project's, so only a dev-story-enrich suggestion may come of it (core/mining/passes.py).
    Written to recipes.json only when true."""
    _score: tuple = PrivateAttr(default=())
    _json: dict | None = PrivateAttr(default=None)
    """The recipe as JSON data, made once when it is built; re-scoring only patches the score."""
    _frame: tuple[bytes, bytes, bytes] | None = PrivateAttr(default=None)

    def as_json(self) -> dict:
        if self._json is None:
            self._json = self.model_dump(mode="json")
            if not self.other_projects:
                del self._json["other_projects"]  # the file as it was before the opt-in existed
        self._json["priority"] = self.priority
        self._json["below_threshold"] = self.below_threshold
        return self._json

    def file_bytes(self) -> bytes:
        """The recipe as recipes.json holds it (keys sorted, indented as an item of its list), made
        once: a later pass that only re-scores it puts the new priority and below_threshold in."""
        frame = self._frame
        if frame is None:
            data = dict(self.as_json(), priority=0.0, below_threshold=False)
            raw = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).replace(b"\n", b"\n    ")
            # Top-level keys are the only lines indented exactly six spaces (a string never holds a
            # raw newline), and sorted keys put below_threshold before priority.
            head, rest = raw.split(b'\n      "below_threshold": false', 1)
            middle, tail = rest.split(b'\n      "priority": 0.0', 1)
            frame = self._frame = (head + b'\n      "below_threshold": ', middle + b'\n      "priority": ', tail)
        return b"".join((frame[0], b"true" if self.below_threshold else b"false", frame[1],
                         orjson.dumps(self.priority), frame[2]))


class RecipesFile(BaseModel):
    """`.artifacts/mining/recipes.json`: the recipes of the latest pass, highest priority first."""

    recipes: list[Recipe]


SKIPPED = "-"
"""Episode.cluster of a prompt too short to ask for anything."""


def episode_key(ep: Episode) -> str:
    return f"{ep.session}|{ep.file}|{ep.line_start}"


def recipe_id(kind: str, key: str) -> str:
    return hashlib.sha256(f"{kind}\0{key}".encode()).hexdigest()[:16]


# -- bindings and world knobs from shell heads ---------------------------------------------------

# shell head prefix -> (dev-story iface, provider as the person uses it)
_PROVIDERS: tuple[tuple[str, str, str], ...] = (
    ("gh issue", "ticket", "gh"),
    ("glab issue", "ticket", "glab"),
    ("bd", "ticket", "beads"),
    ("jira", "ticket", "jira"),
    ("linear", "ticket", "linear"),
    ("gh pr checks", "ci", "gh"),
    ("gh run", "ci", "gh"),
    ("gh workflow", "ci", "gh"),
    ("gh pr", "vcs", "gh"),
    ("glab mr", "vcs", "glab"),
    ("git worktree", "workspace", "git-worktree"),
    ("git push", "vcs", "git"),
    ("git commit", "vcs", "git"),
    ("git merge", "vcs", "git"),
)
_TEST_HEADS = re.compile(r"^(pytest|go test|cargo test|npm test|npm run test|yarn test|pnpm test|mix test|make test|"
                         r"jest|vitest|rspec|bundle exec|tox|nox|uv run pytest|poetry run pytest|dotnet test|mvn test|"
                         r"gradle test|./gradlew test)\b")
# `make` alone builds; `make generate`, `make docs`, `make deploy` are other asks' answers, not the build command.
# A build tool's own arguments (`go build ./...`, `cargo build --release`) keep it the build; `make` only bare
# or with a build target.
_BUILD_HEADS = re.compile(r"^(?:(?:go build|cargo build|npm run build|yarn build|pnpm build|pnpm run build|bun run build|"
                          r"make build|make all|make compile|mix compile|dotnet build|mvn package|gradle build|tsc)\b"
                          r"|make$)")
_BASE_BRANCH = (
    re.compile(r"\bgh pr create\b.*?(?:--base|-B)[ =]([\w./-]+)"),
    re.compile(r"\bgit (?:rebase|merge)\b(?: -[-\w]+)* (?:origin/|upstream/)?([\w./-]+)\s*$"),
    re.compile(r"\bgit (?:diff|log)\b.*?\s(?:origin/)?([\w./-]+?)\.\.\.?"),
    re.compile(r"\bgit checkout -b [\w./-]+ (?:origin/)?([\w./-]+)"),
)
_MERGE = re.compile(r"\bgh pr merge\b.*?--(squash|merge|rebase)\b")
_NOT_A_BRANCH = re.compile(r"^(?:v?\d+(?:\.\d+)+.*|[0-9a-f]{7,40}|HEAD[~^].*|.*[~^]\d*|@.*)$")
"""A version tag (v1.4.0), a commit, HEAD~2: what a range starts from, not the branch work is based on."""


_GO_HEADS = frozenset({"go test", "go build"})
_GO_RUN = re.compile(r"(?:^|[\s;&|(])go\s+(?:test|build)\b([^;&|\n]*)")


def _scoped_go_run(command: str) -> bool:
    """Whether a `go test` / `go build` names packages and none is the whole module (`./...`, `.`): a run of
    a part of the project. Bare, it runs the package it stands in, as the person ran it."""
    m = _GO_RUN.search(command)
    if m is None:
        return False
    words = [w for w in m.group(1).split() if not w.startswith("-")]
    return bool(words) and not any(w in ("./...", ".") for w in words)


def _head(action: Action) -> str | None:
    tool, _, head = action.signature.partition(": ")  # any shell: Bash, Pi's bash, Codex's shell, ...
    return head if head and tool in SHELL_TOOLS else None


_PROVIDER_FIRST_WORDS = frozenset(prefix.split()[0] for prefix, _, _ in _PROVIDERS)


def _action_buckets(action: Action) -> tuple[tuple[str, str, str], ...]:
    """The binding/world evidence one action gives: (kind, key, value) per finding. Made once per
    (signature, argument, refused): a person runs the same commands again and again."""
    if action.rejected:
        return ()
    key = (action.signature, action.argument)
    found = _BUCKETS.get(key)
    if found is None:
        found = tuple(_shell_buckets(action))
        # Bounded in entries and in what each holds: the server lives long, and a heredoc argument can
        # be many kilobytes that outlive the episodes that held them.
        if len(_BUCKETS) < 16384 and len(action.argument) <= 1024:
            _BUCKETS[key] = found
    return found


_BUCKETS: dict[tuple[str, str], tuple] = {}


def _shell_buckets(action: Action) -> list[tuple[str, str, str]]:
    head = _head(action)
    if head is None:
        return []
    found = []
    first = head.split(" ", 1)[0]
    if first in _PROVIDER_FIRST_WORDS:
        for prefix, iface, provider in _PROVIDERS:
            if head == prefix or head.startswith(prefix + " "):
                found.append(("binding", iface, provider))
                break
    if head in _GO_HEADS and _scoped_go_run(action.argument):
        pass  # one package's run (`go test ./services/x/...`): its head, bare `go test`, is not the project's command
    elif _TEST_HEADS.match(head):
        found.append(("world", "test_cmd", head))
    elif _BUILD_HEADS.match(head):
        found.append(("world", "build_cmd", head))
    if first in ("git", "gh"):  # base branch and merge strategy only show in git and gh commands
        for pattern in _BASE_BRANCH:
            m = pattern.search(action.argument)
            if m and m.group(1) not in ("HEAD", "-", ".") and not _NOT_A_BRANCH.match(m.group(1)):
                found.append(("world", "base_branch", m.group(1)))
                break
        if head.startswith("gh pr merge"):
            m = _MERGE.search(action.argument)
            if m:
                found.append(("world", "merge_strategy", m.group(1)))
    return found


def occasions(group) -> int:
    """How many occasions these episodes were asked on: each session counts once, except that a session whose
    first ask of the group has the same words as an occasion's, within OCCASION_GAP after it, is that
    occasion."""
    first: dict[str, tuple[datetime | None, str]] = {}
    for ep in group:
        ts = ep.timestamp
        if ts is not None and ts.tzinfo is None:
            ts = ts.replace(tzinfo=timezone.utc)
        seen = first.get(ep.session)
        if seen is None or (ts is not None and (seen[0] is None or ts < seen[0])):
            first[ep.session] = (ts, " ".join(ep.phrasing.split()).casefold())
    count = sum(1 for ts, _ in first.values() if ts is None)
    started: dict[str, datetime] = {}  # words -> when the latest occasion asked with them began
    for ts, words in sorted((v for v in first.values() if v[0] is not None), key=lambda v: v[0]):
        began = started.get(words) if words else None
        if began is None or ts - began > OCCASION_GAP:
            count += 1
            started[words] = ts
    return count


def _family(signature: str) -> str:
    """A signature with its tool named by kind (shell, edit, read): the same action in any agent."""
    tool, sep, key = signature.partition(": ")
    if tool in SHELL_TOOLS:
        return "shell: " + key
    if tool in EDIT_TOOLS:
        return "edit: " + key
    if tool in FILE_TOOLS:
        return "read: " + key
    return signature


_TRIVIAL_FAMILIES = frozenset(_family(sig) for sig in TRIVIAL)
"""TRIVIAL in any agent's words (Codex's `shell_command: sed`, `exec_command: rg` too)."""


def _is_setting_command(signature: str) -> bool:
    """A shell signature that runs the project's test or build command (a world setting, not an ask's answer)."""
    tool, _, head = signature.partition(": ")
    return tool in SHELL_TOOLS and bool(head) and (_TEST_HEADS.match(head) is not None
                                                    or _BUILD_HEADS.match(head) is not None)


def _gate_bucket(action: Action) -> tuple[str, str] | None:
    """A person deciding at an action of the project's own work: refusing or stopping a command whose outcome
    the work forks on (a push, a deploy, a migration). The agent's conversation machinery (plan approval,
    questions, todo lists, subagents, skills) is never a gate, and neither is looking around or editing."""
    if action.tool in MACHINERY_TOOLS or not (action.rejected or action.interrupted):
        return None
    if not forks_work(action.tool, action.signature):
        return None
    return (action.signature, "decided")


# -- scoring -----------------------------------------------------------------------------------


def _recency(last: datetime | None, newest: datetime | None) -> float:
    if last is None or newest is None:
        return 1.0
    age_days = max(0.0, (newest - last).total_seconds() / 86400)
    return 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)


def _build(kind: str, key: str, title: str, episodes: list[Episode], actions: list[Action] | None,
           newest: datetime | None, **fields) -> Recipe:
    unique: dict[tuple[str, int], Episode] = {}
    for ep in episodes:
        unique.setdefault((ep.session, ep.line_start), ep)
    eps = list(unique.values())
    stamps = [e.timestamp for e in eps if e.timestamp]
    judged = actions if actions is not None else [a for e in eps for a in e.actions]
    ok = sum(1 for a in judged if not (a.is_error or a.rejected))
    outcome = ok / len(judged) if judged else 1.0
    cost = sum(e.measures.cost for e in eps) / len(eps)
    sessions = len({e.session for e in eps})
    last = max(stamps) if stamps else None
    priority = _priority(cost, sessions, last, outcome, newest)
    gated = sum(1 for e in eps if e.determinism is Determinism.agent_gated)
    if actions is not None:
        instances = [Instance(e.session, a.file, a.line, a.line)
                     for e, a in zip(episodes, actions)]
    else:
        instances = [Instance(e.session, e.file, e.line_start, e.line_end)
                     for e in eps]
    instances.sort(key=lambda i: (i.path, i.line_start, i.session))
    recipe = Recipe(
        id=recipe_id(kind, key),
        kind=kind,
        title=title,
        priority=round(priority, 3),
        sessions=sessions,
        instances=instances,
        first_seen=min(stamps) if stamps else None,
        last_seen=last,
        tool_calls=sum(e.measures.tool_calls for e in eps),
        edit_rerun_cycles=sum(e.measures.edit_rerun_cycles for e in eps),
        retries=sum(e.measures.retries for e in eps),
        projects=sorted({e.project for e in eps if e.project}),
        determinism=Determinism.agent_gated if kind == "gate" or gated * 2 > len(eps) else
        (Determinism.deterministic if kind in ("binding", "world") or any(e.actions for e in eps)
         else Determinism.irreducible),
        **fields,
    )
    recipe._score = (cost, sessions, last, outcome)
    return recipe


def _priority(cost: float, sessions: int, last: datetime | None, outcome: float, newest: datetime | None) -> float:
    return cost * math.log2(1 + sessions) * (0.5 + 0.5 * _recency(last, newest)) * (0.5 + 0.5 * outcome)


def sort_key(ep: Episode) -> tuple:
    return (ep.timestamp or _EPOCH, ep.session, ep.file, ep.line_start)


_EPOCH = datetime.min.replace(tzinfo=timezone.utc)


class RecipeIndex:
    """Recipes of a set of episodes, kept up to date as episodes arrive.

    Built from scratch, it is the miner (`mine_recipes`). Kept alive between passes (the language
    server's miner does), `sync` folds in what changed: episodes that come after all the others
    (a session going on) or replace one with the same prompt (its open episode, continued) are
    added without revisiting the rest; anything else (an older session found, a file rewritten)
    rebuilds. Either way the recipes are exactly those of a fresh run over the same episodes.

    Intents: prompts grouped by what they ask (core/mining/clusters.py), greedy in time order, so a
    prompt's cluster depends only on the prompts before it.
    """

    def __init__(self, episodes: Iterable[Episode] = (),
                 project_of: Callable[[Episode], str | None] | None = None) -> None:
        # Which project an episode's ask belongs to. The pass names this workspace's own sessions ""
        # (its subfolders and worktrees are one project, and a recipe's id never carries the folder the
        # workspace happens to sit in); other projects keep their recorded cwd.
        self.project_of: Callable[[Episode], str | None] = project_of or (lambda ep: ep.project)
        self._reset(sorted(episodes, key=sort_key))

    def _reset(self, eps: list[Episode]) -> None:
        self.eps: dict[str, Episode] = {}
        self.last: tuple | None = None
        self.newest: datetime | None = None
        self.asks = AskClusters()
        self.members: list[list[str]] = []
        self.seed_of: dict[str, int] = {}
        self.cluster_of: dict[str, int] = {}
        self.restoring = True
        self.evidence: dict[tuple[str, str, str], dict[str, list[int]]] = defaultdict(dict)
        self.values_of: dict[tuple[str, str], list[str]] = defaultdict(list)
        """(kind, key) -> the values its evidence buckets were opened for, in the order they were."""
        self.gates: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(dict)
        self.contributes: dict[str, list[tuple]] = {}
        self.file_keys: dict[str, set[str]] = defaultdict(set)
        self.built: dict[tuple, list[tuple[Recipe, tuple]]] = {}
        """unit -> its recipes, each with the parts of its score that do not depend on the newest episode."""
        self.dirty: set[tuple] = set()
        for ep in eps:
            self._append(ep)

    # -- changes -----------------------------------------------------------------------------

    def sync(self, episodes: Iterable[Episode]) -> bool:
        """Make the index hold exactly `episodes`; True when that took no rebuild."""
        current = {episode_key(ep): ep for ep in episodes}
        if len(current) < len(self.eps) or any(k not in current for k in self.eps):
            self._reset(sorted(current.values(), key=sort_key))
            return False
        return self._fold(current, [ep for key, ep in current.items() if self.eps.get(key) is not ep])

    def sync_files(self, changed: dict[str, list[Episode]], everything: Iterable[Episode]) -> bool:
        """`sync` when only the episodes of the files in `changed` (path -> all its episodes now)
        can differ: what those files held before must all still be there."""
        fresh = {}
        for path, eps in changed.items():
            keys = {episode_key(ep): ep for ep in eps}
            if not self.file_keys.get(path, set()) <= keys.keys():
                return self.sync(everything)
            fresh.update(keys)
        return self._fold(None, [ep for key, ep in fresh.items() if self.eps.get(key) is not ep], everything)

    def _fold(self, current: dict[str, Episode] | None, changes: list[Episode],
              everything: Iterable[Episode] | None = None) -> bool:
        added, replaced = [], []
        for ep in changes:
            old = self.eps.get(episode_key(ep))
            if old is None:
                added.append(ep)
            elif old.stems != ep.stems or sort_key(old) != sort_key(ep):
                return self._rebuild(current, everything)
            else:
                replaced.append(ep)
        added.sort(key=sort_key)
        if added and self.last is not None and sort_key(added[0]) <= self.last:
            return self._rebuild(current, everything)
        for ep in replaced:
            key = episode_key(ep)
            self._forget_actions(key)
            ep.cluster = self.eps[key].cluster
            self.eps[key] = ep
            self._index_actions(ep, key)
            if key in self.cluster_of:
                self.dirty.add(("intent", self.cluster_of[key]))
        for ep in added:
            self._append(ep)
        return True

    def _rebuild(self, current: dict[str, Episode] | None, everything: Iterable[Episode] | None) -> bool:
        eps = list(current.values()) if current is not None else list(everything or ())
        self._reset(sorted(eps, key=sort_key))
        return False

    def _append(self, ep: Episode) -> None:
        key = episode_key(ep)
        self.eps[key] = ep
        self.file_keys[ep.file].add(key)
        self.last = sort_key(ep)
        if ep.timestamp is not None and (self.newest is None or ep.timestamp > self.newest):
            self.newest = ep.timestamp
        self._cluster(ep, key)
        self._index_actions(ep, key)

    def _cluster(self, ep: Episode, key: str) -> None:
        terms = ep.stems
        if not has_object(terms):
            ep.cluster = SKIPPED
            return
        # A cluster remembered from an earlier run stands while everything before it is as it was then:
        # greedy clustering in time order depends only on what came before.
        if self.restoring and not (ep.cluster == key or ep.cluster in self.seed_of):
            self.restoring = False
        if self.restoring:
            best = None if ep.cluster == key else self.seed_of[ep.cluster]
        else:
            best = self.asks.best(terms, self.project_of(ep))
        if best is None:
            best = self.asks.start(terms, self.project_of(ep))
            self.seed_of[key] = best
            self.members.append([])
        self.asks.join(best, terms)
        self.members[best].append(key)
        self.cluster_of[key] = best
        ep.cluster = self.members[best][0]
        self.dirty.add(("intent", best))

    def _index_actions(self, ep: Episode, key: str) -> None:
        touched = []
        for i, action in enumerate(ep.actions):
            for bucket in _action_buckets(action):
                if bucket not in self.evidence:
                    self.values_of[bucket[:2]].append(bucket[2])
                self.evidence[bucket].setdefault(key, []).append(i)
                touched.append(("evidence", bucket))
            gate = _gate_bucket(action)
            if gate is not None:
                self.gates[gate].setdefault(key, []).append(i)
                touched.append(("gate", gate))
        self.contributes[key] = touched
        for kind, bucket in touched:
            self.dirty.add((bucket[0], bucket[1]) if kind == "evidence" else ("gate", bucket))

    def _forget_actions(self, key: str) -> None:
        for kind, bucket in self.contributes.pop(key, []):
            # Emptied, not removed: the key keeps its place, so buckets stay in episode order.
            (self.evidence if kind == "evidence" else self.gates)[bucket][key] = []
            self.dirty.add((bucket[0], bucket[1]) if kind == "evidence" else ("gate", bucket))

    # -- recipes -----------------------------------------------------------------------------

    def _pairs(self, bucket: dict[str, list[int]]) -> list[tuple[Episode, Action]]:
        # Keys went in as episodes were appended, in time order, and keep their place.
        return [(self.eps[k], self.eps[k].actions[i]) for k, idx in bucket.items() for i in idx]

    def _build_unit(self, unit: tuple) -> list[Recipe]:
        kind = unit[0]
        if kind == "intent":
            recipe = self._intent(unit[1])
            return [recipe] if recipe is not None else []
        if kind == "gate":
            recipe = self._gate(unit[1])
            return [recipe] if recipe is not None else []
        return self._settings(kind, unit[1])

    def _intent(self, cid: int) -> Recipe | None:
        group = [self.eps[k] for k in self.members[cid]]
        if len({m.session for m in group}) < MIN_ASK_SESSIONS or occasions(group) < MIN_ASK_SESSIONS:
            return None
        # How the ask is answered: the project's own actions, not looking around or the agent's machinery.
        # Claude's `Bash: pytest`, Pi's `bash: pytest` and Codex's `shell: pytest` are one action.
        shown: dict[str, str] = {}
        for m in group:
            for sig in m.signature:
                shown.setdefault(_family(sig), sig)
        counts = Counter(fam for m in group for fam in {_family(sig) for sig in m.signature}
                         if fam not in _TRIVIAL_FAMILIES and shown[fam].partition(": ")[0] not in MACHINERY_TOOLS)
        consistent = [f for f, n in counts.items() if n >= 2 and n / len(group) > CONSISTENT_SHARE]
        if not consistent:
            return None  # the same ask, answered differently each time: not a recipe (yet)
        if all(_is_setting_command(shown[f]) for f in consistent):
            return None  # "run the tests before I merge": answered by the test command alone, which is world.test_cmd
        order = {f: i for i, f in enumerate(shown)}
        consistent = [shown[f] for f in sorted(consistent, key=order.__getitem__)]
        phrasings = Counter(m.phrasing for m in group if m.phrasing)
        ranked = sorted(phrasings.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))
        title = ranked[0][0] if ranked else group[0].phrasing
        return _build(
            "intent", " ".join(self.asks.seed_terms[cid]) + (f"@{project}" if (project := self.project_of(group[0])) else ""),
            title, group, None, self.newest,
            phrasings=[Phrasing(text=t, count=n) for t, n in ranked],
            action_signature=consistent,
        )

    def _gate(self, bucket: tuple[str, str]) -> Recipe | None:
        sig = bucket[0]
        ev = self._pairs(self.gates.get(bucket, {}))
        decided = {e.session for e, _ in ev}
        if len(decided) < MIN_ASK_SESSIONS:
            return None
        ran = {ep.session for ep in self.eps.values() if any(a.signature == sig for a in ep.actions)}
        if len(decided) < GATE_SHARE * len(ran):
            return None  # stopped now and then, run the rest of the time: not a decision point
        rejected = sum(1 for _, a in ev if a.rejected)
        decision = "rejected" if rejected * 2 >= len(ev) else "interrupted"
        return _build("gate", f"{sig}|decided", f"{decision} at {sig}", [e for e, _ in ev],
                      [a for _, a in ev], self.newest, action_signature=[sig], value=decision)

    def _settings(self, kind: str, key: str) -> list[Recipe]:
        """binding or world: per project, the value that wins at least WORLD_AGREEMENT of its evidence for the
        key (another project's habits never outvote this one's); one recipe per winning value."""
        evidence = self.evidence
        per_project: dict[str, Counter[str]] = defaultdict(Counter)
        for value in self.values_of.get((kind, key), ()):
            for ep_key, idx in evidence[(kind, key, value)].items():
                if idx:
                    per_project[self.project_of(self.eps[ep_key]) or ""][value] += len(idx)
        if not per_project:
            return []
        group_of = project_groups(per_project)
        totals: dict[str, Counter[str]] = defaultdict(Counter)
        for project, counts in per_project.items():
            totals[group_of[project]].update(counts)
        winners: dict[str, set[str]] = defaultdict(set)
        for group, counts in totals.items():
            value, n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
            if n / sum(counts.values()) >= WORLD_AGREEMENT:
                winners[value].add(group)
        out = []
        for value, groups in sorted(winners.items()):
            ev = [(e, a) for e, a in self._pairs(evidence[(kind, key, value)])
                  if group_of[self.project_of(e) or ""] in groups]
            if len({e.session for e, _ in ev}) < MIN_SESSIONS:
                continue
            title = f"{key} via {value}" if kind == "binding" else f"{key} = {value}"
            sigs = list(dict.fromkeys(a.signature for _, a in ev))
            out.append(_build(kind, f"{key}={value}", title, [e for e, _ in ev], [a for _, a in ev], self.newest,
                              action_signature=sigs, iface=key, value=value))
        return out

    def recipes(self, priority_threshold: float = 0.0) -> list[Recipe]:
        """All recipes, highest priority first. Same episodes, same bytes out."""
        for unit in self.dirty:
            self.built[unit] = [(recipe, recipe._score) for recipe in self._build_unit(unit)]
        self.dirty.clear()
        ranked = []
        newest = self.newest
        for built in self.built.values():
            for recipe, (cost, sessions, last, outcome) in built:
                priority = round(_priority(cost, sessions, last, outcome, newest), 3)
                ranked.append((-priority, recipe.id, recipe, priority))
        ranked.sort(key=lambda r: (r[0], r[1]))
        out = []
        for _, _, recipe, priority in ranked:
            # Set without pydantic's validation (the value is a rounded float it computed itself).
            recipe.__dict__["priority"] = priority
            recipe.__dict__["below_threshold"] = priority < priority_threshold
            out.append(recipe)
        return out


def project_groups(projects) -> dict[str, str]:
    """Each project folder -> the outermost folder among them that holds it (a session started in a
    subfolder belongs to the project around it)."""
    ordered = sorted(projects, key=lambda p: (len(p), p))
    roots: list[str] = []
    group: dict[str, str] = {}
    for project in ordered:
        root = next((r for r in roots if r and project.startswith(r.rstrip("/") + "/")), None)
        if root is None:
            roots.append(project)
            root = project
        group[project] = root
    return group


def mine_recipes(episodes: Iterable[Episode], *, priority_threshold: float = 0.0,
                 project_of: Callable[[Episode], str | None] | None = None) -> list[Recipe]:
    """All recipes in `episodes`, highest priority first. Same episodes, same bytes out."""
    return RecipeIndex(episodes, project_of=project_of).recipes(priority_threshold)
