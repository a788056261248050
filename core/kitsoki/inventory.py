"""What the workspace already models, regenerated from the live tree on every proposer pass.

kitsoki's mapper persona greps `host.agent.*` call sites and the `intents:` blocks by hand
(reference/kitsoki-formats.md §1, "Inventory for dedup"); this is the same inventory as data, each
row with the file:line it came from, so a proposal can cite what it was compared against. It is
rebuilt whenever a story or the config changed: a pass reads the tree as it is now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.kitsoki.config import CONFIG_FILE, DEV_STORY_HOST_INTERFACES, override_locations  # noqa: F401
from core.kitsoki.model import AGENT_HANDLER_PREFIX, Story, Where, Workspace
from core.kitsoki.workspace import load_workspace

ROOT_INSTANCE = "root-instance"
"""The story name rows of the synthesized dev-story root instance carry."""

DEV_STORY_DEFAULT_BINDINGS: dict[str, str] = {
    "ticket": "host.local_files.ticket",
    "vcs": "host.git",
    "ci": "host.local",
    "workspace": "host.git_worktree",
    "transport": "host.append_to_file",
}
assert tuple(DEV_STORY_DEFAULT_BINDINGS) == DEV_STORY_HOST_INTERFACES


class Phrase(BaseModel):
    text: str
    kind: Literal["example", "synonym"]
    at: Where | None = None


class IntentRow(BaseModel):
    story: str
    """A story slug, or root-instance for dev-story's intents and `root.overrides.synonyms`."""
    name: str
    description: str = ""
    phrases: list[Phrase] = Field(default_factory=list)
    source: Literal["story", "dev-story", "override"] = "story"
    at: Where | None = None
    slots: dict[str, Any] = Field(default_factory=dict)
    """The story's Slot models (routing needs their types)."""

    # The router reads these names (routing.IntentLike).
    @property
    def examples(self) -> list[str]:
        return [p.text for p in self.phrases if p.kind == "example"]

    @property
    def synonyms(self) -> list[str]:
        return [p.text for p in self.phrases if p.kind == "synonym"]


class AgentCall(BaseModel):
    story: str
    state: str
    handler: str
    at: Where


class GateRow(BaseModel):
    """A state that owes a decision: two or more advancing intents, or an explicit decider."""

    story: str
    state: str
    description: str = ""
    decider: str | None
    intents: list[str]
    at: Where


class BindingRow(BaseModel):
    iface: str
    handler: str
    source: Literal["override", "profile", "default"]
    """root.overrides in the config, the project profile, or dev-story's default provider."""
    at: Where | None = None


class WorldRow(BaseModel):
    key: str
    value: Any
    at: Where | None = None
    source: Literal["override", "profile"] = "override"


class Inventory(BaseModel):
    workspace: Path
    intents: list[IntentRow] = Field(default_factory=list)
    agent_calls: list[AgentCall] = Field(default_factory=list)
    gates: list[GateRow] = Field(default_factory=list)
    bindings: list[BindingRow] = Field(default_factory=list)
    world: list[WorldRow] = Field(default_factory=list)

    def binding(self, iface: str) -> BindingRow | None:
        return next((row for row in self.bindings if row.iface == iface), None)

    def world_value(self, key: str) -> WorldRow | None:
        return next((row for row in self.world if row.key == key), None)


_CACHE: dict[tuple, Inventory] = {}
_CACHE_LIMIT = 8
_ROWS: dict[tuple[int, str, str], tuple[Story, tuple]] = {}
"""A loaded story's rows, by the story object (kept alive here, so its id is not reused): a staged
tree shares every story the draft does not touch, so validating a draft lists only the ones it does."""
_ROWS_LIMIT = 2048


