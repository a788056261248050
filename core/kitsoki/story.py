"""The kitsoki workspace model: `.kitsoki.yaml` plus the stories it names, loaded and validated.

A story is `<story_dir>/<name>/app.yaml` with its `include:` room files; materialized roots live
under `.kitsoki/stories/<slug>/` and are loaded whether or not `story_dirs` names that folder.
Validation is kitsoki's where it matters to a proposal (reference/kitsoki-formats.md §1): the
config rules (root.import, binding interfaces, world keys), synonym templates that name declared
slots and never put two captures side by side, `on:` transitions that name declared intents and
existing targets. Every problem carries file:line:col; one load reports them all.

Stories use far more of kitsoki than we model (guards, views, phases, imports, agents ...): keys we
do not know pass through untouched, and checks that cannot be made soundly (a story that imports
another, phase-generated states) are skipped rather than guessed.
"""

from __future__ import annotations

import glob as globlib
import os
from pathlib import Path

from core.kitsoki.config import (
    CONFIG_FILE,
    ConfigError,
    ConfigIssue,
    KitsokiConfig,
    load_config,
    override_locations,
)
from core.kitsoki.model import (  # noqa: F401  (the model's names stay importable from here)
    AGENT_HANDLER_PREFIX,
    APP_FILE,
    DECIDERS,
    EXIT_PREFIX,
    MATERIALIZED_DIR,
    STORY_LIMITS,
    SYNTH_EXIT_PREFIX,
    Effect,
    Intent,
    Slot,
    State,
    Step,
    Story,
    Transition,
    Where,
    WorkspaceError,
    WorldVar,
    Workspace,
)
from core.kitsoki.routing import is_template, template_problems
from core.kitsoki.yamlread import _Checker, _compose_file, _describe, _FileProblem, _plain, _Value, _ValueProblems

# --- public API -------------------------------------------------------------------------------


def story_app_files(workspace: Path, config: KitsokiConfig) -> list[tuple[Path, bool]]:
    """(app.yaml, materialized) for each story the workspace has, in story_dirs order, no repeats."""
    seen: set[Path] = set()
    out: list[tuple[Path, bool]] = []
    materialized_root = (workspace / MATERIALIZED_DIR).absolute()

    def add(app: Path, materialized: bool) -> None:
        key = Path(os.path.normpath(app.absolute()))
        if key not in seen and app.is_file():
            seen.add(key)
            out.append((app, materialized))

    for entry in config.story_dirs:
        folder = Path(os.path.normpath(workspace / entry))
        if not _inside(folder, workspace):
            continue  # story_dirs may point anywhere in kitsoki; we only model the workspace's own
        is_materialized = Path(os.path.normpath(folder.absolute())) == Path(os.path.normpath(materialized_root))
        add(folder / APP_FILE, is_materialized)
        for child in _sorted_dirs(folder):
            add(child / APP_FILE, is_materialized)
    for child in _sorted_dirs(workspace / MATERIALIZED_DIR):
        add(child / APP_FILE, True)
    return out


def load_workspace(path: Path) -> Workspace:
    """Load `.kitsoki.yaml` and every story; raise WorkspaceError listing every problem."""
    workspace = Path(path)
    try:
        config = load_config(workspace)
    except ConfigError as exc:
        raise WorkspaceError(exc.issues) from None
    issues: list[ConfigIssue] = []
    warnings: list[ConfigIssue] = list(config.warnings)
    stories = []
    for app, materialized in story_app_files(workspace, config):
        story = _load_story(workspace, app, materialized, issues, warnings)
        if story is not None:
            stories.append(story)
    _check_override_synonyms(workspace, config, issues, warnings)
    if issues:
        raise WorkspaceError(issues)
    return Workspace(path=workspace, config=config, stories=stories, warnings=warnings)


def load_story(app_yaml: Path, workspace: Path | None = None) -> Story:
    """One story on its own (its includes resolved against its folder)."""
    issues: list[ConfigIssue] = []
    warnings: list[ConfigIssue] = []
    root = workspace or app_yaml.parent
    story = _load_story(root, app_yaml, MATERIALIZED_DIR in app_yaml.as_posix(), issues, warnings)
    if issues or story is None:
        raise WorkspaceError(issues)
    return story


