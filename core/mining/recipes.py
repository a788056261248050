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
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, Field

from core.mining.episodes import Action, Determinism, Episode

RecipeKind = Literal["intent", "binding", "world", "gate", "stub-wire"]

PHRASING_SIMILARITY = 0.6
"""Dice over stem bags at or above which two prompts ask for the same thing."""
CONSISTENT_SHARE = 0.5
"""An action belongs to an intent's signature when more than this share of its episodes (and at
least two) have it."""
MIN_SESSIONS = 2
"""A recipe must recur across sessions: once is an anecdote."""
MIN_STEMS = 2
"""Prompts like 'continue' or 'yes' carry no request of their own."""
RECENCY_HALF_LIFE_DAYS = 30.0
TRIVIAL = frozenset(f"{tool}: {head}" for tool in ("Bash", "bash") for head in (
    "ls", "cat", "head", "tail", "grep", "rg", "find", "echo", "pwd", "wc", "which", "tree", "sed", "awk", "sort",
    "diff", "git status", "git diff", "git log", "git show"))
"""Looking around is not how a request is answered: these never define an intent's signature."""
WORLD_AGREEMENT = 0.8


class Instance(BaseModel):
    session: str
    path: str
    line_start: int
    line_end: int


class Phrasing(BaseModel):
    text: str
    count: int


class Recipe(BaseModel):
    id: str
    kind: RecipeKind
    title: str
    priority: float
    below_threshold: bool = False
    sessions: int
    phrasings: list[Phrasing] = Field(default_factory=list)
    action_signature: list[str] = Field(default_factory=list)
    instances: list[Instance]
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    tool_calls: int = 0
    edit_rerun_cycles: int = 0
    retries: int = 0
    determinism: Determinism
    iface: str | None = None
    """binding: the dev-story iface; world: the world key."""
    value: str | None = None
    """binding: the provider seen (gh, git, beads, ...); world: the value; gate: the decision seen."""


class RecipesFile(BaseModel):
    """`.artifacts/mining/recipes.json`: the recipes of the latest pass, highest priority first."""

    recipes: list[Recipe]


SKIPPED = "-"
"""Episode.cluster of a prompt too short to ask for anything."""


def episode_key(ep: Episode) -> str:
    return f"{ep.session}|{ep.file}|{ep.line_start}"


def recipe_id(kind: str, key: str) -> str:
    return hashlib.sha256(f"{kind}\0{key}".encode()).hexdigest()[:16]


# -- intents -----------------------------------------------------------------------------------


