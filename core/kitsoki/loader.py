"""Loading one kitsoki app the way kitsoki does (internal/app/loader.go, runLoadPipeline).

In kitsoki's order: parse the app.yaml strictly and merge its `include:` files (parseAndMerge),
fold its imports depth-first (imports.py; each child loaded through this same pipeline up to its
phases), expand phases (phases.py), resolve `iface.<name>.<op>` invokes to their bound handlers,
give each referenced `@exit:<name>` its `__exit__<name>` terminal state, then run the load-time
checks (checks.py). Every problem is a ConfigIssue at file:line:col carrying kitsoki's reason; a
stage that finds problems stops the pipeline, as kitsoki's does.

A `LoadSession` holds what one workspace load shares: the parse cache, an overlay of staged
bytes, the import sources, and each child app loaded once (a child imported by six stories is
parsed, merged and phase-expanded once, and reused across loads while none of its files changed).
Trees from the cache are never mutated: every stage builds new mappings where it changes one.
"""

from __future__ import annotations

import glob as globlib
import os
import threading
from pathlib import Path
from typing import Any

from core.kitsoki import probed, statememo
from core.kitsoki.agent_checks import definition_agent_issues
from core.kitsoki.agent_decls import agent_decl_issues
from core.kitsoki.probed import Probes
from core.kitsoki.checks import apply_fallback, validate_definition
from core.kitsoki.imports import (
    ALIAS_RE,
    Sources,
    SourceError,
    apply_overrides,
    fold_child,
    resolve_source,
)
from core.kitsoki.library import library_child
from core.kitsoki.model import STORY_LIMITS
from core.kitsoki.parse import PARSE_CACHE, LMap, LSeq, ParseCache, Signature, signature
from core.kitsoki.phases import expand_phases
from core.kitsoki.schema import check_app
from core.kitsoki.tree import Loaded, Wrapper, map_effects, map_states
from core.kitsoki.yamlread import ConfigIssue, _FileProblem, _ValueProblems

EXIT_PREFIX = "@exit:"
SYNTH_EXIT_PREFIX = "__exit__"

_MERGED_BLOCKS = ("states", "phase_templates", "checkpoint_intents", "proposals", "intents", "world", "meta_modes",
                  "agents", "providers")
_BLOCK_WORDS = {"states": "state", "phase_templates": "phase_template", "checkpoint_intents": "checkpoint_intent",
                "proposals": "proposal", "intents": "intent", "world": "world variable", "meta_modes": "meta_mode",
                "agents": "agent", "providers": "provider"}


def _issue(at: tuple[str, int, int], message: str, key: str = "") -> ConfigIssue:
    return ConfigIssue(file=at[0], line=at[1], column=at[2], key=key, message=message)