def _story_rows(story: Story, name: str, strip: str = "") -> tuple[list[IntentRow], list[AgentCall], list[GateRow]]:
    key = (id(story), name, strip)
    cached = _ROWS.get(key)
    if cached is not None and cached[0] is story:
        intents, calls, gates = cached[1]
        return list(intents), list(calls), list(gates)
    rows = _story_rows_of(story, name, strip)
    if len(_ROWS) >= _ROWS_LIMIT:
        _ROWS.clear()
    _ROWS[key] = (story, tuple(tuple(part) for part in rows))
    return rows


def intent_rows(model: Workspace, story: str) -> list[IntentRow]:
    """`build_inventory(model).intents` of one story, building only that story's intent rows (a draft's
    routes are checked in one story; the other stories it reloaded need no rows for that)."""
    if story == ROOT_INSTANCE:
        return [row for row in build_inventory(model).intents if row.story == story]
    rows = []
    for loaded in model.stories:
        if loaded.slug != story:
            continue
        key = (id(loaded), story, "\0intents")
        cached = _ROWS.get(key)
        if cached is None or cached[0] is not loaded:
            cached = (loaded, tuple(_intent_rows_of(loaded, story)))
            if len(_ROWS) >= _ROWS_LIMIT:
                _ROWS.clear()
            _ROWS[key] = cached
        rows.extend(cached[1])
    return rows


def _intent_rows_of(story: Story, name: str, strip: str = "") -> list[IntentRow]:
    intents = []
    for intent in story.all_intents():
        examples_at, synonyms_at = intent.examples_at, intent.synonyms_at
        phrases = [Phrase.model_construct(text=text, kind="example", at=examples_at) for text in intent.examples]
        phrases += [Phrase.model_construct(text=text, kind="synonym", at=synonyms_at) for text in intent.synonyms]
        label = intent.name[len(strip):] if strip and intent.name.startswith(strip) else intent.name
        intents.append(IntentRow.model_construct(
            story=name, name=label, description=intent.description, phrases=phrases,
            source="dev-story" if strip else "story", at=None if strip else intent.at, slots=dict(intent.slots)))
    return intents


def _story_rows_of(story: Story, name: str, strip: str = "") -> tuple[list[IntentRow], list[AgentCall], list[GateRow]]:
    intents, calls, gates = _intent_rows_of(story, name, strip), [], []
    if strip:
        return intents, calls, gates
    from core.kitsoki import build

    definition = build.unbuilt_definition(story)
    if definition is not None:
        # read from the definition, as build._state would read them: building every state's arms and
        # effects of every story cost more than the rest of the inventory (~1.2 s on kitsoki's repository)
        for path, spec in build.state_specs(definition).items():
            for invoke, at in build.invoked_steps(spec):
                if invoke.startswith(AGENT_HANDLER_PREFIX):
                    calls.append(AgentCall.model_construct(story=name, state=path, handler=invoke, at=at))
            advancing = build.advancing_intents(spec)
            decider = build.state_decider(spec)
            if len(advancing) >= 2 or decider is not None:
                gates.append(GateRow.model_construct(story=name, state=path, description=build.state_description(spec),
                                                     decider=decider, intents=advancing, at=build.state_at(spec)))
        return intents, calls, gates
    for state in story.states.values():
        for step in state.on_enter:
            if step.invoke and step.invoke.startswith(AGENT_HANDLER_PREFIX):
                calls.append(AgentCall.model_construct(story=name, state=state.name, handler=step.invoke, at=step.at))
        advancing = [intent for intent, arms in state.on.items()
                     if any(arm.target and not arm.fallback for arm in arms)]
        if len(advancing) >= 2 or state.decider is not None:
            gates.append(GateRow.model_construct(story=name, state=state.name, description=state.description,
                                                 decider=state.decider, intents=advancing, at=state.at))
    return intents, calls, gates


def _top_intent_names(story: Story) -> set[str]:
    """The names of a story's own top-level intents, read from its definition when it has one (reading
    `story.intents` builds every state of the story: a staged root instance costs ~0.1 s that way)."""
    from core.kitsoki.parse import LMap

    definition = story.definition
    if not isinstance(definition, LMap):
        return set(story.intents)
    block = definition.get("intents")  # what build._top_intents reads them from
    return set(block) if isinstance(block, LMap) else set()


