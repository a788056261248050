"""The built-in drafter: a mapped recipe becomes concrete bytes for the files it would change.

Deterministic: the same recipe against the same tree gives the same draft. Rung 1 edits only
`root.overrides.{bindings,world,synonyms}` in `.kitsoki.yaml`; rung 2 edits a story (synonyms on a
story's own intent, a new intent with a room whose on_enter invokes `host.agent.task`, a state
decided by a human) or, when the workspace has no story of its own, materializes one under
`.kitsoki/stories/<slug>/`. Edits go through core.kitsoki.yamledit, so every byte outside the
changed region stays as the author wrote it. A provider or world key dev-story does not know is
drafted as a suggestion to enrich dev-story, with no file change: it is shown, never applied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from core.kitsoki import yamledit
from core.kitsoki.config import CONFIG_FILE, DEV_STORY_WORLD_KEYS
from core.kitsoki.inventory import ROOT_INSTANCE, Inventory
from core.kitsoki.routing import Router, content_stems
from core.kitsoki.story import MATERIALIZED_DIR, Story, Workspace, initial_leaf, relative
from core.mining.asks import understand
from core.mining.recipes import Recipe
from core.proposals.mapper import PROVIDER_HANDLERS, usable_phrasings, without_redactions
from core.proposals.examples import MAX_EXAMPLES, examples_for
from core.proposals.model import Mapping
from core.proposals import proofs
from core.proposals.proofs import Proof
from core.proposals.wording import actions_text, cite_text, classification_text, plural
from core.trace import ProposalKind

AGENT_TASK = "host.agent.task"
MAX_NEW_SYNONYMS = MAX_EXAMPLES
_PLACEHOLDER = re.compile(r"<\w+>")
_TRAILING_FILLER = frozenset("a an the to of in on at for with from into and or by".split())


class DraftError(ValueError):
    """The recipe cannot be drafted against this tree; the reason says why."""


@dataclass
class Draft:
    kind: ProposalKind
    target: Literal["root-instance", "dev-story"]
    rung: Literal[1, 2]
    title: str
    summary_markdown: str
    files: dict[str, bytes] = field(default_factory=dict)
    """Workspace-relative path -> the full new bytes."""
    suggestion_only: bool = False
    expect_routes: list[tuple[str, str, str]] = field(default_factory=list)
    """(story, phrase, intent) the staged tree must route, or the draft does not do what it says."""
    keep_routes: list[tuple[str, str, str]] = field(default_factory=list)
    """(story, phrase, intent) of a neighbour intent that must still route there after the draft."""
    proof: Proof | None = None
    """The proposal's own proof (core.proposals.proofs): a new fixture, or why no flow can show it."""
    proof_later: Callable[[Workspace, Workspace], Proof] | None = None
    """Builds the proof from the live and the staged tree, when it needs the staged tree."""


Reader = Callable[[str], bytes | None]
"""Reads a workspace-relative file's live bytes (None when absent)."""


def rung_for(kind: str, needs_room: bool) -> Literal[1, 2]:
    """kitsoki's RungFor: binding and world are rung 1; intent is rung 1 unless it needs a room (or,
    here, a story of its own); stub-wire, gate, dev-story-enrich and anything unknown are rung 2."""
    if kind in ("binding", "world"):
        return 1
    if kind == "intent":
        return 2 if needs_room else 1
    return 2


def clean_phrase(text: str) -> str:
    """A mined phrasing as a synonym: placeholders and trailing filler words dropped."""
    words = _PLACEHOLDER.sub(" ", text).replace('"', " ").split()
    words = [w.strip(".,;:!?") for w in words]
    words = [w for w in words if w]
    while words and words[-1].lower() in _TRAILING_FILLER:
        words.pop()
    return " ".join(words)[:120]


