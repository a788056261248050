"""Impact before accept: what a draft would have done to this project's past prompts and fixtures.

For every proposal the router is replayed, before and after the draft (the live inventory against
the staged one), over three kinds of input:

- this workspace's own mined prompts (people's asks, not programs', deduplicated on the ask as the
  miner normalized and redacted it, with how often each was asked and the session it came from);
- every flow fixture's `input:` line of the apps whose routing changes (file:line);
- the examples and synonyms of every other intent of those apps.

What the draft **gains** are inputs that did not route to the intents it adds phrasings to and now do;
what it **moves** are inputs that routed to another intent (or to nothing: kitsoki's free-form
fallback) and now route elsewhere. A move is a route someone relied on changing under them, so a
draft that moves routes is labelled and ranked below those that do not, and the drafter first tries a
narrower phrasing (one of the ask's own phrasings that says more) that gains without moving.

A change that moves no phrase (a world key, a binding, a decider) reports who reads what it changes
instead: the states and flow fixtures that read the world key, invoke the interface or rest in the
state, with file:line.

Replay is exact and incremental: an input whose stems do not hold every stem of some phrase the draft
adds or removes is routed by the same entries before and after (kitsoki's stem-bag and exact tiers
only consider entries whose stems the input holds), so only the inputs that could change are routed
again; the corpus (prompts, fixtures) is read once per file version and kept in memory.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from core.kitsoki.build import state_lines
from core.kitsoki.config import CONFIG_FILE
from core.kitsoki.model import Story, Workspace
from core.kitsoki.story import relative

if TYPE_CHECKING:
    from core.kitsoki.inventory import Inventory
    from core.kitsoki.routing import Router

# The replay's machinery (inventory, router) is imported by the functions that replay: `Impact` is a
# field of every proposal, and reading a staged proposal must not load the router.

FREE_FORM = "free-form"
"""Where an input routed to no intent goes: kitsoki hands it to the agent as a free-form ask."""
ROUTED = 0.65
"""A verdict at or above this confidence is a route (kitsoki's partial-template band and up)."""
MAX_LISTED = 50
"""Gains, moves and readers listed per card (the counts cover all of them)."""
NARROWER_TRIES = 3


class Gain(BaseModel, defer_build=True):
    text: str
    count: int
    source: str = ""
    """Where the first instance came from: `session <id> <file>:<line>`, `fixture <file>:<line>`, `example of ...`."""
    to: str = ""
    """`story:intent` it now routes to."""


class Move(BaseModel, defer_build=True):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    text: str
    from_: str = Field(alias="from")
    """`story:intent` it routes to today, or `free-form`."""
    to: str
    source: str
    count: int = 1


class Reader(BaseModel, defer_build=True):
    """A state or flow fixture that reads what a rung-1 (or decider) change sets."""

    kind: Literal["state", "flow"]
    where: str
    """file:line."""
    what: str
    """The state's path, or what the fixture does there."""


class Impact(BaseModel, defer_build=True):
    replayed: int = 0
    """Distinct inputs replayed through the router (prompts, fixture inputs, other intents' phrases)."""
    prompts: int = 0
    """How many past prompts (with repeats) those inputs stand for."""
    gained: list[Gain] = Field(default_factory=list)
    moved: list[Move] = Field(default_factory=list)
    reads: list[Reader] = Field(default_factory=list)
    """Who reads a world key / invokes an interface / rests in a state the change sets."""
    narrower: list[str] = Field(default_factory=list)
    """What the drafter tried before this draft, and why it did not keep it."""
    note: str = ""

    @property
    def moves_routes(self) -> bool:
        return bool(self.moved)

    def gained_prompts(self) -> int:
        return sum(g.count for g in self.gained if g.source.startswith("session "))

    def headline(self) -> str:
        """One line for a card: what accepting it would have done."""
        if self.note and not self.replayed and not self.reads:
            return self.note
        parts = []
        if self.replayed:
            past = self.gained_prompts()
            parts.append(f"replayed {self.replayed} inputs: gains {len(self.gained)}"
                         + (f" ({past} past prompts)" if past else ""))
            parts.append(f"MOVES {len(self.moved)} ROUTE" + ("" if len(self.moved) == 1 else "S") if self.moved
                         else "moves no route")
        if self.reads:
            parts.append(f"read by {len(self.reads)} " + ("place" if len(self.reads) == 1 else "places"))
        elif self.note:
            parts.append(self.note)
        return "; ".join(parts)

    def says(self) -> str:
        """A sentence or two for the hover and the confirmation asked before an accept."""
        parts = []
        if self.moved:
            first = self.moved[0]
            more = f" (and {len(self.moved) - 1} more)" if len(self.moved) > 1 else ""
            parts.append(f"Moves {len(self.moved)} route{'' if len(self.moved) == 1 else 's'}: \"{first.text}\" "
                         f"({first.source}) from {first.from_} to {first.to}{more}.")
        if self.gained:
            past = self.gained_prompts()
            shown = "; ".join(f'"{g.text}" ×{g.count}' for g in self.gained[:3])
            parts.append(f"Gains {len(self.gained)} input{'' if len(self.gained) == 1 else 's'}"
                         + (f", {past} past prompt{'' if past == 1 else 's'}" if past else "") + f" ({shown}).")
        if self.replayed:
            parts.append(f"Replayed {self.replayed} inputs" + ("" if self.moved else "; no route moves") + ".")
        if self.reads:
            shown = "; ".join(f"{r.kind} {r.what} ({r.where})" for r in self.reads[:3])
            more = f" and {len(self.reads) - 3} more" if len(self.reads) > 3 else ""
            parts.append(f"Read by {shown}{more}.")
        if self.narrower and self.moved:
            parts.append("Tried first: " + "; ".join(self.narrower) + ".")
        if not parts and self.note:
            parts.append(self.note[0].upper() + self.note[1:] + ".")
        return " ".join(parts)

    def lines(self) -> list[str]:
        """The impact as text lines, for the CLI and the card's markdown."""
        out = [f"impact: {self.headline()}"]
        for gain in self.gained[:8]:
            out.append(f'  gains "{gain.text}" x{gain.count} -> {gain.to} ({gain.source})')
        for move in self.moved[:8]:
            out.append(f'  MOVES "{move.text}" from {move.from_} to {move.to} ({move.source})')
        for reader in self.reads[:8]:
            out.append(f"  read by {reader.kind} {reader.what} ({reader.where})")
        for tried in self.narrower:
            out.append(f"  tried first: {tried}")
        return out

    def markdown(self) -> str:
        head = "**Impact**" + (" (moves routes)" if self.moved else "") + f": {self.headline()}."
        rows = []
        for gain in self.gained[:5]:
            rows.append(f'- gains "{gain.text}" ×{gain.count} → {gain.to} ({gain.source})')
        for move in self.moved[:5]:
            rows.append(f'- **moves** "{move.text}" from {move.from_} to {move.to} ({move.source})')
        for reader in self.reads[:5]:
            rows.append(f"- read by {reader.kind} {reader.what} ({reader.where})")
        for tried in self.narrower:
            rows.append(f"- tried first: {tried}")
        return "\n\n" + head + ("\n\n" + "\n".join(rows) if rows else "")


# --- the corpus -------------------------------------------------------------------------------------


@dataclass
class _Input:
    text: str
    count: int
    source: str
    stems: frozenset[str]


@dataclass
class _Corpus:
    inputs: list[_Input] = field(default_factory=list)
    index: dict[str, list[int]] = field(default_factory=dict)

    def add(self, text: str, count: int, source: str) -> None:
        stems = _stems(text)
        n = len(self.inputs)
        self.inputs.append(_Input(text, count, source, stems))
        for stem in stems:
            self.index.setdefault(stem, []).append(n)

    def holding(self, stems: frozenset[str]) -> set[int]:
        """Inputs whose stems hold every one of `stems`."""
        if not stems:
            return set(range(len(self.inputs)))
        lists = sorted((self.index.get(s, []) for s in stems), key=len)
        found = set(lists[0])
        for more in lists[1:]:
            found &= set(more)
            if not found:
                break
        return found


_STEMS: dict[str, frozenset[str]] = {}


def _stems(text: str) -> frozenset[str]:
    """content_stems, remembered: the same fixture inputs and phrases are replayed for every draft."""
    hit = _STEMS.get(text)
    if hit is None:
        from core.kitsoki.routing import content_stems

        if len(_STEMS) > 200_000:
            _STEMS.clear()
        hit = _STEMS[text] = content_stems(text)
    return hit


_FILES: dict[str, tuple[tuple, object]] = {}


def _stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _cached(path: Path, make: Callable[[], object], kind: str = "text") -> object:
    key, stamp = f"{kind}:{path}", _stamp(path)
    hit = _FILES.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    value = make()
    if len(_FILES) > 4096:
        _FILES.clear()
    _FILES[key] = (stamp, value)
    return value


def past_prompts(workspace: Path) -> _Corpus:
    """This workspace's own people's prompts, deduplicated on the normalized ask, with counts."""
    from core.mining.watermark import kitsoki_slug, load_state, state_path

    slug = kitsoki_slug(workspace)
    marks = state_path(workspace, slug)

    def make() -> _Corpus:
        corpus = _Corpus()
        try:
            state = load_state(workspace, slug)
        except Exception:  # noqa: BLE001 - an unreadable store is no history to replay (mining names it)
            state = None
        if state is None:
            return corpus
        counts: dict[str, list] = {}
        for episode in state.all_episodes():
            if episode.agent_session:
                continue
            text = " ".join((episode.phrasing or episode.prompt or "").split())
            if not text or len(text) > 300:
                continue
            entry = counts.get(text)
            if entry is None:
                counts[text] = [1, f"session {episode.session[:8]} {Path(episode.file).name}:{episode.line_start}"]
            else:
                entry[0] += 1
        for text, (count, source) in sorted(counts.items()):
            corpus.add(text, count, source)
        return corpus

    return _cached(marks, make, "prompts")  # type: ignore[return-value]


_INPUT_LINE = re.compile(r"^\s*(?:-\s*)?input:\s*(.+?)\s*$")


def fixture_inputs(path: Path, workspace: Path) -> list[tuple[str, str]]:
    """(input text, `file:line`) of every `input:` turn of a flow fixture file."""
    def make() -> list[tuple[str, str]]:
        out = []
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return out
        rel = relative(workspace, path)
        for n, line in enumerate(text.splitlines(), 1):
            match = _INPUT_LINE.match(line)
            if not match:
                continue
            try:
                value = yaml.safe_load(match.group(1))
            except yaml.YAMLError:
                continue
            if isinstance(value, str) and value.strip():
                out.append((value, f"{rel}:{n}"))
        return out

    return _cached(path, make, "inputs")  # type: ignore[return-value]


def flow_files(workspace: Workspace, story_name: str) -> list[Path]:
    """The fixture files kitsoki runs for an app by default (`<app-dir>/flows/*.yaml`); for the root
    instance, the root flows beside `.kitsoki.yaml`."""
    from core.kitsoki.inventory import ROOT_INSTANCE

    if story_name == ROOT_INSTANCE:
        folder = workspace.path / "flows"
    else:
        story = workspace.story(story_name)
        if story is None:
            return []
        folder = story.dir / "flows"

    def listing() -> list[Path]:
        try:
            return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        except OSError:
            return []
    return list(_cached(folder, listing, "listing"))  # type: ignore[arg-type]  (read again when the folder changes)


# --- replay -----------------------------------------------------------------------------------------


def _phrases(rows) -> dict[str, dict[str, set[tuple[str, str]]]]:
    out: dict[str, dict[str, set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
    for row in rows:
        out[row.story][row.name].update((p.kind, p.text) for p in row.phrases)
    return out


def _route(router: Router, text: str) -> str | None:
    verdict = router.route(text)
    return verdict.intent if verdict.intent is not None and verdict.confidence >= ROUTED else None


def replay(model: Workspace, live: Inventory, staged: Inventory, routers: dict[str, Router] | None = None,
           before_corpus: _Corpus | None = None) -> Impact:
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
        candidates: list[_Input] = []
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


_EXTRA: dict[tuple, tuple[Inventory, tuple, _Corpus]] = {}


def _extra_corpus(model: Workspace, live: Inventory, story: str, added_to: tuple[str, ...]) -> _Corpus:
    """The app's fixture inputs and its other intents' phrases, tokenized once per live inventory and
    fixture versions (a warm pass builds nothing)."""
    files = flow_files(model, story)
    stamps = tuple((str(p), _stamp(p)) for p in files)
    if added_to and not any(row.story == story and row.name in added_to for row in live.intents):
        # the intents it adds phrasings to are new (as a new room's is): every live row counts, as with none
        added_to = ()
    key = (id(live), story, added_to)
    hit = _EXTRA.get(key)
    if hit is not None and hit[0] is live and hit[1] == stamps:
        return hit[2]
    extra = _Corpus()
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


# --- readers of a rung-1 key, an interface, a state --------------------------------------------------


def _text(path: Path) -> str | None:
    """A story or fixture file's text, read once per version of it."""
    def make() -> str | None:
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    return _cached(path, make)  # type: ignore[return-value]


def _enclosing_state(story: Story, file: Path, line: int) -> str | None:
    # The loader names a state's file as it named the file it read: compare the names first, and
    # resolve links (a story read through a symlink) only when no state's file has this name.
    # Where each state is, read without building the states (a scan touches every story that mentions the key).
    states = state_lines(story)
    name = os.path.normpath(str(file))
    found = _nearest_above(((path, at_line) for path, at_file, at_line in states
                            if os.path.normpath(at_file) == name), line)
    if found is not None:
        return found
    real = os.path.realpath(file)
    same: dict[str, bool] = {}  # a story's states live in a handful of files: resolve each once
    candidates = []
    for path, key, at_line in states:
        if key not in same:
            same[key] = os.path.realpath(key) == real
        if same[key]:
            candidates.append((path, at_line))
    return _nearest_above(candidates, line)


def _nearest_above(candidates: Iterable[tuple[str, int]], line: int) -> str | None:
    """The state declared last at or above `line` (the one whose block holds it)."""
    best, best_line = None, 0
    for path, at_line in candidates:
        if best_line <= at_line <= line:
            best, best_line = path, at_line
    return best


def _stories(model: Workspace) -> list[tuple[str, Story]]:
    from core.kitsoki.inventory import ROOT_INSTANCE

    out = [(story.slug, story) for story in model.stories]
    root = model.root_instance
    if root is not None and not root.open_world:
        out.append((ROOT_INSTANCE, root))
    return out


def _scan(model: Workspace, pattern: re.Pattern[str], flows_pattern: re.Pattern[str] | None,
          what: str, needle: str) -> list[Reader]:
    """States and fixtures whose lines match; `needle` is a plain substring every match holds (a fast
    test before the pattern)."""
    readers: list[Reader] = []
    seen: set[str] = set()
    stories = _stories(model)
    # a file is named by the story it belongs to, and only then by a story importing it
    owned = [(name, story, f) for name, story in stories for f in story.files]
    owned += [(name, story, f) for name, story in stories for f in story.import_files if f not in story.files]
    done: set[str] = set()
    for name, story, file in owned:
        if str(file) in done:
            continue
        done.add(str(file))
        text = _text(Path(file))
        if text is None or needle not in text:
            continue
        if not pattern.search(text):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                where = f"{relative(model.path, file)}:{n}"
                if where in seen:
                    continue
                seen.add(where)
                state = _enclosing_state(story, Path(file), n)
                readers.append(Reader(kind="state", where=where,
                                      what=f"{name}:{state}" if state else f"{name} ({what})"))
    for name, _story in stories:
        if flows_pattern is None:
            break
        for path in flow_files(model, name):
            text = _text(path)
            if text is None or needle not in text or not flows_pattern.search(text):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if flows_pattern.search(line):
                    readers.append(Reader(kind="flow", where=f"{relative(model.path, path)}:{n}",
                                          what=line.strip()[:80]))
    return readers[:MAX_LISTED]


_READERS: dict[tuple, tuple[tuple, list[Reader]]] = {}
_SIGNATURES: dict[int, tuple[Workspace, tuple]] = {}


def _signature(model: Workspace) -> tuple:
    """What a scan of `model` read: every story file (size, mtime, inode) and every flows folder's
    listing stamp. Each command loads a new model, so the memo is keyed by this, not by the object;
    worked out once per loaded tree."""
    hit = _SIGNATURES.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    files = {str(f) for _, story in _stories(model) for f in (*story.files, *story.import_files)}
    files.update(str(f) for name, _ in _stories(model) for f in flow_files(model, name))
    folders = [model.path / "flows"] + [story.dir / "flows" for story in model.stories]
    signature = (str(model.path), tuple((f, _stamp(Path(f))) for f in sorted(files)),
                 tuple((str(d), _stamp(d)) for d in folders))
    if len(_SIGNATURES) > 16:
        _SIGNATURES.clear()
    _SIGNATURES[id(model)] = (model, signature)
    return signature


def _memo(model: Workspace, kind: str, key: str, make: Callable[[], list[Reader]]) -> list[Reader]:
    """An unchanged workspace (the same files, as stamped) scans nothing again, in this process."""
    signature = _signature(model)
    hit = _READERS.get((str(model.path), kind, key))
    if hit is not None and hit[0] == signature:
        return hit[1]
    found = make()
    if len(_READERS) > 64:
        _READERS.clear()
    _READERS[(str(model.path), kind, key)] = (signature, found)
    return found


def world_readers(model: Workspace, key: str) -> list[Reader]:
    return _memo(model, "world", key, lambda: _world_readers(model, key))


def binding_readers(model: Workspace, iface: str) -> list[Reader]:
    return _memo(model, "binding", iface, lambda: _binding_readers(model, iface))


def _world_readers(model: Workspace, key: str) -> list[Reader]:
    word = re.escape(key)
    return _scan(model, re.compile(rf"\bworld\.{word}\b|\b{word}\s*:\s*\{{\{{|^\s*{word}\s*:\s*world\.", re.M),
                 re.compile(rf"^\s*{word}\s*:", re.M), f"world.{key}", key)


def _binding_readers(model: Workspace, iface: str) -> list[Reader]:
    word = re.escape(iface)
    return _scan(model, re.compile(rf"invoke:\s*['\"]?(?:iface\.|root__)?{word}\.", re.M),
                 re.compile(rf"handler:\s*['\"]?(?:iface\.|root__)?{word}\.|^\s*['\"]?(?:iface\.|root__)?{word}\.\w+['\"]?\s*:",
                            re.M), f"the {iface} interface", f"{iface}.")


def state_readers(model: Workspace, story_slug: str, state: str) -> list[Reader]:
    story = model.story(story_slug)
    if story is None:
        return []
    leaf = re.escape(state.rsplit(".", 1)[-1])
    readers: list[Reader] = []
    into: set[str] = set()
    for path_, source in story.states.items():
        for intent, arms in source.on.items():
            for arm in arms:
                if arm.target and re.fullmatch(rf"(?:.*\.)?{leaf}", arm.target.strip()) and path_ != state:
                    into.add(intent)
                    where = f"{relative(model.path, source.at.file)}:{source.at.line}" if source.at else story_slug
                    readers.append(Reader(kind="state", where=where, what=f"{story_slug}:{path_} --{intent}--> {state}"))
    names = "|".join(re.escape(name) for name in sorted(into))
    for path in flow_files(model, story_slug):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for n, line in enumerate(lines, 1):
            if re.search(rf"(expect_state|initial_state):\s*['\"]?{re.escape(state)}['\"]?\s*$", line):
                readers.append(Reader(kind="flow", where=f"{relative(model.path, path)}:{n}", what=line.strip()))
            elif names and re.search(rf"\bname:\s*['\"]?(?:{names})['\"]?\s*[,}}]?", line):
                readers.append(Reader(kind="flow", where=f"{relative(model.path, path)}:{n}",
                                      what=f"drives {line.strip()} into {state}"))
    return readers[:MAX_LISTED]


# --- the proposer's one call -----------------------------------------------------------------------


def assess(model: Workspace, live: Inventory, routers, proposal, files: dict[str, bytes], recipe) -> Impact:
    """The impact of one drafted proposal (its staged files against the live tree)."""
    if proposal.suggestion_only or not files:
        return Impact(note="a suggestion: it changes no file, so nothing routes differently")
    if proposal.kind == "world" and recipe.iface:
        readers = world_readers(model, recipe.iface)
        return Impact(reads=readers, note="" if readers else
                      f"nothing in this project reads world.{recipe.iface}")
    if proposal.kind == "binding" and recipe.iface:
        readers = binding_readers(model, recipe.iface)
        return Impact(reads=readers, note="" if readers else
                      f"nothing in this project invokes the {recipe.iface} interface")
    from core.proposals.validate import staged_load

    # the tree the draft's checks just loaded (cached there: the same files, before its proof was added)
    proof = proposal.proof.path if proposal.proof is not None else None
    staged = staged_load(model, {rel: data for rel, data in files.items() if rel != proof})
    impact = replay(model, live, staged_intents(model, live, staged, files), getattr(routers, "by_story", None))
    if proposal.kind == "gate" and proposal.mapping.near and ":" in proposal.mapping.near:
        story_slug, state = proposal.mapping.near.split(":", 1)
        impact.reads = state_readers(model, story_slug, state)
    if not impact.gained and not impact.moved and not impact.reads:
        impact.note = "no past prompt, fixture input or phrase routes differently"
    return impact


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


def _is_flow(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) >= 2 and parts[-2] == "flows"


def weigh(model: Workspace, live: Inventory, routers, recipe, mapping, built: tuple,
          rebuild: Callable[[object], tuple]) -> tuple:
    """The proposer's one call: the impact of the drafted proposal, attached to it (card text and
    `proposal.impact`); when it moves routes, a narrower phrasing of the same ask is drafted first
    and kept instead if it gains without moving anything."""
    proposal, files, artifact = built
    try:
        impact = assess(model, live, routers, proposal, files, recipe)
    except Exception as exc:  # noqa: BLE001 - a card whose impact failed says so, never hides it
        impact = Impact(note=f"the impact could not be computed ({type(exc).__name__}: {exc})")
        return attach(proposal, files, artifact, impact)
    if impact.moved and recipe.kind == "intent":
        tried = []
        for narrower in narrower_recipes(recipe, proposal):
            phrase = narrower.phrasings[0].text
            try:
                candidate = rebuild(narrower)
            except Exception as exc:  # noqa: BLE001 - a narrower draft that fails leaves the first one
                tried.append(f'"{phrase}": does not draft ({exc})')
                continue
            candidate[0].evidence = proposal.evidence  # the evidence is the whole ask's, not the phrasing's
            try:
                other = assess(model, live, routers, candidate[0], candidate[1], recipe)
            except Exception as exc:  # noqa: BLE001
                tried.append(f'"{phrase}": its impact could not be computed ({exc})')
                continue
            if other.gained and not other.moved:
                other.narrower = tried + [f'"{phrase}" instead of the broader phrasing, which moves '
                                          f'{len(impact.moved)} route(s)']
                proposal, files, artifact, impact = (*candidate, other)
                break
            tried.append(f'"{phrase}": ' + (f"moves {len(other.moved)} route(s) too" if other.moved
                                            else "gains no past prompt"))
        else:
            impact.narrower = tried or ["no narrower phrasing: every phrasing of this ask holds the words that "
                                        "take the moved inputs"]
    return attach(proposal, files, artifact, impact)


def attach(proposal, files: dict[str, bytes], artifact, impact: Impact) -> tuple:
    proposal.impact = impact
    proposal.summary_markdown += impact.markdown()
    if artifact is not None:
        artifact.summary_markdown = proposal.summary_markdown
    return proposal, files, artifact


def narrower_recipes(recipe, proposal) -> Iterable:
    """The recipe narrowed to one of its own phrasings that holds more words than a drafted phrase:
    it still says what was asked, and takes fewer inputs."""
    from core.kitsoki.routing import content_stems

    from core.proposals.mapper import usable_phrasings

    added = [line[1:].strip().lstrip("- ").strip("'\"") for change in proposal.files for line in
             change.diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    drafted = [content_stems(text) for text in added if text]
    drafted = [stems for stems in drafted if stems]
    if not drafted:
        return []
    out, seen = [], set()
    for phrasing in usable_phrasings(recipe):
        stems = content_stems(phrasing.text)
        if stems in seen or not any(d < stems for d in drafted):
            continue
        seen.add(stems)
        out.append(recipe.model_copy(update={"phrasings": [phrasing]}))
        if len(out) >= NARROWER_TRIES:
            break
    return out


__all__ = ["Gain", "Impact", "Move", "Reader", "assess", "replay", "weigh", "CONFIG_FILE"]
