"""The router replayed before and after a draft (the live inventory against the staged one) over the
corpus (core.proposals.impact.corpus): what the draft gains and what it moves. Exact and incremental:
only the inputs that hold every stem of a phrase the draft adds or removes can route differently."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.kitsoki.config import CONFIG_FILE
from core.kitsoki.model import Story, Workspace
from core.proposals.impact import FREE_FORM, MAX_LISTED, ROUTED, Gain, Impact, Move
from core.proposals.impact.corpus import Corpus, Input, file_stamp, fixture_inputs, flow_files, past_prompts

if TYPE_CHECKING:
    from core.kitsoki.inventory import Inventory
    from core.kitsoki.routing import Router


def _phrases(rows) -> dict[str, dict[str, set[tuple[str, str]]]]:
    out: dict[str, dict[str, set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
    for row in rows:
        out[row.story][row.name].update((p.kind, p.text) for p in row.phrases)
    return out


def _route(router: Router, text: str) -> str | None:
    verdict = router.route(text)
    return verdict.intent if verdict.intent is not None and verdict.confidence >= ROUTED else None


def replay(model: Workspace, live: Inventory, staged: Inventory, routers: dict[str, Router] | None = None,
           before_corpus: Corpus | None = None) -> Impact:
    """Gains and moves of the staged inventory against the live one (see the module's doc)."""
    from core.kitsoki.routing import Router, content_stems
    from core.kitsoki.routing.templates import is_template

    # Rows a staged inventory shares with the live one (the same objects) are unchanged: only the stories
    # with rows of their own on either side are compared.
    baseline = _baseline(live)
    staged_ids = {id(r) for r in staged.intents}
    touched = ({r.story for r in staged.intents if id(r) not in baseline.ids}
               | {r.story for r in live.intents if id(r) not in staged_ids})
    before = {story: baseline.phrases[story] for story in touched if story in baseline.phrases}
    after = _phrases([r for r in staged.intents if r.story in touched])
    changed_stories = sorted(s for s in set(before) | set(after) if before.get(s, {}) != after.get(s, {}))
    impact = Impact()
    if not changed_stories:
        return impact
    prompts = before_corpus if before_corpus is not None else past_prompts(model.path)
    for story in changed_stories:
        old, new = before.get(story, {}), after.get(story, {})
        added_to = sorted(name for name in new if new[name] - old.get(name, set()))
        changed: list[tuple[str, str]] = []
        for name in set(old) | set(new):
            changed.extend(old.get(name, set()) ^ new.get(name, set()))
        extra = _extra_corpus(model, live, story, tuple(added_to))
        impact.replayed += len(prompts.inputs) + len(extra.inputs)
        impact.prompts += sum(i.count for i in prompts.inputs)
        candidates: list[Input] = []
        everything = any(kind == "synonym" and is_template(text) for kind, text in changed)
        for source in (prompts, extra):
            ids: set[int] = set(range(len(source.inputs))) if everything else set()
            if not everything:
                for _, text in changed:
                    ids |= source.holding(content_stems(text))
            candidates.extend(source.inputs[i] for i in sorted(ids))
        if not candidates:
            continue
        live_rows = baseline.rows.get(story, [])
        staged_rows = [row for row in staged.intents if row.story == story]
        router_before = (routers or {}).get(story) or Router(live_rows, strict=False)
        router_after = Router(staged_rows, strict=False)
        for item in candidates:
            was, now = _route(router_before, item.text), _route(router_after, item.text)
            if was == now:
                continue
            label = (lambda name: f"{story}:{name}" if name else FREE_FORM)
            if was is None and now in added_to:
                impact.gained.append(Gain(text=item.text, count=item.count, source=item.source, to=label(now)))
            else:
                impact.moved.append(Move(text=item.text, from_=label(was), to=label(now), source=item.source,
                                         count=item.count))
    impact.gained.sort(key=lambda g: (-g.count, g.text))
    impact.moved.sort(key=lambda m: (not m.source.startswith("fixture"), -m.count, m.text))
    del impact.gained[MAX_LISTED:]
    del impact.moved[MAX_LISTED:]
    return impact


@dataclass
class _Baseline:
    """What every draft's replay reads of the live inventory, made once per inventory: its rows' ids, its
    rows by story and their phrases by story and intent (as `_phrases` makes them)."""

    live: object
    ids: set[int]
    rows: dict[str, list]
    phrases: dict[str, dict[str, set[tuple[str, str]]]]


_BASELINES: dict[int, _Baseline] = {}


def _baseline(live: Inventory) -> _Baseline:
    hit = _BASELINES.get(id(live))
    if hit is not None and hit.live is live and len(hit.ids) == len(live.intents):
        return hit
    rows: dict[str, list] = defaultdict(list)
    for row in live.intents:
        rows[row.story].append(row)
    made = _Baseline(live, {id(r) for r in live.intents}, dict(rows), dict(_phrases(live.intents)))
    if len(_BASELINES) > 8:
        _BASELINES.clear()
    _BASELINES[id(live)] = made
    return made


_EXTRA: dict[tuple, tuple[Inventory, tuple, Corpus]] = {}


def _extra_corpus(model: Workspace, live: Inventory, story: str, added_to: tuple[str, ...]) -> Corpus:
    """The app's fixture inputs and its other intents' phrases, tokenized once per live inventory and
    fixture versions (a warm pass builds nothing)."""
    files = flow_files(model, story)
    stamps = tuple((str(p), file_stamp(p)) for p in files)
    if added_to and not any(row.story == story and row.name in added_to for row in live.intents):
        # the intents it adds phrasings to are new (as a new room's is): every live row counts, as with none
        added_to = ()
    key = (id(live), story, added_to)
    hit = _EXTRA.get(key)
    if hit is not None and hit[0] is live and hit[1] == stamps:
        return hit[2]
    extra = Corpus()
    for path in files:
        for text, where in fixture_inputs(path, model.path):
            extra.add(text, 1, f"fixture {where}")
    for row in live.intents:
        if row.story != story or row.name in added_to:
            continue
        for phrase in row.phrases:
            if "{" not in phrase.text:
                extra.add(phrase.text, 1, f"{phrase.kind} of {story}:{row.name}")
    if len(_EXTRA) > 64:
        _EXTRA.clear()
    _EXTRA[key] = (live, stamps, extra)
    return extra


@dataclass
class _Phrase:
    text: str
    kind: str


@dataclass
class _Row:
    """An intent row of a reloaded story, as the router and the replay read it (no pydantic: it is built
    for every story a draft reloads)."""

    story: str
    name: str
    examples: list[str]
    synonyms: list[str]
    slots: dict
    phrases: list[_Phrase]
    source: str = "story"


def _light_rows(story: Story, name: str) -> list[_Row]:
    rows = []
    for intent_name, (examples, synonyms, slots) in _intent_phrases(story):
        examples, synonyms = list(examples), list(synonyms)
        rows.append(_Row(story=name, name=intent_name, examples=examples, synonyms=synonyms, slots=dict(slots),
                         phrases=[_Phrase(t, "example") for t in examples] + [_Phrase(t, "synonym") for t in synonyms]))
    return rows


_PHRASES: dict[tuple[int, str], tuple[object, tuple]] = {}
"""(id of an intent's spec in a loaded definition, its name) -> (the spec, held so its id is not reused;
(examples, synonyms, slots) as build_intent makes them). Parsed trees are never mutated and an import's
fold returns the same intent object while nothing it asked changed (core.kitsoki.statememo), so the
intents a draft did not touch are the same objects in every staged tree of a pass: their rows are
made once, not once per draft (Story.all_intents builds every intent model of every reloaded story)."""


def _intent_phrases(story: Story) -> Iterable[tuple[str, tuple]]:
    """(name, (examples, synonyms, slots)) of every intent of `story`, in Story.all_intents' order."""
    from core.kitsoki.build import build_intent, state_specs, unbuilt_definition
    from core.kitsoki.parse import LMap

    definition = unbuilt_definition(story)
    if definition is None or story._realized().get("_intent_list") is not None:
        # its states are built, or its intents were listed already: read the models it has
        for intent in story.all_intents():
            yield intent.name, (intent.examples, intent.synonyms, intent.slots)
        return
    # build._intent_list's walk (the story's intents, then each state's own), memoized by spec
    top = definition.get("intents") if isinstance(definition.get("intents"), LMap) else LMap()
    specs = [(name, spec, top, None) for name, spec in top.items()]
    for path, state in state_specs(definition).items():
        local = state.get("intents") if isinstance(state.get("intents"), LMap) else LMap()
        specs.extend((name, spec, local, path) for name, spec in local.items())
    for name, spec, block, path in specs:
        key = (id(spec), name)
        hit = _PHRASES.get(key) if isinstance(spec, LMap) else None
        if hit is not None and hit[0] is spec:
            yield name, hit[1]
            continue
        intent = build_intent(name, spec, block.at, path, frozenset())  # where and lifted: not read here
        found = (intent.examples, intent.synonyms, intent.slots)
        if isinstance(spec, LMap):
            if len(_PHRASES) > 20_000:
                _PHRASES.clear()
            _PHRASES[key] = (spec, found)
        yield name, found


def staged_intents(model: Workspace, live: Inventory, staged: Workspace, files: dict[str, bytes]) -> Inventory:
    """The staged tree's intent rows, built only for the stories the draft reloaded (an unchanged story is
    the same object in both trees); the rest are the live inventory's. A change to `.kitsoki.yaml` (the
    root instance's synonyms) builds the whole staged inventory."""
    from core.kitsoki.inventory import ROOT_INSTANCE, Inventory, build_inventory

    from core.kitsoki.inventory import _root_rows

    if CONFIG_FILE in files:
        return build_inventory(staged)
    same = {id(story) for story in model.stories}
    changed = [story for story in staged.stories if id(story) not in same]
    names = {story.slug for story in changed}
    root = staged.root_instance is not model.root_instance
    # the root instance's own rows are rebuilt when it was (its override synonyms come from the unchanged config)
    rows = [row for row in live.intents
            if row.story not in names and not (root and row.story == ROOT_INSTANCE and row.source != "override")]
    if root:
        rows.extend(_root_rows(staged))
    for story in changed:
        rows.extend(_light_rows(story, story.slug))
    return Inventory.model_construct(workspace=live.workspace, intents=rows, agent_calls=[], gates=[], bindings=[],
                                     world=[])