def intent_name_for(recipe: Recipe, taken: set[str]) -> str:
    """Named by the words of its most asked phrasing in Latin script (rotate_signing_keys); an ask only ever
    typed in other scripts by what it asks: its most used verb and the things most of its phrasings act on
    (regenerate_api_client)."""
    usable = usable_phrasings(recipe)
    latin = [p for p in usable if p.text.isascii() and re.search(r"[a-z]{2}", p.text.lower())]
    if latin:
        phrase = clean_phrase(latin[0].text)
        words = [w for w in re.findall(r"[a-z0-9]+", phrase.lower()) if w in _stems_words(phrase)][:4]
        if words:
            return _free("_".join(words), taken)
    verbs: dict[str, int] = {}
    objects: dict[str, int] = {}
    for p in usable:
        for term in understand(p.text).terms:
            if term.startswith("a:"):
                verbs[term[2:]] = verbs.get(term[2:], 0) + p.count
            elif term.startswith("o:") and re.fullmatch(r"[a-z0-9_]+", term[2:]):
                objects[term[2:]] = objects.get(term[2:], 0) + p.count
    top = [v for v, _ in sorted(verbs.items(), key=lambda kv: (-kv[1], kv[0]))[:1]]
    most = max(objects.values(), default=0)
    top += sorted(o for o, n in objects.items() if n * 2 >= most)[:3]
    if not objects:
        phrase = clean_phrase(usable[0].text if usable else without_redactions(recipe.title))
        top = [w for w in re.findall(r"[a-z0-9]+", phrase.lower()) if w in _stems_words(phrase)][:4]
    return _free("_".join(top), taken)


def _free(words: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9_]+", "_", words.lower()).strip("_") or "mined_request"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def _stems_words(phrase: str) -> set[str]:
    stems = content_stems(phrase)
    return {w for w in re.findall(r"[a-z0-9]+", phrase.lower()) if any(w.startswith(s[:4]) for s in stems)}


def _text(read: Reader, path: str) -> str:
    raw = read(path)
    if raw is None:
        raise DraftError(f"{path} does not exist")
    return raw.decode("utf-8")


def _evidence_line(recipe: Recipe) -> str:
    cite = recipe.instances[0] if recipe.instances else None
    where = f" First seen at `{cite_text(cite.path, cite.line_start, cite.line_end)}`." if cite else ""
    asks = ""
    if recipe.phrasings:
        asks = " Asked as " + ", ".join(f'"{p.text}" ×{p.count}' for p in recipe.phrasings[:3]) + "."
    actions = ""
    if recipe.action_signature:
        actions = " Actions: " + actions_text(recipe.action_signature) + "."
    return (f"Seen in {plural(recipe.sessions, 'session')} ({plural(len(recipe.instances), 'time')}, "
            f"priority {recipe.priority:g})."
            f"{asks}{actions}{where}")


def _summary(headline: str, recipe: Recipe, mapping: Mapping, files: list[str]) -> str:
    changed = ", ".join(f"`{f}`" for f in files) if files else "no file (a suggestion)"
    return (f"**{headline}**\n\n{_evidence_line(recipe)}\n\n"
            f"{classification_text(mapping.classification, mapping.near)}: {mapping.reason}.\n\nChanges {changed}.")


def draft(recipe: Recipe, mapping: Mapping, workspace: Workspace, inventory: Inventory, read: Reader) -> Draft:
    """The built-in draft for a recipe the mapper let through (ENRICH or GAP)."""
    if recipe.kind == "binding":
        return _draft_binding(recipe, mapping, read)
    if recipe.kind == "world":
        return _draft_world(recipe, mapping, read)
    if recipe.kind == "intent":
        return _draft_intent(recipe, mapping, workspace, inventory, read)
    if recipe.kind == "gate":
        return _draft_gate(recipe, mapping, workspace, read)
    raise DraftError(f"the built-in drafter does not draft {recipe.kind} recipes")


def other_projects_suggestion(recipe: Recipe, mapping: Mapping) -> Draft:
    """A recipe that recurs only across other projects' sessions: a dev-story-enrich suggestion, never a
    rung-1 or rung-2 change to this project (core/mining/passes.py marks it)."""
    return _suggestion(recipe, mapping, f"Seen in other projects' sessions, not this one's: {recipe.title}")