class LoadSession:
    """What loads within one workspace share: cache, overlay, import sources, loaded children."""

    def __init__(self, *, sources: Sources | None = None, overlay: dict[str, bytes] | None = None,
                 cache: ParseCache | None = None, story_root: Path | None = None) -> None:
        self.sources = sources or Sources.from_env()
        self.overlay = {str(Path(os.path.abspath(path))): data for path, data in (overlay or {}).items()}
        self.cache = cache or PARSE_CACHE
        self.story_root = story_root
        self.checked: Any = None
        """A workspace's core.kitsoki.checked.CheckedMemo, when the load is a workspace's."""
        self.loads: Any = None
        """A workspace's core.kitsoki.loadcache.LoadMemo (stories known by their outline), likewise."""
        self._children: dict[str, Loaded] = {}
        self._valid: dict[str, bool] = {}

    # -- files -----------------------------------------------------------------------------------------

    def read(self, path: str, issues: list[ConfigIssue], files: list[str],
             signatures: dict[str, Signature | None], what: str) -> Any:
        files.append(path)
        signatures[path] = None if path in self.overlay else signature(path)
        try:
            return self.cache.read(path, STORY_LIMITS, overlay=self.overlay, what=what)
        except FileNotFoundError:
            issues.append(_issue((path, 1, 1), f"load {path}: open {path}: no such file or directory"))
        except _FileProblem as problem:
            issues.append(_issue((path, problem.line, problem.column), problem.message))
        except _ValueProblems as problems:
            issues.extend(problems.issues)
        return None

    # -- one app ---------------------------------------------------------------------------------------

    def load(self, app: Path, document: LMap | None = None, base_dir: Path | None = None) -> Loaded:
        """The whole pipeline for an app loaded on its own (a story, or with `document`, an app
        synthesized in memory at the path `app`; `base_dir` is its folder, unless given: kitsoki
        roots a synthesized root's relative paths at the project)."""
        written = None
        if document is None:
            loaded = self.load_child(str(Path(os.path.abspath(app))), [], top=True)
        else:
            # the memo knows a synthesized app by its document as written: the load folds its imports
            # into it, and what they bring is already in the key (the bytes of every file read)
            written = self._written(document)
            loaded = self._load_fresh(str(app), str(app), [], document)
        if loaded.definition is None or loaded.issues:
            return loaded
        definition = loaded.definition
        out = Loaded(loaded.path, None, list(loaded.issues), list(loaded.files), dict(loaded.wrappers),
                     list(loaded.imports), dict(loaded.signatures), list(loaded.own_files), asked=list(loaded.asked))
        top = definition.like(definition)
        issues = resolve_interfaces(top)
        if not issues:
            issues = materialise_exits(top)
        fatal = bool(issues)
        key = self._memo_key(str(app), written, loaded) if not fatal else None
        if not fatal:  # agent_plugins and providers stop the load before validateDef, as in kitsoki
            agent_issues, fatal, probes = self._agents_checked(top, base_dir or Path(os.path.abspath(app)).parent,
                                                               key)
            out.asked.append(("agents", probes))
            issues = agent_issues if fatal else []
        if not fatal:
            issues = self._checked(top, loaded, key) + agent_issues
        out.issues = issues
        out.definition = None if issues else top
        return out

    def _written(self, document: LMap) -> str | None:
        """A synthesized app's document as written, for its memo key (None without a memo)."""
        if self.checked is None:
            return None
        from core.kitsoki.build import plain

        return repr(plain(document))

    def _memo_key(self, app: str, written: str | None, loaded: Loaded) -> tuple[str, bool] | None:
        """The app's key in the workspace's memo of load checks (core.kitsoki.checked): the code, the
        app (a synthesized one, the root instance, with its document as written) and the bytes of every
        file its load read; None without a memo or when a file changed under the load."""
        memo = self.checked
        if memo is None:
            return None
        name = app if written is None else f"{app}\0{written}"
        return memo.key(name, loaded.signatures, self.overlay)

    def _agents_checked(self, top: LMap, base_dir: Path,
                        key: tuple[str, bool] | None) -> tuple[list[ConfigIssue], bool, dict[str, Any]]:
        """definition_agent_issues, or its verdict from the memo while every environment variable and
        file it looked at answers the same (the memo checks its probes); with those probes."""
        memo = self.checked
        at = f"{key[0]}\0{base_dir}" if key is not None else None
        if at is not None:
            known = memo.get_agents(at)
            if known is not None:
                return known
        probes = Probes()
        issues, fatal = definition_agent_issues(top, base_dir, probes=probes)
        if at is not None and key[1]:
            memo.put_agents(at, issues, fatal, probes.as_json())
        return issues, fatal, probes.as_json()

    def _checked(self, top: LMap, loaded: Loaded, key: tuple[str, bool] | None) -> list[ConfigIssue]:
        """validate_definition, or its verdict from the workspace's memo (core.kitsoki.checked) when
        every file this app's load read has the same bytes as when it was checked (and a synthesized
        app, the root instance, the same document)."""
        memo = self.checked
        if key is not None:
            known = memo.get(key[0])
            if known is not None:
                apply_fallback(top)  # validate_definition's one change to the definition, kept on a hit too
                return known
        issues = validate_definition(top, loaded.wrappers)
        if key is not None and key[1]:
            memo.put(key[0], issues)
        return issues

    def load_child(self, path: str, parents: list[str], top: bool = False) -> Loaded:
        """parseAndMerge, then imports, then phases (what an importer folds). Memoized per session
        and across sessions while none of its files changed."""
        canonical = _canonical(path)
        cached = self._children.get(canonical)
        if cached is not None:
            probed.replay(cached.probes)
            return cached
        shared = _CHILDREN.get((canonical, self.sources))
        if shared is not None and self._still_valid(shared) and probed.still(shared.probes):
            self._children[canonical] = shared
            probed.replay(shared.probes)
            return shared
        with probed.recording() as looked:
            loaded = self._load_fresh(path, canonical, parents)
        loaded.probes = looked.frozen()
        self._children[canonical] = loaded
        if not any(file in self.overlay for file in loaded.files):
            with _CHILDREN_LOCK:
                _CHILDREN[(canonical, self.sources)] = loaded
        return loaded

    def _still_valid(self, loaded: Loaded) -> bool:
        for file, sig in loaded.signatures.items():
            if file in self.overlay or sig is None:
                return False
            known = self._valid.get(file)
            if known is None:
                known = self._valid[file] = signature(file) == sig
            if not known:
                return False
        return True

    def _load_fresh(self, path: str, canonical: str, parents: list[str], document: LMap | None = None) -> Loaded:
        loaded = Loaded(Path(path), None)
        merged = self.parse_and_merge(path, loaded) if document is None else document
        loaded.own_files = list(loaded.files)
        if merged is None or loaded.issues:
            return loaded
        base_dir = Path(path).parent
        imports = merged.get("imports")
        if isinstance(imports, LMap) and imports:
            self.resolve_imports(merged, imports, Path(path), base_dir, [*parents, canonical], loaded)
            merged.pop("imports", None)
            if loaded.issues:
                return loaded
        loaded.issues.extend(expand_phases(merged, path))
        if not loaded.issues:
            loaded.definition = merged
        return loaded

    def parse_and_merge(self, path: str, loaded: Loaded) -> LMap | None:
        document = self.read(path, loaded.issues, loaded.files, loaded.signatures, "story file")
        if document is None:
            return None
        issues = _check_app(document, path)
        if issues:
            loaded.issues.extend(issues)
            return None
        loaded.issues.extend(agent_decl_issues(document, path))  # kitsoki resolves agents per file, then merges
        merged = document.like(document)
        for block in _MERGED_BLOCKS:
            if isinstance(merged.get(block), LMap):
                merged[block] = merged[block].like(merged[block])
        if isinstance(merged.get("hosts"), LSeq):
            merged["hosts"] = merged["hosts"].like(merged["hosts"])
        if isinstance(merged.get("host_interfaces"), LMap):  # a fold adds the lifted interfaces
            merged["host_interfaces"] = merged["host_interfaces"].like(merged["host_interfaces"])
        patterns = document.get("include")
        if not patterns:
            return merged
        base_dir = Path(path).parent
        story_dir = Path(os.path.realpath(base_dir))
        for index, pattern in enumerate(patterns):
            at = patterns.item_at(index)
            pattern = str(pattern)
            if os.path.isabs(pattern) or ".." in Path(pattern).parts:
                loaded.issues.append(_issue(at, f'include "{pattern}" leaves the story folder; the miner reads '
                                                f"includes only inside {base_dir}", f"include[{index}]"))
                continue
            full = str(base_dir / pattern)
            try:
                matches = sorted(globlib.glob(full, include_hidden=True))
            except (OSError, ValueError) as exc:
                loaded.issues.append(_issue(at, f'include glob "{full}": {exc}', f"include[{index}]"))
                continue
            loaded.asked.append(("glob", full, tuple(matches),
                                  tuple(os.path.realpath(match) for match in matches)))
            for match in matches:
                real = Path(os.path.realpath(match))
                if not _inside(real, story_dir):
                    loaded.issues.append(_issue(at, f'include "{pattern}" matches {match}, a symbolic link to {real} '
                                                    f"outside the story folder {base_dir}; refused",
                                                f"include[{index}]"))
                    continue
                if Path(match) == Path(path):
                    continue
                included = self.read(match, loaded.issues, loaded.files, loaded.signatures, "included room file")
                if included is None:
                    continue
                problems = _check_app(included, match) or agent_decl_issues(included, match)
                if problems:
                    loaded.issues.extend(problems)
                    continue
                loaded.issues.extend(merge_into(merged, included, match))
        return merged

    def resolve_imports(self, merged: LMap, imports: LMap, app: Path, base_dir: Path, parents: list[str],
                        loaded: Loaded) -> None:
        for alias in sorted(imports):
            spec = imports[alias]
            at = imports.key_at(alias)
            key = f"imports.{alias}"
            if not isinstance(spec, LMap):
                loaded.issues.append(_issue(at, f"imports.{alias}: empty definition", key))
                continue
            if not ALIAS_RE.match(alias):
                loaded.issues.append(_issue(at, f"imports.{alias}: alias must match {ALIAS_RE.pattern}", key))
                continue
            source = spec.get("source")
            if not source:
                loaded.issues.append(_issue(at, f"imports.{alias}: source is required", key))
                continue
            try:
                resolved = resolve_source(str(source), base_dir, self.sources)
            except SourceError as exc:
                loaded.asked.append(("source", str(source), str(base_dir), None, str(exc)))
                loaded.issues.append(_issue(spec.value_at("source"), f"imports.{alias}: {exc}", key))
                continue
            loaded.asked.append(("source", str(source), str(base_dir), str(resolved.path), resolved.origin))
            canonical = _canonical(str(resolved.path))
            if canonical in parents:
                loaded.issues.append(_issue(at, f"imports.{alias}: cycle detected via {resolved.path}", key))
                continue
            if resolved.origin == "library":
                child = library_child(resolved.path)
            else:
                child = self.load_child(str(resolved.path), parents)
            loaded.files.extend(file for file in child.files if file not in loaded.files)
            loaded.signatures.update(child.signatures)
            loaded.asked.extend(probe for probe in child.asked if probe not in loaded.asked)
            if resolved.origin == "library":
                loaded.signatures[str(resolved.path)] = signature(str(resolved.path))
            if child.issues or child.definition is None:
                loaded.issues.extend(child.issues)
                continue
            definition = child.definition
            overrides = spec.get("overrides")
            if isinstance(overrides, LMap):
                definition, problems = apply_overrides(definition, overrides, alias, at, base_dir)
                if problems:
                    loaded.issues.extend(problems)
                    continue
            problems = fold_child(merged, alias, spec, definition, at)
            if problems:
                loaded.issues.extend(problems)
                continue
            entry = spec.get("entry") or (definition.get("root") if isinstance(definition.get("root"), str) else "")
            loaded.wrappers[alias] = Wrapper(alias, str(entry), resolved.path, resolved.origin)
            for path in [canonical, *child.imports]:
                if path not in loaded.imports:
                    loaded.imports.append(path)