# --- loading one story ------------------------------------------------------------------------


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(os.path.normpath(path.absolute())).relative_to(Path(os.path.normpath(root.absolute())))
    except ValueError:
        return False
    return True


def _sorted_dirs(folder: Path) -> list[Path]:
    try:
        return sorted(child for child in folder.iterdir() if child.is_dir() and not child.name.startswith("."))
    except OSError:
        return []


def _where(value: _Value, at_key: bool = False) -> Where:
    mark = value.key_at if at_key and value.key_at else value.at
    return Where(file=mark.file, line=mark.line, column=mark.column)


class _StoryReader:
    def __init__(self, workspace: Path, app: Path, issues: list[ConfigIssue], warnings: list[ConfigIssue]):
        self.workspace = workspace
        self.app = app
        self.check = _Checker()
        self.issues = issues
        self.warnings = warnings

    def compose(self, path: Path) -> _Value | None:
        try:
            return _compose_file(path, STORY_LIMITS)
        except _FileProblem as problem:
            self.issues.append(ConfigIssue(file=str(path), line=problem.line, column=problem.column,
                                           message=problem.message))
        except _ValueProblems as problems:
            self.issues.extend(problems.issues)
        return None

    def report(self, value: _Value, key: str, message: str, at_key: bool = False) -> None:
        self.check.report(value, key, message, at_key=at_key)

    def flush(self) -> None:
        self.issues.extend(self.check.issues)
        self.warnings.extend(self.check.warnings)


def _load_story(workspace: Path, app: Path, materialized: bool, issues: list[ConfigIssue],
                warnings: list[ConfigIssue]) -> Story | None:
    reader = _StoryReader(workspace, app, issues, warnings)
    document = reader.compose(app)
    if document is None:
        return None
    check = reader.check
    if document.kind != "map":
        reader.report(document, "", f"a story's app.yaml must be a mapping (app, intents, states, ...), "
                                    f"got {_describe(document)}")
        reader.flush()
        return None
    top = document.data
    story = Story(slug=app.parent.name, path=app, materialized=materialized, files=[app])

    meta = top.get("app")
    if meta is not None and meta.kind == "map":
        story.app_id = check.string(meta.data.get("id"), "app.id", "")
        story.title = check.string(meta.data.get("title"), "app.title", "")
    story.root = check.string(top.get("root"), "root", "") or None
    story.imports = _plain(top["imports"]) if "imports" in top and not top["imports"].is_null else None
    story.open_world = bool(story.imports) or "phases" in top or "phase_templates" in top or "import" in top

    for name, var in check.mapping(top.get("world"), "world").items():
        spec = var.data if var.kind == "map" else {}
        story.world[name] = WorldVar(
            name=name, type=check.string(spec.get("type"), f"world.{name}.type", "") if spec else "",
            default=_plain(spec["default"]) if "default" in spec else (None if spec else _plain(var)),
            at=_where(var, at_key=True))

    for name, value in check.mapping(top.get("intents"), "intents").items():
        story.intents[name] = _read_intent(reader, name, value, f"intents.{name}", None)

    for name, value in check.mapping(top.get("exits"), "exits").items():
        story.exits[name] = _where(value, at_key=True)

    blocks: list[tuple[_Value, str]] = []
    if "states" in top:
        blocks.append((top["states"], "states"))
    for include in _includes(reader, top.get("include"), app):
        room = reader.compose(include)
        if room is None:
            continue
        story.files.append(include)
        if room.kind != "map":
            reader.report(room, "", f"a room file must be a mapping with a states: block, got {_describe(room)}")
            continue
        if "states" in room.data:
            blocks.append((room.data["states"], "states"))
        for name, value in check.mapping(room.data.get("intents"), "intents").items():
            if name not in story.intents:
                story.intents[name] = _read_intent(reader, name, value, f"intents.{name}", None)

    for block, key in blocks:
        _read_states(reader, story, block, key, prefix="")
    for name in story.exits:
        story.states.setdefault(f"{SYNTH_EXIT_PREFIX}{name}", State(
            name=f"{SYNTH_EXIT_PREFIX}{name}", terminal=True, at=story.exits[name]))

    _check_story(reader, story)
    reader.flush()
    return story