def _suggestion(recipe: Recipe, mapping: Mapping, headline: str) -> Draft:
    return Draft(kind="dev-story-enrich", target="dev-story", rung=2, title=headline, suggestion_only=True,
                 summary_markdown=_summary(headline, recipe, mapping, []))


def _draft_binding(recipe: Recipe, mapping: Mapping, read: Reader) -> Draft:
    iface, provider = recipe.iface or "", recipe.value or ""
    handler = PROVIDER_HANDLERS.get((iface, provider))
    if handler is None:
        return _suggestion(recipe, mapping, f"dev-story could offer a {provider} provider for {iface}")
    text = yamledit.set_value(_text(read, CONFIG_FILE), ["root", "overrides", "bindings", iface], handler)
    headline = f"Bind {iface} to {handler}"

    def proof(live: Workspace, staged: Workspace) -> Proof:
        return proofs.binding_proof(live.path, recipe.id, headline, live.root_instance, staged.root_instance,
                                    iface, handler)

    return Draft(kind="binding", target="root-instance", rung=1, title=headline,
                 files={CONFIG_FILE: text.encode()}, summary_markdown=_summary(headline, recipe, mapping, [CONFIG_FILE]),
                 proof_later=proof)


def _typed(key: str, value: str | None) -> Any:
    kind = DEV_STORY_WORLD_KEYS.get(key, "string")
    if value is None:
        return None
    try:
        if kind == "int":
            return int(value)
        if kind in ("float", "number"):
            return float(value)
        if kind == "bool":
            return value.lower() in ("true", "yes", "1")
    except ValueError:
        raise DraftError(f"world.{key} is a {kind}; {value!r} is not") from None
    return value


def _draft_world(recipe: Recipe, mapping: Mapping, read: Reader) -> Draft:
    key = recipe.iface or ""
    if key not in DEV_STORY_WORLD_KEYS:
        return _suggestion(recipe, mapping, f"dev-story could declare a {key} world key")
    value = _typed(key, recipe.value)
    text = yamledit.set_value(_text(read, CONFIG_FILE), ["root", "overrides", "world", key], value)
    headline = f"Set world.{key} to {value!r}"

    def proof(live: Workspace, staged: Workspace) -> Proof:
        return proofs.world_proof(live.path, recipe.id, headline, staged.root_instance, key, value)

    return Draft(kind="world", target="root-instance", rung=1, title=headline,
                 files={CONFIG_FILE: text.encode()}, summary_markdown=_summary(headline, recipe, mapping, [CONFIG_FILE]),
                 proof_later=proof)


def _new_phrases(recipe: Recipe, existing: set[str]) -> list[str]:
    """A few short, normalized phrasings of the ask (core/proposals/examples.py), none already a phrase:
    never a person's prompt as typed; the evidence stays in the card."""
    return examples_for(recipe, existing, MAX_NEW_SYNONYMS)


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}" + ("" if len(items) == 1 else "s")


def _state_path(state: str) -> list[str]:
    parts = state.split(".")
    path = ["states", parts[0]]
    for part in parts[1:]:
        path += ["states", part]
    return path