_INTERFACED: dict = statememo.register({})
"""resolve_interfaces per state: (id, the interface table) -> (the state, issues, invokes resolved)."""
_EXITED: dict = statememo.register({})
_EXIT_STATES: dict = statememo.register({})
_SCHEMA: dict = statememo.register({})
"""check_app per parsed document: (id, file) -> (the document, {}, its issues)."""
"""materialise_exits per state: (id,) -> the state with its `@exit:` targets rewritten."""

_CHILDREN: dict[tuple[str, Sources], Loaded] = {}
_CHILDREN_LOCK = threading.Lock()


def _check_app(document: Any, path: str) -> list[ConfigIssue]:
    """check_app, a function of the parsed document and its path: once per parse (core.kitsoki.statememo)."""
    known = statememo.recall(_SCHEMA, (id(document), path), document, {}, [])
    if known is None:
        known = tuple(check_app(document, path))
        statememo.keep(_SCHEMA, (id(document), path), document, {}, known)
    return list(known)


def _canonical(path: str) -> str:
    try:
        return os.path.realpath(os.path.abspath(path))
    except OSError:
        return os.path.abspath(path)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def merge_into(destination: LMap, source: LMap, file: str) -> list[ConfigIssue]:
    """kitsoki's mergeInto: an included file's blocks join the app's; a name declared twice is an error."""
    issues: list[ConfigIssue] = []
    for block in _MERGED_BLOCKS:
        entries = source.get(block)
        if not isinstance(entries, LMap):
            continue
        target = destination.get(block)
        if not isinstance(target, LMap):
            target = destination[block] = entries.like()
            target.marks = {}
        merged_marks = dict(target.marks)
        for name, value in entries.items():
            if name in target:
                issues.append(_issue(entries.key_at(name), f'include: {_BLOCK_WORDS[block]} "{name}" is already '
                                                           "declared", f"{block}.{name}"))
                continue
            target[name] = value
            if name in entries.marks:
                merged_marks[name] = entries.marks[name]
        target.marks = merged_marks
    phases = source.get("phases")
    if phases is not None:
        if destination.get("phases") is not None:
            issues.append(_issue(source.key_at("phases"), "include: phases: block already declared", "phases"))
        else:
            destination["phases"] = phases
    hosts = source.get("hosts")
    if isinstance(hosts, LSeq):
        target = destination.get("hosts")
        if not isinstance(target, LSeq):
            target = destination["hosts"] = hosts.like()
        for host in hosts:
            if host not in target:
                target.append(host)
    return issues