def _includes(reader: _StoryReader, value: _Value | None, app: Path) -> list[Path]:
    patterns = reader.check.strings(value, "include", [])
    found: list[Path] = []
    for index, pattern in enumerate(patterns):
        if os.path.isabs(pattern) or ".." in Path(pattern).parts:
            reader.report(value.data[index], f"include[{index}]",
                          f'"{pattern}" leaves the story folder; includes must stay inside it')
            continue
        matches = sorted(globlib.glob(str(app.parent / pattern)))
        if not matches and not globlib.has_magic(pattern):
            reader.report(value.data[index], f"include[{index}]", f'"{pattern}" does not exist')
        for match in matches:
            path = Path(match)
            if path.is_file() and path not in found and path != app:
                found.append(path)
    return found


def _read_intent(reader: _StoryReader, name: str, value: _Value, key: str, state: str | None) -> Intent:
    check = reader.check
    spec = check.mapping(value, key)
    intent = Intent(name=name, at=_where(value, at_key=True), state=state,
                    title=check.string(spec.get("title"), f"{key}.title", ""),
                    description=check.string(spec.get("description"), f"{key}.description", ""),
                    examples=check.strings(spec.get("examples"), f"{key}.examples", []),
                    synonyms=check.strings(spec.get("synonyms"), f"{key}.synonyms", []),
                    hidden=check.boolean(spec.get("hidden"), f"{key}.hidden", False))
    if "examples" in spec:
        intent.examples_at = _where(spec["examples"], at_key=True)
    if "synonyms" in spec:
        intent.synonyms_at = _where(spec["synonyms"], at_key=True)
    for slot_name, slot_value in check.mapping(spec.get("slots"), f"{key}.slots").items():
        slot_key = f"{key}.slots.{slot_name}"
        slot_spec = check.mapping(slot_value, slot_key)
        values = slot_spec.get("values")
        value_names: list[str] = []
        value_synonyms: dict[str, list[str]] = {}
        if values is not None and values.kind == "seq":
            for item in values.data:
                if item.kind == "map":  # {value: x, synonyms: [...]}
                    canonical = check.string(item.data.get("value"), f"{slot_key}.values", "")
                    if canonical:
                        value_names.append(canonical)
                        value_synonyms[canonical] = check.strings(item.data.get("synonyms"), f"{slot_key}.values", [])
                else:
                    value_names.append(check.string(item, f"{slot_key}.values", ""))
        elif values is not None and values.kind == "map":  # value: [synonyms]
            for canonical, synonyms in values.data.items():
                value_names.append(canonical)
                value_synonyms[canonical] = check.strings(synonyms, f"{slot_key}.values.{canonical}", [])
        for canonical, synonyms in check.mapping(slot_spec.get("synonyms"), f"{slot_key}.synonyms").items():
            value_synonyms.setdefault(canonical, []).extend(check.strings(synonyms, f"{slot_key}.synonyms", []))
        intent.slots[slot_name] = Slot(
            name=slot_name, type=check.string(slot_spec.get("type"), f"{slot_key}.type", "string") or "string",
            values=[v for v in value_names if v], value_synonyms=value_synonyms,
            required=check.boolean(slot_spec.get("required"), f"{slot_key}.required", False),
            at=_where(slot_value, at_key=True))
    # Templates must name declared slots and keep a literal between captures (kitsoki: load error).
    synonyms = spec.get("synonyms")
    if synonyms is not None and synonyms.kind == "seq":
        for index, item in enumerate(synonyms.data):
            phrase = item.data if item.kind == "scalar" and isinstance(item.data, str) else None
            if phrase and is_template(phrase):
                for problem in template_problems(phrase, intent.slots):
                    reader.report(item, f"{key}.synonyms[{index}]", f'template "{phrase}": {problem}')
    return intent