def _draft_intent(recipe: Recipe, mapping: Mapping, workspace: Workspace, inventory: Inventory,
                  read: Reader) -> Draft:
    if recipe.phrasings and not usable_phrasings(recipe):
        raise DraftError("every phrasing of the recipe held a secret (now a redaction placeholder); "
                         "none becomes a phrase")
    if mapping.classification == "ENRICH" and mapping.near:
        story_slug, intent = mapping.near.split(":", 1)
        row = next((r for r in inventory.intents if r.story == story_slug and r.name == intent), None)
        existing = {p.text.lower() for r in inventory.intents if r.story == story_slug and r.name == intent
                    for p in r.phrases}
        phrases = _new_phrases(recipe, existing)
        if not phrases:
            raise DraftError(f"every phrasing of the recipe is already a phrase of {mapping.near}")
        if story_slug == ROOT_INSTANCE:
            text = yamledit.append_items(_text(read, CONFIG_FILE), ["root", "overrides", "synonyms", intent], phrases)
            headline = f"Route {_count(phrases, 'more phrasing')} to dev-story's {intent}"
            neighbours = _neighbours(inventory, ROOT_INSTANCE, intent, phrases)
            return Draft(kind="intent", target="root-instance", rung=1, title=headline,
                         files={CONFIG_FILE: text.encode()},
                         summary_markdown=_summary(headline, recipe, mapping, [CONFIG_FILE]),
                         expect_routes=[(ROOT_INSTANCE, p, intent) for p in phrases], keep_routes=neighbours,
                         proof=Proof(unprovable=[proofs.phrasing_note(phrases, f"dev-story's {intent}",
                                                                      [(p, i) for _, p, i in neighbours])]))
        story = workspace.story(story_slug)
        if story is None or row is None or row.at is None:
            raise DraftError(f"{mapping.near} is not in a story file this workspace can edit")
        rel = relative(workspace.path, row.at.file)
        declared = next((i for i in story.all_intents() if i.name == intent), None)
        if declared is None:
            raise DraftError(f"{mapping.near} is no longer declared in {rel}")
        path = (_state_path(declared.state) + ["intents", intent] if declared.state else ["intents", intent])
        text = yamledit.append_items(_text(read, rel), path + ["synonyms"], phrases)
        headline = f"Add {_count(phrases, 'synonym')} to {story_slug}'s {intent}"
        neighbours = _neighbours(inventory, story_slug, intent, phrases)
        return Draft(kind="intent", target="root-instance", rung=2, title=headline, files={rel: text.encode()},
                     summary_markdown=_summary(headline, recipe, mapping, [rel]),
                     expect_routes=[(story_slug, p, intent) for p in phrases], keep_routes=neighbours,
                     proof=Proof(unprovable=[proofs.phrasing_note(phrases, f"{story_slug}'s {intent}",
                                                                  [(p, i) for _, p, i in neighbours])]))
    return _draft_new_room(recipe, mapping, workspace, inventory, read)


def _neighbours(inventory: Inventory, story: str, intent: str, phrases: list[str]) -> list[tuple[str, str, str]]:
    """(story, phrase, intent) of the other intents of `story` nearest to the new phrasings: one
    phrase each of the two closest, which must still route to their own intent after the draft."""
    words = set().union(*(content_stems(p) for p in phrases)) if phrases else set()
    scored = []
    for row in inventory.intents:
        if row.story != story or row.name == intent:
            continue
        for phrase in row.phrases:
            stems = content_stems(phrase.text)
            if stems and words and "{" not in phrase.text:
                overlap = 2 * len(stems & words) / (len(stems) + len(words))
                if overlap > 0:
                    scored.append((overlap, row.name, phrase.text))
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    router = Router([row for row in inventory.intents if row.story == story], strict=False) if scored else None
    out: list[tuple[str, str, str]] = []
    for _, name, text in scored[:40]:
        # Only a phrasing that routes to its intent now can be held to still route there.
        if all(name != other for _, _, other in out) and router.route(text).intent == name:
            out.append((story, text, name))
        if len(out) == 2:
            break
    return out


def _home_story(workspace: Workspace) -> Story | None:
    """Where new rooms go: the first story of the project's own whose root is a state it declares
    itself (not an imported child, whose states belong to another story)."""
    first = None
    for story in workspace.stories:  # in order, reading each state's spec, not building every story's states
        if story.open_world or not story.root or not _root_is_its_own(story):
            continue
        if not story.materialized:
            return story
        first = first or story
    return first


def _root_is_its_own(story: Story) -> bool:
    """`story.root in story.states and story.states[story.root].import_alias is None`."""
    from core.kitsoki.build import state_specs, unbuilt_definition

    definition = unbuilt_definition(story)
    if definition is None:
        return story.root in story.states and story.states[story.root].import_alias is None
    spec = state_specs(definition).get(story.root)
    return spec is not None and spec.get("__import__") is None


AGENT_TOOLS = ["Read", "Grep", "Glob", "Edit", "Write", "Bash"]
"""What the room's agent may use: host.agent.task is kitsoki's verb for agentic work (a read-only verb
would refuse Edit and Write at load)."""