def _intents(eps: list[Episode]) -> list[tuple[str, str, list[Episode], list[str]]]:
    """Greedy, order-stable clustering of prompts by stem-bag similarity against each cluster's seed.

    Candidates come from a prefix filter instead of comparing every pair: Dice(A, B) >= t needs an
    overlap of at least t·|A|/(2-t) stems, so with stems ordered rarest first, two bags that are
    similar enough must share one of the first |A| - ceil(t·|A|/(2-t)) + 1 stems of each.
    """
    t = PHRASING_SIMILARITY
    df = Counter(s for ep in eps for s in set(ep.stems))
    # Bags as bitmasks over the stem vocabulary: an intersection is one `&` and a popcount.
    bit = {s: 1 << i for i, s in enumerate(sorted(df))}

    def prefix(bag: list[str]) -> list[str]:
        ranked = sorted(bag, key=lambda s: (df[s], s))
        return ranked[: len(ranked) - math.ceil(t * len(ranked) / (2 - t)) + 1]

    seeds: list[tuple[int, int]] = []  # (mask, size)
    members: list[list[Episode]] = []
    seed_stems: list[list[str]] = []
    seed_of: dict[str, int] = {}
    index: dict[str, list[int]] = defaultdict(list)
    # Episodes keep the cluster a previous run gave them. Greedy clustering in time order only
    # depends on what came before, so those answers stand until the first episode that has none
    # (new, or older than what was clustered) or names a seed that is gone; from there on, probe.
    restoring = True
    for ep in eps:
        key = episode_key(ep)
        bag = sorted(set(ep.stems))
        if len(bag) < MIN_STEMS:
            ep.cluster = SKIPPED
            continue
        if restoring and not (ep.cluster == key or ep.cluster in seed_of):
            restoring = False
        if restoring:
            best = None if ep.cluster == key else seed_of[ep.cluster]
        else:
            best, best_score = None, t
            mask, size = sum(bit[s] for s in bag), len(bag)
            for cid in sorted({c for s in prefix(bag) for c in index.get(s, ())}):
                seed_mask, seed_size = seeds[cid]
                score = 2 * (mask & seed_mask).bit_count() / (size + seed_size)
                if score > best_score or (score == best_score and best is None):
                    best, best_score = cid, score
        if best is None:
            seed_of[key] = len(seeds)
            seeds.append((sum(bit[s] for s in bag), len(bag)))
            seed_stems.append(bag)
            members.append([ep])
            for s in prefix(bag):
                index[s].append(len(seeds) - 1)
            ep.cluster = key
        else:
            members[best].append(ep)
            ep.cluster = episode_key(members[best][0])
    out = []
    for seed, group in zip(seed_stems, members):
        if len({m.session for m in group}) < MIN_SESSIONS:
            continue
        counts = Counter(sig for m in group for sig in set(m.signature) if sig not in TRIVIAL)
        consistent = [s for s, n in counts.items() if n >= 2 and n / len(group) > CONSISTENT_SHARE]
        if not consistent:
            continue  # the same words, answered differently each time: not a recipe (yet)
        order = {s: i for i, s in enumerate(dict.fromkeys(s for m in group for s in m.signature))}
        consistent.sort(key=order.__getitem__)
        out.append((" ".join(sorted(seed)), group[0].phrasing, group, consistent))
    return out


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
_BUILD_HEADS = re.compile(r"^(go build|cargo build|npm run build|yarn build|pnpm build|make build|make|mix compile|"
                          r"dotnet build|mvn package|gradle build|tsc)\b")
_BASE_BRANCH = (
    re.compile(r"\bgh pr create\b.*?(?:--base|-B)[ =]([\w./-]+)"),
    re.compile(r"\bgit (?:rebase|merge)\b(?: -[-\w]+)* (?:origin/|upstream/)?([\w./-]+)\s*$"),
    re.compile(r"\bgit (?:diff|log)\b.*?\s(?:origin/)?([\w./-]+)\.\.\.?"),
    re.compile(r"\bgit checkout -b [\w./-]+ (?:origin/)?([\w./-]+)"),
)
_MERGE = re.compile(r"\bgh pr merge\b.*?--(squash|merge|rebase)\b")


def _head(action: Action) -> str | None:
    return action.signature.split(": ", 1)[1] if action.signature.startswith(("Bash: ", "bash: ")) else None


def _evidence(eps: list[Episode]) -> dict[tuple[str, str, str], list[tuple[Episode, Action]]]:
    """(kind, key, value) -> the actions that show it."""
    found: dict[tuple[str, str, str], list[tuple[Episode, Action]]] = defaultdict(list)
    for ep in eps:
        for action in ep.actions:
            head = _head(action)
            if head is None or action.rejected:
                continue
            for prefix, iface, provider in _PROVIDERS:
                if head == prefix or head.startswith(prefix + " "):
                    found[("binding", iface, provider)].append((ep, action))
                    break
            if _TEST_HEADS.match(head):
                found[("world", "test_cmd", head)].append((ep, action))
            elif _BUILD_HEADS.match(head):
                found[("world", "build_cmd", head)].append((ep, action))
            command = action.argument
            for pattern in _BASE_BRANCH:
                m = pattern.search(command)
                if m and m.group(1) not in ("HEAD", "-", "."):
                    found[("world", "base_branch", m.group(1))].append((ep, action))
                    break
            m = _MERGE.search(command)
            if m:
                found[("world", "merge_strategy", m.group(1))].append((ep, action))
    return found


