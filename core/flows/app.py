"""The story as the flow runner sees it: one narrow adapter over the loaded Story.

The loader (core.kitsoki.story) models what proposals need: intents with their slots, world
variables with types and defaults, the files a story spans. The runner needs more of each state
than that model keeps (effects with `invoke`/`bind`/`on_error`/`id`, `timeout:`, `view:`,
`type`/`initial`, `guard_hint`), so it reads the states back from the same files the loader
composed (`Story.files`: app.yaml, then its includes in include order) and keeps them here as
plain dicts. Everything else the runner knows about a story comes through this module, so a
change of the loader's model touches one place.

When the loader hands over kitsoki's composed definition (`Story.definition`: imports folded under
their alias, phases expanded, interfaces resolved), the states are read from it instead. Without
it, what the files alone cannot give (imports, phases, parallel states) is listed in
`AppModel.needs_loader`, and a flow on such a story is reported as not supported rather than run
against a partial story.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.flows.yaml12 import Yaml12Loader
from core.kitsoki.story import STORY_LIMITS, Intent, Story, WorldVar
from core.safeio import read_regular

WILDCARD = "*"
RESERVED_WORLD = {"session_cost_usd": 0.0, "turn_cost_usd": 0.0, "last_error": "", "write_mode_scope": ""}
"""World keys kitsoki's WorldFromSchema always seeds."""


@dataclass
class Arm:
    """One transition arm of an `on:` handler."""

    intent: str
    target: str = ""
    when: str = ""
    default: bool = False
    effects: list[Any] = field(default_factory=list)
    guard_hint: str = ""
    view: Any = None


@dataclass
class StateDef:
    path: str
    raw: dict[str, Any]
    type: str = ""
    initial: str = ""
    terminal: bool = False
    on: dict[str, list[Arm]] = field(default_factory=dict)
    on_enter: list[Any] = field(default_factory=list)
    timeout: tuple[str, str] | None = None
    """(after, target) of a `timeout:` block."""
    view: Any = None
    description: str = ""
    intent_aliases: dict[str, str] = field(default_factory=dict)
    """An imported child's intent names as the parent calls them (kitsoki's IntentAliases)."""


@dataclass
class AppModel:
    story: Story
    states: dict[str, StateDef] = field(default_factory=dict)
    host_interfaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    needs_loader: list[str] = field(default_factory=list)
    """Constructs the loader does not compose yet; non-empty means flows cannot be run soundly."""
    problems: list[str] = field(default_factory=list)
    """Shapes the adapter could not read (each makes every flow of the story not supported)."""

    @property
    def root(self) -> str:
        return self.story.root or ""

    @property
    def dir(self) -> Path:
        return self.story.dir

    @property
    def world(self) -> dict[str, WorldVar]:
        return self.story.world

    def world_defaults(self) -> dict[str, Any]:
        """kitsoki's WorldFromSchema: every declared key that has a default (a fresh copy), plus the
        reserved keys it seeds when the story does not declare them."""
        from core.flows.values import copy_value  # copy.deepcopy's result for decoded YAML, several times faster

        world = {name: copy_value(var.default) for name, var in self.story.world.items() if var.default is not None}
        for key, value in RESERVED_WORLD.items():
            world.setdefault(key, value)
        return world

    def lookup_intent(self, state: str, name: str) -> Intent | None:
        """The declaration an intent resolves to from a state: the nearest state-local one, else global."""
        for path in chain(state):
            found = self.story.local_intents(path)
            if found is not None and name in found:
                return found[name]
        return self.story.intents.get(name)

    def has_children(self, state: str) -> bool:
        prefix = f"{state}."
        return any(name.startswith(prefix) for name in self.states)


def chain(state: str):
    """The state and its ancestors, leaf first (`a.b.c`, `a.b`, `a`)."""
    path = state
    while True:
        yield path
        if "." not in path:
            return
        path = path.rsplit(".", 1)[0]


_MODELS: dict[tuple[str, int], AppModel] = {}


def app_model(story: Story) -> AppModel:
    """The runner's view of a story (cached per loaded Story object)."""
    key = (str(story.path), id(story))
    model = _MODELS.get(key)
    if model is None:
        if len(_MODELS) > 64:
            _MODELS.clear()
        model = _build(story)
        _MODELS[key] = model
    return model


def load_yaml12(text: str) -> Any:
    return yaml.load(text, Loader=Yaml12Loader)


def _read(path: Path) -> Any:
    text = read_regular(path, STORY_LIMITS.max_bytes, what="story file").decode("utf-8")
    return load_yaml12(text)  # the loader already validated these files


KEPT_INTERNAL_KEYS = ("__iface__",)
"""The loader's internal keys the runner reads: `__iface__` is an invoke's `iface.<name>.<op>` before
the loader bound it, which a fixture's `host_bindings` rebinds."""