@dataclass
class Room:
    """What a new intent's room needs besides its state: kitsoki's `host.agent.task` names a declared
    agent and an acceptance schema (a story-relative JSON file), or the story does not load."""

    agent: str
    agent_spec: dict[str, Any]
    schema: str
    """Story-relative, as the effect names it."""
    schema_bytes: bytes


def _ask(recipe: Recipe) -> tuple[str, str]:
    usable = usable_phrasings(recipe)
    ask = clean_phrase(usable[0].text) if usable else without_redactions(recipe.title)
    steps = "; ".join(without_redactions(step) for step in recipe.action_signature[:6])  # no placeholder in YAML
    return ask, steps


def _room(recipe: Recipe, name: str, taken_agents: set[str]) -> Room:
    ask, steps = _ask(recipe)
    agent, n = f"{name}_agent", 2
    while agent in taken_agents:
        agent, n = f"{name}_agent_{n}", n + 1
    prompt = (f"You carry out one request people made again and again in this project: {ask}."
              + (f" The steps they usually took: {steps}." if steps else "")
              + " Work in the project's tree, then submit what you changed and why.")
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": f"{name}_result",
        "description": f"What the {name} room's agent submits when it is done (drafted by kitsoki-miner).",
        "type": "object",
        "required": ["summary_markdown", "files_changed"],
        "properties": {
            "summary_markdown": {"type": "string", "minLength": 1,
                                 "description": "What was done, for the person reviewing it."},
            "files_changed": {"type": "array", "items": {"type": "string"},
                              "description": "Every file changed, workspace-relative."},
        },
    }
    return Room(agent=agent, agent_spec={"system_prompt": prompt, "tools": list(AGENT_TOOLS)},
                schema=f"schemas/{name}.json", schema_bytes=(json.dumps(schema, indent=2) + "\n").encode())


def _room_spec(recipe: Recipe, description: str, room: Room) -> dict[str, Any]:
    ask, steps = _ask(recipe)
    prompt = f"{ask}. The usual steps: {steps}." if steps else f"{ask}."
    return {"description": description,
            "on_enter": [{"invoke": AGENT_TASK, "with": {"agent": room.agent, "acceptance": {"schema": room.schema},
                                                        "context": {"prompt": prompt}}}]}


def _story_agents(story: Story) -> set[str]:
    definition = story.definition
    agents = definition.get("agents") if isinstance(definition, dict) else None
    return set(agents or ())