def _dominant(found, kind: str) -> list[tuple[str, str, list[tuple[Episode, Action]]]]:
    """Per key, the value that wins at least WORLD_AGREEMENT of the evidence (bindings: per iface)."""
    by_key: dict[str, dict[str, list]] = defaultdict(dict)
    for (k, key, value), ev in found.items():
        if k == kind:
            by_key[key][value] = ev
    out = []
    for key, values in by_key.items():
        total = sum(len(v) for v in values.values())
        value, ev = max(values.items(), key=lambda kv: (len(kv[1]), kv[0]))
        if len(ev) / total >= WORLD_AGREEMENT and len({e.session for e, _ in ev}) >= MIN_SESSIONS:
            out.append((key, value, ev))
    return out


# -- gates -------------------------------------------------------------------------------------


def _gates(eps: list[Episode]) -> list[tuple[str, str, list[tuple[Episode, Action]]]]:
    """A person deciding at the same action again and again: rejecting it, or being asked."""
    found: dict[tuple[str, str], list[tuple[Episode, Action]]] = defaultdict(list)
    for ep in eps:
        for action in ep.actions:
            if action.rejected:
                found[(action.signature, "rejected")].append((ep, action))
            elif action.interrupted:
                found[(action.signature, "interrupted")].append((ep, action))
            elif action.tool in ("AskUserQuestion", "ExitPlanMode"):
                found[(action.tool, "asked")].append((ep, action))
    return [(sig, decision, ev) for (sig, decision), ev in found.items()
            if len({e.session for e, _ in ev}) >= MIN_SESSIONS]


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
    priority = cost * math.log2(1 + sessions) * (0.5 + 0.5 * _recency(last, newest)) * (0.5 + 0.5 * outcome)
    gated = sum(1 for e in eps if e.determinism is Determinism.agent_gated)
    if actions is not None:
        instances = [Instance(session=e.session, path=a.file, line_start=a.line, line_end=a.line)
                     for e, a in zip(episodes, actions)]
    else:
        instances = [Instance(session=e.session, path=e.file, line_start=e.line_start, line_end=e.line_end)
                     for e in eps]
    instances.sort(key=lambda i: (i.path, i.line_start, i.session))
    return Recipe(
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
        determinism=Determinism.agent_gated if kind == "gate" or gated * 2 > len(eps) else
        (Determinism.deterministic if kind in ("binding", "world") or any(e.actions for e in eps)
         else Determinism.irreducible),
        **fields,
    )


def mine_recipes(episodes: Iterable[Episode], *, priority_threshold: float = 0.0) -> list[Recipe]:
    """All recipes in `episodes`, highest priority first. Same episodes, same bytes out."""
    eps = sorted(episodes, key=lambda e: (e.timestamp or datetime.min.replace(tzinfo=timezone.utc),
                                          e.session, e.file, e.line_start))
    newest = max((e.timestamp for e in eps if e.timestamp), default=None)
    recipes: list[Recipe] = []
    for key, title, members, signature in _intents(eps):
        counts = Counter(m.phrasing for m in members)
        recipes.append(_build(
            "intent", key, title, members, None, newest,
            phrasings=[Phrasing(text=t, count=n) for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))],
            action_signature=signature,
        ))
    found = _evidence(eps)
    for kind in ("binding", "world"):
        for key, value, ev in _dominant(found, kind):
            title = f"{key} via {value}" if kind == "binding" else f"{key} = {value}"
            sigs = list(dict.fromkeys(a.signature for _, a in ev))
            recipes.append(_build(kind, f"{key}={value}", title, [e for e, _ in ev], [a for _, a in ev], newest,
                                  action_signature=sigs, iface=key, value=value))
    for sig, decision, ev in _gates(eps):
        recipes.append(_build("gate", f"{sig}|{decision}", f"{decision} at {sig}", [e for e, _ in ev],
                              [a for _, a in ev], newest, action_signature=[sig], value=decision))
    for recipe in recipes:
        recipe.below_threshold = recipe.priority < priority_threshold
    recipes.sort(key=lambda r: (-r.priority, r.id))
    return recipes