def _root_rows(model: Workspace) -> list[IntentRow]:
    """dev-story's intents as the root instance routes them (by their dev-story names), with slots."""
    root = model.root_instance
    if root is not None:
        rows, _, _ = _story_rows(root, ROOT_INSTANCE, strip="root__")
        own = _top_intent_names(root)
        return [row for row in rows if row.name not in own]  # prefixed ones: dev-story's
    from core.kitsoki.build import build_intent
    from core.kitsoki.dev_story import DEV_STORY_INTENTS
    from core.kitsoki.parse import LMap

    rows = []
    for name, intent in DEV_STORY_INTENTS.items():
        slots = build_intent(name, LMap({"slots": LMap({k: LMap(v or {}) for k, v in intent.slots.items()})}),
                             ("", 0, 0), None, frozenset()).slots if intent.slots else {}
        rows.append(IntentRow.model_construct(
            story=ROOT_INSTANCE, name=name, description=intent.description, source="dev-story", at=None,
            phrases=[Phrase.model_construct(text=text, kind="example", at=None) for text in intent.examples]
            + [Phrase.model_construct(text=text, kind="synonym", at=None) for text in intent.synonyms], slots=slots))
    return rows


def build_inventory(workspace: Path | Workspace) -> Inventory:
    """Read the live tree (raises WorkspaceError when it does not load) and list what it models.

    Rows: the root instance (dev-story with everything it lifts from its own imports, by the
    names `root.overrides.synonyms` uses, with slots), the override synonyms where they are
    written, then every story with its folded imports; bindings and world values from
    `root.overrides` and the project profile. Cached per loaded model (stories that did not
    change are the same objects, so a warm pass reuses the rows)."""
    model = workspace if isinstance(workspace, Workspace) else load_workspace(Path(workspace))
    key = (str(model.path), id(model.root_instance), tuple(id(story) for story in model.stories),
           repr(model.config.root.model_dump() if model.config.root else None), tuple(model.config.source_files),
           tuple(str(s) for s in model.config.source_files if s.exists() and s.stat().st_mtime_ns))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    root = model.path
    located = override_locations(root, model.config)
    inventory = Inventory(workspace=root)
    overrides = model.config.root.overrides if model.config.root else None
    profile_bindings, profile_world = set(model.config.profile_bindings), set(model.config.profile_world)

    inventory.intents.extend(_root_rows(model))
    if overrides is not None:
        for name, texts in overrides.synonyms.items():
            inventory.intents.append(IntentRow(
                story=ROOT_INSTANCE, name=name, source="override", at=located.get(("synonyms", name, -1)),
                phrases=[Phrase(text=text, kind="synonym", at=located.get(("synonyms", name, index)))
                         for index, text in enumerate(texts)]))

    for story in model.stories:
        intents, calls, gates = _story_rows(story, story.slug)
        inventory.intents.extend(intents)
        inventory.agent_calls.extend(calls)
        inventory.gates.extend(gates)

    for iface in DEV_STORY_HOST_INTERFACES:
        if overrides is not None and iface in overrides.bindings:
            where = located.get(("bindings", iface, -1))
            source = "override" if where is not None and where.file.endswith(CONFIG_FILE) or \
                iface not in profile_bindings else "profile"
            inventory.bindings.append(BindingRow(iface=iface, handler=overrides.bindings[iface], source=source,
                                                 at=where))
        else:
            inventory.bindings.append(BindingRow(iface=iface, handler=DEV_STORY_DEFAULT_BINDINGS[iface],
                                                 source="default"))
    if overrides is not None:
        for key_name, value in overrides.world.items():
            where = located.get(("world", key_name, -1))
            source = "override" if where is not None and where.file.endswith(CONFIG_FILE) or \
                key_name not in profile_world else "profile"
            inventory.world.append(WorldRow(key=key_name, value=value, at=where, source=source))
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[key] = inventory
    return inventory