def _draft_new_room(recipe: Recipe, mapping: Mapping, workspace: Workspace, inventory: Inventory,
                    read: Reader) -> Draft:
    story = _home_story(workspace)
    taken = {i.name for s in workspace.stories for i in s.all_intents()}
    name = intent_name_for(recipe, taken)
    room = f"{name}_room"
    phrases = _new_phrases(recipe, set())
    title = without_redactions(recipe.title)
    if not phrases and not clean_phrase(title):
        raise DraftError("the recipe has no phrasing a person could type: each held a redacted secret")
    description = f"Mined from {recipe.sessions} sessions: {clean_phrase(title) or title}"
    intent_spec: dict[str, Any] = {"description": description[:160], "examples": phrases or [title]}
    if story is None:
        return _materialize(recipe, mapping, workspace, name, room, intent_spec, read)
    files: dict[str, str] = {}

    def text_of(rel: str) -> str:
        return files[rel] if rel in files else _text(read, rel)

    app_rel = relative(workspace.path, story.path)
    room_parts = _room(recipe, name, _story_agents(story))
    text = text_of(app_rel)
    if {"intents", "agents"} <= _top_keys(text):  # both entries in one edit, verified once
        text = yamledit.add_entries(text, [(["intents"], name, intent_spec),
                                           (["agents"], room_parts.agent, room_parts.agent_spec)])
    else:
        text = _add_top_entry(_add_intent(text, name, intent_spec), "agents", room_parts.agent,
                              room_parts.agent_spec)
    if story.hosts and AGENT_TASK not in story.hosts:  # an allow-list must name the verb the room invokes
        if "hosts" not in _top_keys(text):
            raise DraftError(f"{story.slug}'s hosts: allow-list is declared outside {app_rel} and lacks {AGENT_TASK}")
        text = yamledit.append_items(text, ["hosts"], [AGENT_TASK])
    files[app_rel] = text
    spec = _room_spec(recipe, description[:160], room_parts)
    # kitsoki refuses an on: intent that is neither global in this story nor the room's own.
    back = next((i for i in ("go_back", "back", "done", "go_main") if i in story.intents), None)
    if back:
        spec["on"] = {back: [{"target": story.root}]}
    # The room goes beside the root state (app.yaml, or the room file that declares it).
    root_rel = relative(workspace.path, story.states[story.root].at.file)
    files[root_rel] = _add_state(text_of(root_rel), story, room, spec, name)
    headline = f"New intent {name} with a room that hands the work to host.agent.task"
    out = {path: body.encode() for path, body in files.items()}
    schema_rel = f"{relative(workspace.path, story.dir)}/{room_parts.schema}"
    if read(schema_rel) is not None:
        raise DraftError(f"{schema_rel} exists; the room's acceptance schema would overwrite it")
    out[schema_rel] = room_parts.schema_bytes
    proof = proofs.new_room_proof(recipe.id, headline, app_rel, name, room, room_parts.agent,
                                  initial_leaf(story, story.root or ""))
    neighbours = _neighbours(inventory, story.slug, name, phrases)
    return Draft(kind="intent", target="root-instance", rung=2, title=headline,
                 files=out,
                 summary_markdown=_summary(headline, recipe, mapping, sorted(out)),
                 expect_routes=[(story.slug, p, name) for p in phrases[:1]], keep_routes=neighbours, proof=proof)