def _plain(value: Any) -> Any:
    """A composed definition as plain data (the loader's other internal `__` keys dropped)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                key = str(key)
            if key[:2] == "__" and key not in KEPT_INTERNAL_KEYS:
                continue
            out[key] = _plain(item) if isinstance(item, (dict, list)) else item
        return out
    if isinstance(value, list):
        return [_plain(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def _build(story: Story) -> AppModel:
    model = AppModel(story=story)
    definition = getattr(story, "definition", None)
    if isinstance(definition, dict):
        # The loader composed kitsoki's AppDef (includes merged, imports folded, phases expanded,
        # interfaces resolved, exits materialised): read the states from it.
        documents = [_plain(definition)]
        folded = getattr(story, "folded", None) or {}
        for alias, info in folded.items():
            if getattr(info, "origin", "") == "library":
                model.needs_loader.append(
                    f"import {alias} folded from the built-in library summary, whose states are not known "
                    "(point KITSOKI_REPO at a kitsoki checkout)")
    else:
        if story.imports:
            model.needs_loader.append("imports (needs the loader)")
        documents = []
        for path in story.files:
            try:
                documents.append(_read(path))
            except (OSError, ValueError, yaml.YAMLError) as exc:
                model.problems.append(f"cannot read {path.name}: {exc}")
    for document in documents:
        if not isinstance(document, dict):
            continue
        for key in ("phases", "phase_templates"):
            if definition is not None:
                break  # the loader expanded them
            if document.get(key) and f"{key} (needs the loader)" not in model.needs_loader:
                model.needs_loader.append(f"{key} (needs the loader)")
        interfaces = document.get("host_interfaces")
        if isinstance(interfaces, dict):
            for name, spec in interfaces.items():
                if isinstance(spec, dict):
                    model.host_interfaces.setdefault(str(name), spec)
        states = document.get("states")
        if isinstance(states, dict):
            _read_states(model, states, "")
    for name in story.exits:
        synth = f"__exit__{name}"
        model.states.setdefault(synth, StateDef(path=synth, raw={}, terminal=True))
    aliases_of = _aliases_of(story)
    for path, state in model.states.items():  # what only the loader's model carries
        aliases = aliases_of(path)
        if isinstance(aliases, dict) and aliases and not state.intent_aliases:
            state.intent_aliases = {str(k): str(v) for k, v in aliases.items()}
    return model


def _aliases_of(story: Story):
    """path -> the state's `intent_aliases` as the loader's State carries them, read from the definition while
    the story's states are not built (building them all costs more than the rest of the adapter)."""
    from core.kitsoki.build import unbuilt_definition, state_specs
    from core.kitsoki.imports import ALIASES_KEY

    definition = unbuilt_definition(story) if isinstance(story, Story) else None
    if definition is None:
        return lambda path: getattr(story.states.get(path), "intent_aliases", None)
    specs = state_specs(definition)
    return lambda path: dict(specs[path].get(ALIASES_KEY) or {}) if path in specs else None


def _read_states(model: AppModel, block: dict[str, Any], prefix: str) -> None:
    for name, spec in block.items():
        path = f"{prefix}{name}"
        if not isinstance(spec, dict):
            spec = {}
        state = StateDef(path=path, raw=spec, type=str(spec.get("type") or ""),
                         initial=str(spec.get("initial") or ""), terminal=bool(spec.get("terminal")),
                         view=spec.get("view"), description=str(spec.get("description") or ""))
        on = spec.get("on")
        if isinstance(on, dict):
            for intent, arms in on.items():
                intent = str(intent)
                state.on[intent] = _arms(model, path, intent, arms)
        on_enter = spec.get("on_enter")
        if isinstance(on_enter, list):
            state.on_enter = list(on_enter)
        elif isinstance(on_enter, dict):
            state.on_enter = [on_enter]
        aliases = spec.get("intent_aliases")
        if isinstance(aliases, dict):
            state.intent_aliases = {str(k): str(v) for k, v in aliases.items()}
        timeout = spec.get("timeout")
        if isinstance(timeout, dict):
            state.timeout = (str(timeout.get("after") or ""), str(timeout.get("target") or ""))
        model.states[path] = state
        children = spec.get("states")
        if isinstance(children, dict):
            # kitsoki descends into `initial:` only for `type: compound`; nothing is inferred
            _read_states(model, children, f"{path}.")


def _arms(model: AppModel, state: str, intent: str, value: Any) -> list[Arm]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Arm(intent=intent, target=value)]
    items = value if isinstance(value, list) else [value]
    arms = []
    for item in items:
        if isinstance(item, str):
            arms.append(Arm(intent=intent, target=item))
            continue
        if not isinstance(item, dict):
            model.problems.append(f"states.{state}.on.{intent}: an arm that is not a mapping")
            continue
        effects = item.get("effects")
        if effects is None:
            effects = []
        elif isinstance(effects, dict):
            effects = [effects]
        elif not isinstance(effects, list):
            model.problems.append(f"states.{state}.on.{intent}.effects: not a list")
            effects = []
        arms.append(Arm(intent=intent, target=str(item.get("target") or ""), when=str(item.get("when") or ""),
                        default=bool(item.get("default")), effects=list(effects),
                        guard_hint=str(item.get("guard_hint") or ""), view=item.get("view")))
    return arms