# --- the standalone passes ----------------------------------------------------------------------------


def resolve_interfaces(definition: LMap) -> list[ConfigIssue]:
    """kitsoki's resolveAllInterfaces: `iface.<name>.<op>` becomes `<bound handler>.<op>`, which
    joins the hosts allow-list; an interface with no binding, an unknown interface or op is an error."""
    issues: list[ConfigIssue] = []
    ifaces = definition.get("host_interfaces") if isinstance(definition.get("host_interfaces"), LMap) else LMap()
    table: dict[str, tuple[str, set[str]]] = {}
    for name, iface in ifaces.items():
        if not isinstance(iface, LMap):
            continue
        if not iface.get("default"):
            issues.append(_issue(ifaces.key_at(name), f'host_interface "{name}": no default and no host_binding '
                                                      "override", f"host_interfaces.{name}"))
            continue
        operations = iface.get("operations") if isinstance(iface.get("operations"), LMap) else {}
        table[name] = (str(iface["default"]), set(operations))
    hosts = definition.get("hosts")
    hosts = hosts.like(hosts) if isinstance(hosts, LSeq) else LSeq()
    known = set(hosts)
    resolved: list[str] = []
    states = definition.get("states")
    if not isinstance(states, LMap):
        return issues

    def effect(eff: LMap) -> LMap:
        invoke = eff.get("invoke")
        if not isinstance(invoke, str) or not invoke.startswith("iface."):
            return eff
        rest = invoke[len("iface."):]
        name, dot, op = rest.rpartition(".")
        at = eff.value_at("invoke")
        if not dot or not name:
            issues.append(_issue(at, f'invoke "{invoke}": expected iface.<name>.<op>'))
            return eff
        if name not in table:
            issues.append(_issue(at, f'invoke "{invoke}": iface "{name}" not declared (declared: '
                                     f"[{' '.join(sorted(table))}])"))
            return eff
        binding, ops = table[name]
        if op not in ops:
            issues.append(_issue(at, f'invoke "{invoke}": op "{op}" not declared on iface "{name}"'))
            return eff
        eff = eff.like(eff)
        eff["invoke"] = f"{binding}.{op}"
        eff["__iface__"] = invoke
        resolved.append(eff["invoke"])
        if eff["invoke"] not in known:
            known.add(eff["invoke"])
            hosts.append(eff["invoke"])
        return eff

    def state(path: str, st: LMap) -> LMap:  # copy on write: an untouched state stays the same object
        changed = None
        if isinstance(st.get("on_enter"), LSeq):
            on_enter = map_effects(st["on_enter"], effect)
            if on_enter is not st["on_enter"]:
                changed = st.like(st)
                changed["on_enter"] = on_enter
        on = st.get("on")
        if isinstance(on, LMap):
            block = None
            for intent, arms in on.items():
                new_arms = arms
                if isinstance(arms, LSeq):
                    for index, arm in enumerate(arms):
                        new_arm = arm
                        if isinstance(arm, LMap) and isinstance(arm.get("effects"), LSeq):
                            effects = map_effects(arm["effects"], effect)
                            if effects is not arm["effects"]:
                                new_arm = arm.like(arm)
                                new_arm["effects"] = effects
                        if new_arm is not arm and new_arms is arms:
                            new_arms = arms.like(arms[:index])
                        if new_arms is not arms:
                            new_arms.append(new_arm)
                if new_arms is not arms and block is None:
                    block = on.like(on)
                if block is not None:
                    block[intent] = new_arms
            if block is not None:
                changed = changed or st.like(st)
                changed["on"] = block
        return changed if changed is not None else st

    if table:  # each state's rewrite remembered with what it raised and the invokes it resolved
        signature = tuple(sorted((name, binding, tuple(sorted(ops))) for name, (binding, ops) in table.items()))

        def remembered(path: str, st: LMap) -> LMap:
            key = (id(st), signature)
            known_state = statememo.recall(_INTERFACED, key, st, {}, [])
            if known_state is None:
                raised = len(issues)
                resolved.clear()
                out = state(path, st)
                statememo.keep(_INTERFACED, key, st, {}, (out, tuple(issues[raised:]), tuple(resolved)))
                return out
            out, raised_before, invokes = known_state
            issues.extend(raised_before)
            for invoke in invokes:  # the allow-list grows in the same order as when it was resolved
                if invoke not in known:
                    known.add(invoke)
                    hosts.append(invoke)
            return out

        definition["states"] = map_states(states, remembered)
    if hosts or "hosts" in definition:
        definition["hosts"] = hosts
    return issues


