"""The mapper: is a recipe ALREADY-MODELED, close to something (ENRICH), or new (GAP)?

Deterministic and documented (README, "How a recipe is mapped"):

- intent: each of the recipe's phrasings is routed, as kitsoki would route it (core.kitsoki.routing:
  exact example, stem-bag synonym, template), against the root instance (dev-story's intents plus
  `root.overrides.synonyms`) and against every story. A route counts only when it is strong: an exact
  example; a synonym or example whose own ask covers every thing the phrasing acts on, of the same kind of
  request ("push" does not model "push the release"; "update docs" does not model "update the docs
  screenshots"); a template with every slot parsed to a short value and its literal words covering the
  rest ("run {manifest_path}" does not take a sentence). When phrasings asked at least ROUTED_SHARE of the
  time route strongly to one intent at confidence >= ROUTE_CONFIDENCE, it is ALREADY-MODELED. When some
  do, or one of an intent's phrases asks what the recipe asks (core/mining/clusters.py's similarity, every
  thing acted on covered), it is ENRICH of that intent. Otherwise GAP.
- binding: ALREADY-MODELED when the interface is already bound to the handler the provider needs
  (an override, or dev-story's default provider already covers it); a provider dev-story has no
  handler for is a suggestion to enrich dev-story (never applied); otherwise GAP (ENRICH when an
  override binds the interface to something else).
- world: ALREADY-MODELED when the override, or dev-story's default, already has the value; ENRICH
  when an override holds another value; GAP otherwise.
- gate: compared with the inventory's gates (states with two or more advancing intents or a decider):
  the share of the action's words (tool and runner names dropped) that the state's name, description
  and intents mention, at least GATE_SIMILARITY; ties go to a state with an explicit decider; a close gate whose decider is already
  human is ALREADY-MODELED, a close gate decided otherwise is ENRICH, nothing close is GAP.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from core.kitsoki.config import DEV_STORY_WORLD_KEYS
from core.kitsoki.inventory import ROOT_INSTANCE, GateRow, IntentRow, Inventory
from core.kitsoki.routing import Router, content_stems, tokenize
from core.mining.asks import understand
from core.mining.clusters import ASK_SIMILARITY, Cluster, similarity
from core.mining.lexicon import FILLER
from core.mining.recipes import Phrasing, Recipe
from core.proposals.model import Mapping

ROUTE_CONFIDENCE = 0.8
"""Exact (1.0), bare synonym (0.9) and fully parsed template (0.8) hits count as routed."""
ROUTED_SHARE = 0.5
SLOT_TOKENS = 4
"""A template slot holds a value (a name, a number, a path), not a sentence: longer captures are not a route."""
GATE_SIMILARITY = 0.5
"""Share of an action's words a gate must mention to be that action's gate."""

# (iface, provider as the miner names it) -> the dev-story handler for it (reference/dev-story-facts.md).
PROVIDER_HANDLERS: dict[tuple[str, str], str] = {
    ("ticket", "gh"): "host.gh.ticket",
    ("ticket", "local"): "host.local_files.ticket",
    ("vcs", "git"): "host.git",
    ("vcs", "gh"): "host.git",  # host.git's operations include open_pr, pr_status, pr_comment, merge
    ("workspace", "git-worktree"): "host.git_worktree",
    ("transport", "file"): "host.append_to_file",
}

DEV_STORY_WORLD_DEFAULTS: dict[str, object] = {
    "base_branch": "main", "merge_strategy": "squash", "judge_mode": "human", "test_cmd": "", "build_cmd": "",
    "bugfix_mode": "full", "bugfix_destination": "open-pr", "issue_source": "origin",
}
"""The defaults of the world keys the miner infers (reference/dev-story-facts.md)."""

_PLACEHOLDER = re.compile(r"<\w+>")


def _words(text: str) -> frozenset[str]:
    return content_stems(_PLACEHOLDER.sub(" ", text.replace("_", " ").replace(".", " ")))


def _dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


@dataclass
class Routers:
    """One router per story (and one for the root instance), compiled once per proposer pass."""

    inventory: Inventory
    by_story: dict[str, Router] = field(default_factory=dict)
    rows: dict[tuple[str, str], IntentRow] = field(default_factory=dict)
    _asks: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] | None = None

    @property
    def asks(self) -> dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]]:
        """(story, intent) -> (phrase, what it asks) for every example and plain synonym: understood when a
        recipe that routes nowhere is first compared with them (most passes never need it)."""
        if self._asks is None:
            asks: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] = {}
            for row in self.inventory.intents:
                found = asks.setdefault((row.story, row.name), [])
                found.extend((p.text, terms) for p in row.phrases if "{" not in p.text and (terms := _terms_of(p.text)))
            self._asks = asks
        return self._asks

    @classmethod
    def build(cls, inventory: Inventory) -> Routers:
        """The routers of an inventory, compiled once per inventory (an unchanged workspace keeps
        the same inventory object, so a warm pass reuses them)."""
        cached = _ROUTERS.get(id(inventory))
        if cached is not None and cached.inventory is inventory:
            return cached
        routers = cls._compile(inventory)
        if len(_ROUTERS) >= 8:
            _ROUTERS.clear()
        _ROUTERS[id(inventory)] = routers
        return routers

    @classmethod
    def _compile(cls, inventory: Inventory) -> Routers:
        routers = cls(inventory)
        grouped: dict[str, list[IntentRow]] = defaultdict(list)
        for row in inventory.intents:
            grouped[row.story].append(row)
            routers.rows.setdefault((row.story, row.name), row)
        for story, rows in grouped.items():
            routers.by_story[story] = Router(rows, strict=False)
        return routers


_ROUTERS: dict[int, Routers] = {}

_REDACTION: re.Pattern[str] | None = None


def _redaction() -> re.Pattern[str]:
    """core.transcripts.redact's placeholders: where a transcript held a secret. Compiled when a text first
    holds "[REDACTED:" (importing the redaction rule set is a few tens of milliseconds a propose seldom needs)."""
    global _REDACTION
    if _REDACTION is None:
        from core.transcripts.redact import KINDS

        _REDACTION = re.compile(r"\[REDACTED:(?:" + "|".join(re.escape(kind) for kind in KINDS) + r")\]")
    return _REDACTION


def holds_redaction(text: str) -> bool:
    return "[REDACTED:" in text and _redaction().search(text) is not None


def usable_phrasings(recipe: Recipe) -> list[Phrasing]:
    """The recipe's phrasings a draft may use: none that held a secret (its placeholder is not what a
    person types, and a synonym must never carry one)."""
    return [p for p in recipe.phrasings if not holds_redaction(p.text)]


def without_redactions(text: str) -> str:
    """`text` with redaction placeholders dropped (for titles and descriptions, never phrases)."""
    return " ".join(_redaction().sub(" ", text).split()) if holds_redaction(text) else text


def map_recipe(recipe: Recipe, routers: Routers) -> Mapping:
    if recipe.kind == "intent":
        return _map_intent(recipe, routers)
    if recipe.kind == "binding":
        return _map_binding(recipe, routers.inventory)
    if recipe.kind == "world":
        return _map_world(recipe, routers.inventory)
    if recipe.kind == "gate":
        return _map_gate(recipe, routers.inventory)
    return Mapping(classification="GAP", score=0.0, reason=f"{recipe.kind} recipes are not compared with the inventory")


def _where(row) -> str | None:
    return str(row.at) if row is not None and row.at is not None else None


def _terms_of(text: str) -> tuple[str, ...]:
    return _TERMS.get(text) or _TERMS.setdefault(text, understand(text).terms)


_TERMS: dict[str, tuple[str, ...]] = {}


def _objects(terms) -> frozenset[str]:
    return _parts(terms)[0]


def _parts(terms) -> tuple[frozenset[str], bool]:
    """(the things `terms` acts on, whether it names a general thing), once per terms (a mapping compares a
    recipe with every phrase of the workspace)."""
    found = _PARTS.get(terms)
    if found is None:
        if len(_PARTS) > 100_000:
            _PARTS.clear()
        found = _PARTS[terms] = (frozenset(t for t in terms if t.startswith("o:")),
                                 any(t.startswith("g:") for t in terms))
    return found


_PARTS: dict = {}


def _covered(mine, theirs) -> bool:
    """Every thing `mine` acts on is one `theirs` acts on; a general thing ("the release", "the build") may
    stand for another, but not for none: "push" does not stand for "push the release"."""
    mine_objects, mine_general = _parts(mine)
    theirs_objects, theirs_general = _parts(theirs)
    return mine_objects <= theirs_objects and (not mine_general or theirs_general)


def _kind(terms) -> str | None:
    return next((t for t in terms if t.startswith("k:")), None)


def _covers(pattern: str, text: str) -> bool:
    """The pattern asks all that the text asks: every thing the text acts on, the same kind of request; for an
    ask of no object, every content word but filler."""
    mine, theirs = _terms_of(text), _terms_of(pattern)
    if _objects(mine):
        if not _covered(mine, theirs):
            return False
        return _kind(mine) is None or _kind(theirs) is None or _kind(mine) == _kind(theirs)
    words = {t.norm for t in tokenize(text) if not t.is_stop and t.surface not in FILLER}
    return words <= {t.norm for t in tokenize(pattern) if not t.is_stop}


def strong_route(verdict, text: str) -> bool:
    """kitsoki routes `text` this way, and on the strength of what the text asks, not of a word it shares."""
    if verdict.tier == "exact":
        return True
    if verdict.tier == "synonym":
        return verdict.pattern is not None and _covers(verdict.pattern, text)
    if verdict.tier == "template" and not verdict.missing_slots and verdict.pattern:
        rest = text.lower()
        for value in verdict.slots.values():
            if isinstance(value, str):
                if len(tokenize(value)) > SLOT_TOKENS:
                    return False
                rest = rest.replace(value.lower(), " ")
        return _covers(_SLOT.sub(" ", verdict.pattern), rest)
    return False


_SLOT = re.compile(r"\{\w+\}")


def _map_intent(recipe: Recipe, routers: Routers) -> Mapping:
    phrasings = usable_phrasings(recipe)
    total = sum(p.count for p in phrasings) or 1
    routed: dict[tuple[str, str], int] = defaultdict(int)
    example: dict[tuple[str, str], str] = {}
    weak: list[str] = []
    for phrasing in phrasings:
        text = " ".join(_PLACEHOLDER.sub(" ", phrasing.text).split())
        if not text:
            continue
        for story, router in routers.by_story.items():
            verdict = router.route(text)
            if verdict.intent is not None and verdict.confidence >= ROUTE_CONFIDENCE:
                key = (story, verdict.intent)
                if not strong_route(verdict, text):
                    if len(weak) < 3:
                        weak.append(f'"{phrasing.text}" only shares words with {story}:{verdict.intent} '
                                    f"({verdict.reason})")
                    continue
                routed[key] += phrasing.count
                example.setdefault(key, f'"{phrasing.text}" routes to {story}:{verdict.intent} ({verdict.reason})')
            elif verdict.intent is None and (owners := router.exact_owners(text)):
                # An example of several intents: kitsoki routes it by the room (only one is allowed
                # there), so it is modeled all the same.
                key = (story, owners[0])
                routed[key] += phrasing.count
                example.setdefault(key, f'"{phrasing.text}" is an example of {story}:{" and ".join(owners)} '
                                        "(the room decides which)")
    if routed:
        # Ties go to the project's own story: it is what the project models for itself.
        key, count = max(routed.items(), key=lambda kv: (kv[1], kv[0][0] != ROOT_INSTANCE, kv[0]))
        share = count / total
        row = routers.rows.get(key)
        if share >= ROUTED_SHARE:
            return Mapping(classification="ALREADY-MODELED", score=round(share, 3), near=f"{key[0]}:{key[1]}",
                           near_at=_where(row), reason=f"{example[key]}; {count} of {total} asks route there")
        return Mapping(classification="ENRICH", score=round(share, 3), near=f"{key[0]}:{key[1]}", near_at=_where(row),
                       reason=f"{example[key]}, but only {count} of {total} asks do: the others need its phrasings")
    title = without_redactions(recipe.title)
    # Does one of an intent's phrases ask what the recipe asks? The recipe's core (what most of its
    # phrasings ask) against each phrase, every thing it acts on covered.
    core = Cluster()
    for phrasing in phrasings:
        for _ in range(phrasing.count):
            core.add(_terms_of(phrasing.text))
    objects = frozenset(core.core()[0]) & frozenset(t for t in core.objects if t.startswith("o:"))
    kind = core.core()[2]
    core_terms = frozenset(core.core()[0])
    best_key, best, best_phrase = None, 0.0, ""
    if objects:
        said = _words(phrasings[0].text) if phrasings else frozenset()
        best_rank = (0.0, 0.0)
        for key, asks in sorted(routers.asks.items()):
            for phrase, terms in asks:
                # The same kind of request ("version control" is not "bump the version"), every thing acted on covered.
                if not _covered(core_terms, terms) or _kind(terms) != kind:
                    continue
                score = similarity(terms, core)
                rank = (score, _dice(said, _words(phrase)))  # ties: the phrase that shares most words
                if rank > best_rank:
                    best_key, best, best_phrase, best_rank = key, score, phrase, rank
    if best_key is not None and best >= ASK_SIMILARITY:
        return Mapping(classification="ENRICH", score=round(best, 3), near=f"{best_key[0]}:{best_key[1]}",
                       near_at=_where(routers.rows.get(best_key)),
                       reason=f'"{title}" asks what {best_key[0]}:{best_key[1]}\'s "{best_phrase}" asks '
                              f"(similarity {best:.2f}) but does not route to it")
    near = f"{best_key[0]}:{best_key[1]}" if best_key else None
    why = f" ({'; '.join(weak)})" if weak else ""
    return Mapping(classification="GAP", score=round(best, 3), near=near,
                   reason=f'no intent models "{title}"{why}')


def _map_binding(recipe: Recipe, inventory: Inventory) -> Mapping:
    iface, provider = recipe.iface or "", recipe.value or ""
    handler = PROVIDER_HANDLERS.get((iface, provider))
    row = inventory.binding(iface)
    bound = f"bindings.{iface}"
    if handler is None:
        return Mapping(classification="GAP", score=0.0, near=bound, near_at=_where(row),
                       reason=f"the transcripts use {provider} for {iface}, and dev-story has no {iface} provider for "
                              f"it: a suggestion for dev-story, not a change to this project")
    if row is not None and row.handler == handler:
        how = {"override": "is bound to", "profile": "is bound by the project profile to"}.get(row.source, "defaults to")
        return Mapping(classification="ALREADY-MODELED", score=1.0, near=bound, near_at=_where(row),
                       reason=f"{iface} {how} {handler}, which is what {provider} needs")
    if row is not None and row.source in ("override", "profile"):
        return Mapping(classification="ENRICH", score=0.5, near=bound, near_at=_where(row),
                       reason=f"{iface} is bound to {row.handler}, but the transcripts use {provider} ({handler})")
    return Mapping(classification="GAP", score=0.0, near=bound,
                   reason=f"{iface} uses dev-story's default {row.handler if row else '?'}; the transcripts use "
                          f"{provider} ({handler})")


COMMAND_KEYS = frozenset({"test_cmd", "build_cmd"})
"""World keys that hold a command line (the mined value is the command's head, its arguments left out)."""


def _narrows(current: str, mined: str) -> bool:
    """Whether `current` is the mined command with arguments after it (`go test ./...` over `go test`)."""
    words, head = current.split(), mined.split()
    return len(words) > len(head) > 0 and words[:len(head)] == head


def _map_world(recipe: Recipe, inventory: Inventory) -> Mapping:
    key, value = recipe.iface or "", recipe.value
    row = inventory.world_value(key)
    near = f"world.{key}"
    if key not in DEV_STORY_WORLD_KEYS:
        return Mapping(classification="GAP", score=0.0, near=near,
                       reason=f"{key} is not a dev-story world key: a suggestion for dev-story")
    if row is not None:
        setting = (f"world.{key} (set by the project profile, .kitsoki/project-profile.yaml)" if row.source == "profile"
                   else f"root.overrides.world.{key}")
        if str(row.value) == str(value):
            return Mapping(classification="ALREADY-MODELED", score=1.0, near=near, near_at=_where(row),
                           reason=f"{setting} is already {value!r}")
        if key in COMMAND_KEYS and _narrows(str(row.value), str(value)):
            # the transcripts' runs were reduced to their head (`go test ./services/x/...` -> `go test`): the
            # setting with its arguments runs what they ran; the bare head would drop them (`go test` alone
            # tests one package)
            return Mapping(classification="ALREADY-MODELED", score=1.0, near=near, near_at=_where(row),
                           reason=f"{setting} is {row.value!r}, which runs {value!r} with the arguments this "
                                  "project needs; the transcripts' runs are its own")
        return Mapping(classification="ENRICH", score=0.5, near=near, near_at=_where(row),
                       reason=f"{setting} is {row.value!r}; the transcripts consistently use {value!r}")
    if key in DEV_STORY_WORLD_DEFAULTS and str(DEV_STORY_WORLD_DEFAULTS[key]) == str(value):
        return Mapping(classification="ALREADY-MODELED", score=1.0, near=near,
                       reason=f"dev-story's default for {key} is already {value!r}")
    return Mapping(classification="GAP", score=0.0, near=near,
                   reason=f"{key} is not set; the transcripts consistently use {value!r}")


_RUNNERS = frozenset(content_stems(
    "bash sh zsh make npm npx yarn pnpm uv uvx python python3 node go cargo poetry bundle exec run script scripts"))


def gate_words(gate: GateRow) -> frozenset[str]:
    return _words(" ".join([gate.state, gate.description, *gate.intents]))


def action_words(signature: list[str]) -> frozenset[str]:
    """What an action does, without the tool and runner names every command shares."""
    words = frozenset().union(*(_words(s.split(": ", 1)[-1].replace("/", " ")) for s in signature)) if signature \
        else frozenset()
    return words - _RUNNERS or words


def _map_gate(recipe: Recipe, inventory: Inventory) -> Mapping:
    # Share of the action's words the gate's state, description and intents mention; ties go to
    # states with an explicit decider (a declared decision point), then to the tighter match.
    words = action_words(recipe.action_signature)
    best, best_key, best_score = None, None, 0.0
    for gate in inventory.gates:
        mentioned = gate_words(gate)
        score = len(words & mentioned) / len(words) if words else 0.0
        key = (score, gate.decider is not None, _dice(words, mentioned))
        if score > 0 and (best_key is None or key > best_key):
            best, best_key, best_score = gate, key, score
    decision = recipe.value or "decided"
    if best is not None and best_score >= GATE_SIMILARITY:
        near = f"{best.story}:{best.state}"
        if best.decider == "human":
            return Mapping(classification="ALREADY-MODELED", score=round(best_score, 3), near=near, near_at=str(best.at),
                           reason=f"{near} already asks a human (decider: human) at this decision")
        return Mapping(classification="ENRICH", score=round(best_score, 3), near=near, near_at=str(best.at),
                       reason=f"{near} is the gate for this action but is decided by "
                              f"{best.decider or 'the run mode'}; people {decision} it")
    return Mapping(classification="GAP", score=round(best_score, 3),
                   reason=f"no gate asks a human before {', '.join(recipe.action_signature) or recipe.title}; "
                          f"people {decision} it")