def _top_keys(text: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^([A-Za-z_][\w-]*):", text, re.M)}


def _add_intent(text: str, name: str, spec: dict[str, Any]) -> str:
    return _add_top_entry(text, "intents", name, spec)


def _add_top_entry(text: str, block: str, name: str, spec: dict[str, Any]) -> str:
    if block in _top_keys(text):
        return yamledit.add_entry(text, [block], name, spec)
    return yamledit.set_value(text, [block], {name: spec})


def _add_state(text: str, story: Story, state: str, spec: dict[str, Any], enter_intent: str) -> str:
    """Add `state` to the file declaring the story's root state, and an arm from root into it."""
    root_path = _state_path(story.root or "")
    arm = [{"target": state}]
    if story.states[story.root].on:  # both entries in one edit, verified once
        return yamledit.add_entries(text, [(["states"], state, spec), (root_path + ["on"], enter_intent, arm)])
    text = yamledit.add_entry(text, ["states"], state, spec)
    return yamledit.set_value(text, root_path + ["on"], {enter_intent: arm})


def _materialize(recipe: Recipe, mapping: Mapping, workspace: Workspace, name: str, room: str,
                 intent_spec: dict[str, Any], read: Reader) -> Draft:
    slug = re.sub(r"[^a-z0-9]+", "-", workspace.path.resolve().name.lower()).strip("-") or "project"
    rel = f"{MATERIALIZED_DIR}/{slug}/app.yaml"
    if read(rel) is not None:
        raise DraftError(f"{rel} exists but did not load as a story of this workspace")
    room_parts = _room(recipe, name, set())
    spec = _room_spec(recipe, str(intent_spec["description"]), room_parts)
    body = {
        "app": {"id": slug, "version": "0.1.0", "title": f"{slug} (materialized by kitsoki-miner)"},
        "agents": {room_parts.agent: room_parts.agent_spec},
        "intents": {name: intent_spec},
        "root": "landing",
        "states": {"landing": {"description": "Where the project's own requests start.",
                               "on": {name: [{"target": room}]}},
                   room: spec},
    }
    header = (f"# Materialized by kitsoki-miner from mined transcripts (recipe {recipe.id}).\n"
              f"# Accepting this proposal creates the project's own story; edit it freely.\n")
    text = header + yamledit.set_value("", ["app"], body["app"])
    for key in ("agents", "intents", "root", "states"):
        text = yamledit.set_value(text, [key], body[key])
    headline = f"Materialize {rel} with a new intent {name}"
    schema_rel = f"{MATERIALIZED_DIR}/{slug}/{room_parts.schema}"
    proof = proofs.new_room_proof(recipe.id, headline, rel, name, room, room_parts.agent, "landing")
    return Draft(kind="intent", target="root-instance", rung=2, title=headline,
                 files={rel: text.encode(), schema_rel: room_parts.schema_bytes}, proof=proof,
                 summary_markdown=_summary(headline, recipe, mapping, [rel, schema_rel]),
                 expect_routes=[(slug, p, name) for p in intent_spec["examples"][:1]])


def _draft_gate(recipe: Recipe, mapping: Mapping, workspace: Workspace, read: Reader) -> Draft:
    if mapping.classification == "ENRICH" and mapping.near:
        story_slug, state_name = mapping.near.split(":", 1)
        story = workspace.story(story_slug)
        if story is None or state_name not in story.states:
            raise DraftError(f"{mapping.near} is not a state this workspace can edit")
        rel = relative(workspace.path, story.states[state_name].at.file)
        text = yamledit.set_value(_text(read, rel), _state_path(state_name) + ["decider"], "human")
        headline = f"Let a human decide at {story_slug}:{state_name}"
        proof = proofs.arrival_proof(workspace.path, recipe.id, headline, story, state_name)
        return Draft(kind="gate", target="root-instance", rung=2, title=headline, files={rel: text.encode()},
                     summary_markdown=_summary(headline, recipe, mapping, [rel]), proof=proof)
    story = _home_story(workspace)
    if story is None:
        raise DraftError("a new gate needs a story of the project's own; none with a root state loads")
    taken = {i.name for i in story.all_intents()}
    slug = "_".join(re.findall(r"[a-z0-9]+", " ".join(recipe.action_signature).lower())[:3]) or "action"
    state = f"review_{slug}"
    n = 2
    while state in story.states:
        state, n = f"review_{slug}_{n}", n + 1
    files: dict[str, str] = {}
    app_rel = relative(workspace.path, story.path)
    text = _text(read, app_rel)
    for verdict in ("approve", "reject"):
        if verdict not in taken:
            text = _add_intent(text, verdict, {"description": f"{verdict.capitalize()} at a human review.",
                                               "examples": [verdict]})
    words = re.findall(r"[a-z0-9]+", " ".join(recipe.action_signature).lower())[:3]
    enter = "review " + " ".join(words)
    enter_intent = intent_name_for(recipe.model_copy(update={"phrasings": [], "title": enter}), taken)
    files[app_rel] = _add_intent(text, enter_intent, {"description": f"Ask a human before {' '.join(words)}.",
                                                      "examples": [enter]})
    spec = {"description": f"A person decides before {', '.join(recipe.action_signature)} "
                           f"(people {recipe.value or 'decided'} it in {recipe.sessions} sessions).",
            "decider": "human",
            "on": {"approve": [{"target": story.root}], "reject": [{"target": story.root}]}}
    root_rel = relative(workspace.path, story.states[story.root or ""].at.file)
    files[root_rel] = _add_state(files[root_rel] if root_rel in files else _text(read, root_rel), story, state,
                                 spec, enter_intent)
    headline = f"A human review state {state} before {', '.join(recipe.action_signature)}"
    start = initial_leaf(story, story.root or "")
    proof = (proofs.review_proof(workspace.path, recipe.id, headline, story, enter_intent, state, start)
             if start == story.root else
             Proof(unprovable=[f"{state}: approve returns to {story.root}, which lands in {start}; the proof would "
                               "have to follow that descent"]))
    return Draft(kind="gate", target="root-instance", rung=2, title=headline,
                 files={path: body.encode() for path, body in files.items()},
                 summary_markdown=_summary(headline, recipe, mapping, sorted(files)), proof=proof)