def _read_states(reader: _StoryReader, story: Story, block: _Value, key: str, prefix: str) -> None:
    check = reader.check
    for name, value in check.mapping(block, key).items():
        full = f"{prefix}{name}"
        state_key = f"{key}.{name}"
        if full in story.states:
            reader.report(value, state_key, f'state "{full}" is declared twice (first at {story.states[full].at})',
                          at_key=True)
            continue
        spec = check.mapping(value, state_key)
        state = State(name=full, at=_where(value, at_key=True),
                      description=check.string(spec.get("description"), f"{state_key}.description", ""),
                      terminal=check.boolean(spec.get("terminal"), f"{state_key}.terminal", False))
        if "decider" in spec:
            decider = check.string(spec["decider"], f"{state_key}.decider", "")
            if decider not in DECIDERS:
                reader.report(spec["decider"], f"{state_key}.decider",
                              f'"{decider}" is not a decider (llm, human, or empty to follow the run mode)')
            state.decider = decider
        for intent_name, intent_value in check.mapping(spec.get("intents"), f"{state_key}.intents").items():
            state.intents[intent_name] = _read_intent(reader, intent_name, intent_value,
                                                      f"{state_key}.intents.{intent_name}", full)
        for intent_name, arms in check.mapping(spec.get("on"), f"{state_key}.on").items():
            state.on[intent_name] = _read_arms(reader, intent_name, arms, f"{state_key}.on.{intent_name}")
        on_enter = spec.get("on_enter")
        if on_enter is not None and not on_enter.is_null:
            items = on_enter.data if on_enter.kind == "seq" else [on_enter]
            for index, item in enumerate(items):
                step_key = f"{state_key}.on_enter[{index}]"
                step = check.mapping(item, step_key)
                state.on_enter.append(Step(
                    invoke=check.string(step.get("invoke"), f"{step_key}.invoke", "") or None,
                    emit_intent=check.string(step.get("emit_intent"), f"{step_key}.emit_intent", "") or None,
                    with_=_plain(step["with"]) if "with" in step else None, at=_where(item)))
        story.states[full] = state
        if "states" in spec:
            _read_states(reader, story, spec["states"], f"{state_key}.states", prefix=f"{full}.")


def _read_arms(reader: _StoryReader, intent: str, value: _Value, key: str) -> list[Transition]:
    check = reader.check
    if value.kind == "scalar" and not value.is_null:  # `intent: target` shorthand
        return [Transition(intent=intent, target=check.string(value, key, ""), at=_where(value))]
    items = value.data if value.kind == "seq" else [value] if value.kind == "map" else []
    arms = []
    for index, item in enumerate(items):
        arm_key = f"{key}[{index}]" if value.kind == "seq" else key
        spec = check.mapping(item, arm_key)
        effects = []
        raw_effects = spec.get("effects")
        if raw_effects is not None and raw_effects.kind == "seq":
            for effect_index, effect in enumerate(raw_effects.data):
                body = check.mapping(effect, f"{arm_key}.effects[{effect_index}]")
                for op, args in body.items():
                    effects.append(Effect(op=op, args=_plain(args), at=_where(args, at_key=True)))
        arms.append(Transition(
            intent=intent,
            target=check.string(spec.get("target"), f"{arm_key}.target", "") or None,
            when=check.string(spec.get("when"), f"{arm_key}.when", "") or None,
            default=check.boolean(spec.get("default"), f"{arm_key}.default", False),
            effects=effects, at=_where(item)))
    return arms


# --- checks across the story ------------------------------------------------------------------