def _exit_targets(states: LMap, used: set[str]) -> None:
    for state in states.values():
        if not isinstance(state, LMap):
            continue
        on = state.get("on")
        if isinstance(on, LMap):
            for arms in on.values():
                for arm in arms if isinstance(arms, LSeq) else ():
                    target = arm.get("target") if isinstance(arm, LMap) else None
                    if isinstance(target, str) and target.startswith(EXIT_PREFIX):
                        used.add(target[len(EXIT_PREFIX):])
        timeout = state.get("timeout")
        if isinstance(timeout, LMap) and isinstance(timeout.get("target"), str) and \
                timeout["target"].startswith(EXIT_PREFIX):
            used.add(timeout["target"][len(EXIT_PREFIX):])
        if isinstance(state.get("states"), LMap):
            _exit_targets(state["states"], used)


def materialise_exits(definition: LMap) -> list[ConfigIssue]:
    """kitsoki's materialiseStandaloneExits: each referenced `@exit:<name>` of the app loaded on its
    own becomes a terminal state `__exit__<name>`; an exit referenced but not declared is an error."""
    exits = definition.get("exits")
    if not isinstance(exits, LMap) or not exits:
        return []
    states = definition.get("states") if isinstance(definition.get("states"), LMap) else LMap()
    used: set[str] = set()
    _exit_targets(states, used)
    for name in sorted(used):
        if name not in exits:
            file = definition.file
            return [_issue((file, 1, 1), f"@exit:{name} referenced but not declared in exits:")]

    def rewrite(target: Any) -> Any:
        if isinstance(target, str) and target.startswith(EXIT_PREFIX):
            return SYNTH_EXIT_PREFIX + target[len(EXIT_PREFIX):]
        return target

    def state(path: str, st: LMap) -> LMap:
        changed = None
        on = st.get("on")
        if isinstance(on, LMap):
            block = on.like()
            for intent, arms in on.items():
                if isinstance(arms, LSeq) and any(isinstance(a, LMap) and isinstance(a.get("target"), str)
                                                  and a["target"].startswith(EXIT_PREFIX) for a in arms):
                    new_arms = arms.like()
                    for arm in arms:
                        if isinstance(arm, LMap) and "target" in arm:
                            arm = arm.like(arm)
                            arm["target"] = rewrite(arm["target"])
                        new_arms.append(arm)
                    arms = new_arms
                    changed = changed or st.like(st)
                block[intent] = arms
            if changed is not None:
                changed["on"] = block
        timeout = st.get("timeout")
        if isinstance(timeout, LMap) and isinstance(timeout.get("target"), str) and \
                timeout["target"].startswith(EXIT_PREFIX):
            changed = changed or st.like(st)
            changed["timeout"] = timeout.like(timeout)
            changed["timeout"]["target"] = rewrite(timeout["target"])
        return changed if changed is not None else st

    def remembered(path: str, st: LMap) -> LMap:  # a function of the state alone
        out = statememo.recall(_EXITED, (id(st),), st, {}, [])
        if out is None:
            out = state(path, st)
            statememo.keep(_EXITED, (id(st),), st, {}, out)
        return out

    mapped = map_states(states, remembered)
    states = mapped if mapped is not states else states.like(states)  # added to below: never the input
    for name in sorted(used):
        synthetic = SYNTH_EXIT_PREFIX + name
        if synthetic not in states:
            at = exits.key_at(name)
            exit_state = _EXIT_STATES.get((at, name))  # made from these two alone: the same object each load
            if exit_state is None:
                exit_state = LMap({"terminal": True, "description": f"Exit: {name}"}, file=at[0], line=at[1],
                                  column=at[2])
                exit_state.kline, exit_state.kcol = at[1], at[2]
                if statememo.enabled():
                    _EXIT_STATES[(at, name)] = exit_state
            states[synthetic] = exit_state
    definition["states"] = states
    return []
