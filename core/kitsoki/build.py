"""From a loaded AppDef (plain located data) to the story model (core.kitsoki.model).

The AppDef is the whole pipeline's output: imports folded (an import is a compound state at its
alias with `initial:` = its entry), phases expanded, interfaces resolved, `@exit:` rewritten to
`__exit__<name>`, the free-form fallback injected. Every state of the tree becomes a `State` keyed
by its dotted path; targets are kept as kitsoki resolves them (see `resolve_target`). Models are
built without validation (`model_construct`): the loader has checked the shapes already, and a
workspace holds tens of thousands of transitions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.kitsoki.imports import ALIASES_KEY
from core.kitsoki.tree import FALLBACK_KEY, Loaded
from core.kitsoki.model import (
    Effect,
    ImportInfo,
    Intent,
    Slot,
    State,
    Step,
    Story,
    Transition,
    Where,
    WorldVar,
)
from core.kitsoki.parse import LMap, LSeq

_VARDEF_KEYS = frozenset({"type", "default", "values"})
_set = object.__setattr__
_DEFAULTS: dict[type, tuple[dict[str, Any], dict[str, Any]]] = {}


def _make(cls: type, **values: Any) -> Any:
    """A model instance from values the loader has already checked: pydantic's model_construct
    without its per-call bookkeeping (a workspace builds tens of thousands of these)."""
    defaults = _DEFAULTS.get(cls)
    if defaults is None:
        plain_defaults, factories = {}, {}
        for name, info in cls.model_fields.items():
            if info.default_factory is not None:
                factories[name] = info.default_factory
            elif not info.is_required():
                plain_defaults[name] = info.default
        defaults = _DEFAULTS[cls] = (plain_defaults, factories)
    plain_defaults, factories = defaults
    data = plain_defaults.copy()
    for name, factory in factories.items():
        if name not in values:
            data[name] = factory()
    data.update(values)
    obj = _new(cls)
    _set(obj, "__dict__", data)
    _set(obj, "__pydantic_fields_set__", set(values))
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


def _text(value: Any) -> str:
    """A string field as kitsoki's decoder fills it from any scalar."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return value if isinstance(value, str) else str(value)


_WHERE_FIELDS = frozenset({"file", "line", "column"})
_new = object.__new__


def _where(at: tuple[str, int, int]) -> Where:
    obj = _new(Where)
    _set(obj, "__dict__", {"file": at[0], "line": at[1], "column": at[2]})
    _set(obj, "__pydantic_fields_set__", set(_WHERE_FIELDS))
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