def _check_story(reader: _StoryReader, story: Story) -> None:
    declared = {intent.name for intent in story.all_intents()}
    for state in story.states.values():
        for intent_name, arms in state.on.items():
            if intent_name not in declared and not story.open_world:
                reader.check.issues.append(ConfigIssue(
                    file=state.at.file, line=arms[0].at.line if arms else state.at.line,
                    column=arms[0].at.column if arms else state.at.column, key=f"states.{state.name}.on.{intent_name}",
                    message=f'transition on "{intent_name}", which no intents: block declares'))
            for arm in arms:
                problem = _target_problem(story, state, arm.target)
                if problem:
                    reader.check.issues.append(ConfigIssue(
                        file=arm.at.file, line=arm.at.line, column=arm.at.column,
                        key=f"states.{state.name}.on.{intent_name}", message=problem))
    if story.root and story.root not in story.states and not story.open_world:
        reader.check.issues.append(ConfigIssue(
            file=str(story.path), line=1, column=1, key="root", message=f'root state "{story.root}" does not exist'))


def _target_problem(story: Story, state: State, target: str | None) -> str | None:
    if not target or target == "." or "{{" in target or "{" in target:
        return None  # no target (or ".") stays put; templated targets resolve at run time
    if target.startswith("../"):
        return None if resolve_target(story, state.name, target) or story.open_world else \
            f'target "{target}" is not a state of this story'
    if target.startswith(EXIT_PREFIX):
        name = target[len(EXIT_PREFIX):]
        return None if name in story.exits else f'target "{target}" names an exit the exits: block does not declare'
    if _resolve_state(story, state, target) is not None or story.open_world:
        return None
    return f'target "{target}" is not a state of this story'


def _resolve_state(story: Story, state: State | None, target: str) -> str | None:
    """A target names a state by full path, or a sibling / child of the current state."""
    if target in story.states:
        return target
    if state is not None:
        parent = state.name.rsplit(".", 1)[0] if "." in state.name else ""
        for candidate in (f"{state.name}.{target}", f"{parent}.{target}" if parent else target):
            if candidate in story.states:
                return candidate
    matches = [name for name in story.states if name.endswith(f".{target}")]
    return matches[0] if len(matches) == 1 else None


def resolve_target(story: Story, state: str, target: str) -> str | None:
    """The state a transition's target lands in, or None when it does not exist."""
    if target == ".":
        return state if state in story.states else None
    if target.startswith("../"):  # relative to the current state's parent
        base = state.split(".")
        while target.startswith("../"):
            target, base = target[3:], base[:-1]
        full = ".".join([*base[:-1], target]) if base else target
        return full if full in story.states else None
    if target.startswith(EXIT_PREFIX):
        name = f"{SYNTH_EXIT_PREFIX}{target[len(EXIT_PREFIX):]}"
        return name if name in story.states else None
    return _resolve_state(story, story.states.get(state), target)


def _check_override_synonyms(workspace: Path, config: KitsokiConfig, issues: list[ConfigIssue],
                             warnings: list[ConfigIssue]) -> None:
    """Templates in root.overrides.synonyms: braces balanced, never two captures side by side."""
    if config.root is None or not config.root.overrides.synonyms:
        return
    located = override_locations(workspace)
    for intent, phrases in config.root.overrides.synonyms.items():
        for index, phrase in enumerate(phrases):
            if not is_template(phrase):
                continue
            # dev-story's intents declare their own slots; only structure can be checked here.
            problems = [p for p in template_problems(phrase, _slot_names_in(phrase)) if "unknown slot" not in p]
            where = located.get(("synonyms", intent, index))
            for problem in problems:
                issues.append(ConfigIssue(
                    file=where.file if where else str(workspace / CONFIG_FILE), line=where.line if where else 1,
                    column=where.column if where else 1, key=f"root.overrides.synonyms.{intent}[{index}]",
                    message=f'template "{phrase}": {problem}'))


def _slot_names_in(phrase: str) -> list[str]:
    names, depth, current = [], 0, []
    for char in phrase:
        if char == "{":
            depth, current = depth + 1, []
        elif char == "}" and depth:
            depth -= 1
            names.append("".join(current).strip())
        elif depth:
            current.append(char)
    return names


def relative(workspace: Path, path: Path | str) -> str:
    """A workspace-relative POSIX path for display and staging."""
    try:
        return Path(os.path.normpath(Path(path).absolute())).relative_to(
            Path(os.path.normpath(workspace.absolute()))).as_posix()
    except ValueError:
        return str(path)
