"""The story model: what a loaded kitsoki story is made of (states, intents, transitions, world).

Plain data with the file:line:col of each declaration; built by the loader (core.kitsoki.story
and the modules beside it) and read by the inventory, the mapper, the drafters and the flow runner.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.kitsoki.config import KitsokiConfig
from core.kitsoki.yamlread import ConfigError, ConfigIssue, Where, YamlLimits  # noqa: F401

STORY_LIMITS = YamlLimits(max_bytes=4 << 20, max_values=400_000, max_depth=64, max_tokens=2_000_000,
                          what="story files")
"""Real stories run to thousands of lines (dev-story's app.yaml is ~6k); still bounded."""
APP_FILE = "app.yaml"
MATERIALIZED_DIR = ".kitsoki/stories"
EXIT_PREFIX = "@exit:"
SYNTH_EXIT_PREFIX = "__exit__"
DECIDERS = ("", "llm", "human")
AGENT_HANDLER_PREFIX = "host.agent."


class WorkspaceError(ConfigError):
    """The workspace does not load; `issues` lists every problem, each with file:line:col."""


class Slot(BaseModel):
    name: str
    type: str = "string"
    values: list[str] = Field(default_factory=list)
    value_synonyms: dict[str, list[str]] = Field(default_factory=dict)
    required: bool = False
    at: Where


class Intent(BaseModel):
    name: str
    title: str = ""
    description: str = ""
    examples: list[str] = Field(default_factory=list)
    synonyms: list[str] = Field(default_factory=list)
    slots: dict[str, Slot] = Field(default_factory=dict)
    hidden: bool = False
    at: Where
    """Where the intent's key is."""
    examples_at: Where | None = None
    synonyms_at: Where | None = None
    state: str | None = None
    """Set for a state-local intent declaration."""


class Effect(BaseModel):
    op: str
    """say, set, increment, or a kitsoki effect we do not model."""
    args: Any = None
    at: Where


class Transition(BaseModel):
    intent: str
    target: str | None = None
    when: str | None = None
    default: bool = False
    effects: list[Effect] = Field(default_factory=list)
    at: Where


class Step(BaseModel):
    """One `on_enter` entry: an `invoke:` of a host handler or an `emit_intent:`."""

    invoke: str | None = None
    emit_intent: str | None = None
    with_: Any = None
    at: Where


class State(BaseModel):
    name: str
    """Dotted path for nested states (`parent.child`)."""
    description: str = ""
    decider: str | None = None
    """None when the key is absent; "" follows the run mode."""
    on: dict[str, list[Transition]] = Field(default_factory=dict)
    on_enter: list[Step] = Field(default_factory=list)
    intents: dict[str, Intent] = Field(default_factory=dict)
    terminal: bool = False
    at: Where


class WorldVar(BaseModel):
    name: str
    type: str = ""
    default: Any = None
    at: Where


class Story(BaseModel):
    slug: str
    """The story's folder name."""
    path: Path
    """Its app.yaml."""
    app_id: str = ""
    title: str = ""
    root: str | None = None
    world: dict[str, WorldVar] = Field(default_factory=dict)
    intents: dict[str, Intent] = Field(default_factory=dict)
    states: dict[str, State] = Field(default_factory=dict)
    exits: dict[str, Where] = Field(default_factory=dict)
    imports: Any = None
    """The `imports:` block as written (a mapping of alias -> import in current kitsoki)."""
    materialized: bool = False
    files: list[Path] = Field(default_factory=list)
    """app.yaml first, then its included room files in include order."""
    open_world: bool = False
    """Imports or phases bring intents and states we cannot see: skip existence checks."""

    @property
    def dir(self) -> Path:
        return self.path.parent

    def all_intents(self) -> Iterator[Intent]:
        """Every intent declaration: the story's, then each state's local ones."""
        yield from self.intents.values()
        for state in self.states.values():
            yield from state.intents.values()


class Workspace(BaseModel):
    path: Path
    config: KitsokiConfig
    stories: list[Story] = Field(default_factory=list)
    warnings: list[ConfigIssue] = Field(default_factory=list)

    def story(self, slug: str) -> Story | None:
        return next((story for story in self.stories if story.slug == slug), None)

    def files(self) -> list[Path]:
        """Every file the model was read from."""
        out = list(self.config.source_files)
        for story in self.stories:
            out.extend(story.files)
        return out