def plain(value: Any) -> Any:
    """Located data as plain dicts and lists (our internal keys dropped)."""
    if isinstance(value, dict):
        return {key: plain(item) if isinstance(item, (dict, list)) else item
                for key, item in value.items() if key[:2] != "__"}
    if isinstance(value, list):
        return [plain(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def _strings(value: Any) -> list[str]:
    return [_text(item) for item in value] if isinstance(value, list) else []


def _origin(name: str) -> str | None:
    if "__" not in name:
        return None
    return ".".join(name.split("__")[:-1])


def build_intent(name: str, spec: Any, at: tuple[str, int, int], state: str | None, lifted: frozenset[str]) -> Intent:
    spec = spec if isinstance(spec, LMap) else LMap()
    slots: dict[str, Slot] = {}
    block = spec.get("slots") if isinstance(spec.get("slots"), LMap) else LMap()
    for slot_name, slot in block.items():
        slot = slot if isinstance(slot, LMap) else LMap()
        synonyms = slot.get("synonyms") if isinstance(slot.get("synonyms"), LMap) else {}
        slots[slot_name] = _make(Slot, 
            name=slot_name, type=_text(slot.get("type")) or "string", values=_strings(slot.get("values")),
            value_synonyms={key: _strings(items) for key, items in synonyms.items()},
            required=slot.get("required") is True, default=plain(slot.get("default")),
            at=_where(block.key_at(slot_name)))
    priority = spec.get("priority")
    return _make(Intent, 
        name=name, title=_text(spec.get("title")), description=_text(spec.get("description")),
        examples=_strings(spec.get("examples")), synonyms=_strings(spec.get("synonyms")), slots=slots,
        hidden=spec.get("hidden") is True, at=_where(at),
        examples_at=_where(spec.key_at("examples")) if "examples" in spec else None,
        synonyms_at=_where(spec.key_at("synonyms")) if "synonyms" in spec else None,
        state=state, priority=int(priority) if isinstance(priority, (int, float)) and not isinstance(priority, bool) else 0,
        origin=_origin(name), lifted=name in lifted)


def _effects(raw: Any) -> list[Effect]:
    out = []
    for effect in raw if isinstance(raw, LSeq) else ():
        if not isinstance(effect, LMap):
            continue
        marks, file = effect.marks, effect.file
        for op, args in effect.items():
            if op[:2] == "__":
                continue
            mark = marks.get(op)
            at = (file, mark[0], mark[1]) if mark else (file, effect.line, effect.column)
            obj = _new(Effect)
            _set(obj, "__dict__", {"op": op, "args": plain(args), "at": _where(at)})
            _set(obj, "__pydantic_fields_set__", {"op", "args", "at"})
            _set(obj, "__pydantic_extra__", None)
            _set(obj, "__pydantic_private__", None)
            out.append(obj)
    return out


def _arm(intent: str, arm: Any, at: tuple[str, int, int]) -> Transition:
    arm = arm if isinstance(arm, LMap) else LMap()
    target = arm.get("target")
    return _make(Transition, 
        intent=intent, target=_text(target) or None, when=_text(arm.get("when")) or None,
        default=arm.get("default") is True, effects=_effects(arm.get("effects")),
        guard_hint=_text(arm.get("guard_hint")) or None, emit=_strings(arm.get("emit")),
        fallback=bool(arm.get(FALLBACK_KEY)), at=_where(arm.at if arm.kline else at))


def _state(path: str, spec: LMap, parent: str | None, lifted: frozenset[str], opaque: bool,
           out: dict[str, State]) -> None:
    on: dict[str, list[Transition]] = {}
    block = spec.get("on") if isinstance(spec.get("on"), LMap) else LMap()
    for intent, arms in block.items():
        arms = arms if isinstance(arms, LSeq) else LSeq()
        on[intent] = [_arm(intent, arm, arms.item_at(index)) for index, arm in enumerate(arms)]
    steps = []
    for index, effect in enumerate(spec.get("on_enter") or ()):
        if not isinstance(effect, LMap):
            continue
        where = effect.at if effect.kline else (effect.file, effect.line, effect.column)
        steps.append(_make(Step, 
            invoke=_text(effect.get("invoke")) or None, emit_intent=_text(effect.get("emit_intent")) or None,
            with_=plain(effect["with"]) if "with" in effect else None,
            raw={key: plain(value) for key, value in effect.items() if not key.startswith("__")}, at=_where(where)))
    intents = {}
    local = spec.get("intents") if isinstance(spec.get("intents"), LMap) else LMap()
    for name, intent in local.items():
        intents[name] = build_intent(name, intent, local.key_at(name), path, lifted)
    timeout = spec.get("timeout") if isinstance(spec.get("timeout"), LMap) else None
    children = spec.get("states") if isinstance(spec.get("states"), LMap) else LMap()
    decider = spec.get("decider")
    opaque = opaque or bool(spec.get("__library__"))
    alias = spec.get("__import__")
    state = _make(State, 
        name=path, description=_text(spec.get("description")),
        decider=None if decider is None else _text(decider), on=on, on_enter=steps, intents=intents,
        terminal=spec.get("terminal") is True, type=_text(spec.get("type")),
        initial=_text(spec.get("initial")) or None, children=list(children), parent=parent,
        default_intent=_text(spec.get("default_intent")) or None, relevant_world=_strings(spec.get("relevant_world")),
        timeout_after=_text(timeout.get("after")) or None if timeout else None,
        timeout_target=_text(timeout.get("target")) or None if timeout else None,
        intent_aliases=dict(spec.get(ALIASES_KEY) or {}), import_alias=alias,
        from_library=opaque and alias is None, view=spec.get("view"), at=_where(spec.at))
    out[path] = state
    for name, child in children.items():
        if isinstance(child, LMap):
            _state(f"{path}.{name}", child, path, lifted, opaque, out)


def build_story(loaded: Loaded, *, slug: str, materialized: bool, own_files: list[str],
                as_written: Any = None) -> Story:
    """The Story of a loaded app (`loaded.definition` must be set)."""
    definition = loaded.definition
    assert definition is not None
    lifted = frozenset(name for name, spec in (definition.get("intents") or {}).items()
                       if isinstance(spec, LMap) and "__" not in name and spec.file != definition.file
                       and not _declared_in(own_files, spec.file))
    app = definition.get("app") if isinstance(definition.get("app"), LMap) else LMap()
    from_library = {alias for alias, wrapper in loaded.wrappers.items() if wrapper.origin == "library"}
    exits = {}
    block = definition.get("exits") if isinstance(definition.get("exits"), LMap) else LMap()
    for name in block:
        exits[name] = _where(block.key_at(name))
    own = set(own_files)
    root = definition.get("root")
    story = Story.model_construct(
        slug=slug, path=Path(loaded.path), app_id=_text(app.get("id")), title=_text(app.get("title")),
        root=root if isinstance(root, str) and root else None,
        exits=exits, imports=as_written,
        folded={alias: _make(ImportInfo, alias=alias, source=wrapper.source, origin=wrapper.origin,
                                                  entry=wrapper.entry)
                for alias, wrapper in loaded.wrappers.items()},
        imported=[Path(path) for path in loaded.imports],
        import_files=[Path(file) for file in loaded.files if file not in own],
        hosts=[_text(host) for host in definition.get("hosts") or ()],
        materialized=materialized, files=[Path(file) for file in own_files], open_world=bool(from_library))
    story._definition = definition
    # world, intents and states are built when first read, each on its own (a workspace load that only
    # checks what loads, an inventory, or a flow run that reads the world and the intents, never pays for
    # every state's arms and effects).
    story._lazy = _Tables(definition, lifted, from_library)
    story._intents_only = lambda: _intent_list(definition, lifted)
    for name in _LAZY_FIELDS:
        story.__dict__.pop(name, None)
    return story


_LAZY_FIELDS = ("world", "intents", "states")


class _Tables:
    """A loaded story's world, intents and states, each built from its definition when first read."""

    __slots__ = ("definition", "lifted", "from_library", "_local")

    def __init__(self, definition: LMap, lifted: frozenset[str], from_library: set[str]) -> None:
        self.definition, self.lifted, self.from_library = definition, lifted, from_library
        self._local: dict[str, dict[str, Intent]] | None = None

    def __call__(self, name: str) -> Any:
        if name == "world":
            return _world(self.definition)
        if name == "intents":
            return _top_intents(self.definition, self.lifted)
        return _states(self.definition, self.lifted, self.from_library)

    def local_intents(self) -> dict[str, dict[str, Intent]]:
        """Each state's own intents by its path (`_local_intents`), built once."""
        if self._local is None:
            self._local = _local_intents(self.definition, self.lifted)
        return self._local


def _world(definition: LMap) -> dict[str, WorldVar]:
    world = {}
    block = definition.get("world") if isinstance(definition.get("world"), LMap) else LMap()
    for name, var in block.items():
        if isinstance(var, LMap) and _VARDEF_KEYS & set(var):
            world[name] = _make(WorldVar, name=name, type=_text(var.get("type")),
                                                   default=plain(var.get("default")), at=_where(block.key_at(name)))
        else:
            world[name] = _make(WorldVar, name=name, type="", default=plain(var), at=_where(block.key_at(name)))
    return world


def _top_intents(definition: LMap, lifted: frozenset[str]) -> dict[str, Intent]:
    intents = {}
    block = definition.get("intents") if isinstance(definition.get("intents"), LMap) else LMap()
    for name, intent in block.items():
        where = block.key_at(name) if name in block.marks else (intent.at if isinstance(intent, LMap) else block.at)
        intents[name] = build_intent(name, intent, where, None, lifted)
    return intents


def _states(definition: LMap, lifted: frozenset[str], from_library: set[str]) -> dict[str, State]:
    states: dict[str, State] = {}
    block = definition.get("states") if isinstance(definition.get("states"), LMap) else LMap()
    for name, spec in block.items():
        if isinstance(spec, LMap):
            _state(name, spec, None, lifted, name in from_library, states)
    return states


def _intent_list(definition: LMap, lifted: frozenset[str]) -> list[Intent]:
    """What `Story.all_intents` yields once the story's states are built, without building them: the
    story's intents, then each state's own (states in `_states`' order)."""
    out = list(_top_intents(definition, lifted).values())
    for intents in _local_intents(definition, lifted).values():
        out.extend(intents.values())
    return out


def _local_intents(definition: LMap, lifted: frozenset[str]) -> dict[str, dict[str, Intent]]:
    """Each state's own intents by its path, as `_state` builds them, without its arms and effects."""
    out = {}
    for path, spec in state_specs(definition).items():
        local = spec.get("intents") if isinstance(spec.get("intents"), LMap) else LMap()
        out[path] = {name: build_intent(name, intent, local.key_at(name), path, lifted) for name, intent in local.items()}
    return out


def unbuilt_definition(story: Story) -> LMap | None:
    """The story's definition while its states are still to be built from it (`_states`), else None."""
    private = story._realized()  # a story known by its outline (core.kitsoki.loadcache) is loaded first
    definition = private.get("_definition")
    if private.get("_lazy") is None or "states" in story.__dict__ or not isinstance(definition, LMap):
        return None
    return definition


def state_lines(story: Story) -> list[tuple[str, str, int]]:
    """(path, file, line) of each state, in `story.states`' order, without building the states."""
    definition = unbuilt_definition(story)
    if definition is None:
        return [(path, str(state.at.file), state.at.line) for path, state in story.states.items()
                if state.at is not None]
    out = []
    for path, spec in state_specs(definition).items():
        file, line, _ = spec.at
        out.append((path, file, line))
    return out


def state_specs(definition: LMap) -> dict[str, LMap]:
    """Every state's spec by its dotted path, in `_states`' order (a path declared twice keeps its place and
    the later spec, as the states dict does): what reads a few fields of each state without building it."""
    out: dict[str, LMap] = {}

    def state(path: str, spec: LMap) -> None:
        out[path] = spec
        children = spec.get("states") if isinstance(spec.get("states"), LMap) else LMap()
        for name, child in children.items():
            if isinstance(child, LMap):
                state(f"{path}.{name}", child)

    block = definition.get("states") if isinstance(definition.get("states"), LMap) else LMap()
    for name, spec in block.items():
        if isinstance(spec, LMap):
            state(name, spec)
    return out


def advancing_intents(spec: LMap) -> list[str]:
    """`[intent for intent, arms in state.on.items() if any(arm.target and not arm.fallback for arm in arms)]`
    of the State `_state` would build from `spec`, read from the spec."""
    block = spec.get("on")
    if not isinstance(block, LMap):
        return []
    out = []
    for intent, arms in block.items():
        if isinstance(arms, LSeq) and any(isinstance(arm, LMap) and _text(arm.get("target"))
                                          and not arm.get(FALLBACK_KEY) for arm in arms):
            out.append(intent)
    return out


def state_decider(spec: LMap) -> str | None:
    decider = spec.get("decider")
    return None if decider is None else _text(decider)


def state_description(spec: LMap) -> str:
    return _text(spec.get("description"))


def state_at(spec: LMap) -> Where:
    return _where(spec.at)


def invoked_steps(spec: LMap) -> list[tuple[str, Where]]:
    """(invoke, at) of each `on_enter` step of the State `_state` would build from `spec` that invokes something."""
    out = []
    for effect in spec.get("on_enter") or ():
        if not isinstance(effect, LMap):
            continue
        invoke = _text(effect.get("invoke"))
        if invoke:
            out.append((invoke, _where(effect.at if effect.kline else (effect.file, effect.line, effect.column))))
    return out


def _declared_in(files: list[str], file: str) -> bool:
    return file in files
