"""What the workspace already models, regenerated from the live tree on every proposer pass.

kitsoki's mapper persona greps `host.agent.*` call sites and the `intents:` blocks by hand
(reference/kitsoki-formats.md §1, "Inventory for dedup"); this is the same inventory as data, each
row with the file:line it came from, so a proposal can cite what it was compared against. It is
never cached: a pass that reads an inventory reads the tree as it is now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.kitsoki.config import DEV_STORY_HOST_INTERFACES, override_locations  # noqa: F401
from core.kitsoki.dev_story import DEV_STORY_INTENTS
from core.kitsoki.story import AGENT_HANDLER_PREFIX, Where, Workspace, load_workspace

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
    source: Literal["override", "default"]
    at: Where | None = None


class WorldRow(BaseModel):
    key: str
    value: Any
    at: Where | None = None


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


def build_inventory(workspace: Path | Workspace) -> Inventory:
    """Read the live tree (raises WorkspaceError when it does not load) and list what it models."""
    model = workspace if isinstance(workspace, Workspace) else load_workspace(Path(workspace))
    root = model.path
    located = override_locations(root)
    inventory = Inventory(workspace=root)
    overrides = model.config.root.overrides if model.config.root else None

    for name, intent in DEV_STORY_INTENTS.items():
        phrases = [Phrase(text=text, kind="example") for text in intent.examples]
        phrases += [Phrase(text=text, kind="synonym") for text in intent.synonyms]
        inventory.intents.append(IntentRow(story=ROOT_INSTANCE, name=name, description=intent.description,
                                           phrases=phrases, source="dev-story"))
    if overrides is not None:
        for name, texts in overrides.synonyms.items():
            inventory.intents.append(IntentRow(
                story=ROOT_INSTANCE, name=name, source="override", at=located.get(("synonyms", name, -1)),
                phrases=[Phrase(text=text, kind="synonym", at=located.get(("synonyms", name, index)))
                         for index, text in enumerate(texts)]))

    for story in model.stories:
        for intent in story.all_intents():
            phrases = [Phrase(text=text, kind="example", at=intent.examples_at) for text in intent.examples]
            phrases += [Phrase(text=text, kind="synonym", at=intent.synonyms_at) for text in intent.synonyms]
            inventory.intents.append(IntentRow(story=story.slug, name=intent.name, description=intent.description,
                                               phrases=phrases, at=intent.at, slots=dict(intent.slots)))
        for state in story.states.values():
            for step in state.on_enter:
                if step.invoke and step.invoke.startswith(AGENT_HANDLER_PREFIX):
                    inventory.agent_calls.append(AgentCall(story=story.slug, state=state.name,
                                                           handler=step.invoke, at=step.at))
            advancing = [name for name, arms in state.on.items() if any(arm.target for arm in arms)]
            if len(advancing) >= 2 or state.decider is not None:
                inventory.gates.append(GateRow(story=story.slug, state=state.name, description=state.description,
                                               decider=state.decider, intents=advancing, at=state.at))

    for iface in DEV_STORY_HOST_INTERFACES:
        if overrides is not None and iface in overrides.bindings:
            inventory.bindings.append(BindingRow(iface=iface, handler=overrides.bindings[iface], source="override",
                                                 at=located.get(("bindings", iface, -1))))
        else:
            inventory.bindings.append(BindingRow(iface=iface, handler=DEV_STORY_DEFAULT_BINDINGS[iface],
                                                 source="default"))
    if overrides is not None:
        for key, value in overrides.world.items():
            inventory.world.append(WorldRow(key=key, value=value, at=located.get(("world", key, -1))))
    return inventory
