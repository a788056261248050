"""Who reads what a change that moves no phrase sets: the states and flow fixtures that read a world key,
invoke an interface or rest in a state, with file:line, scanned once per version of the tree."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from core.kitsoki.build import state_lines
from core.kitsoki.model import Story, Workspace
from core.kitsoki.story import relative
from core.proposals.impact import MAX_LISTED, Reader
from core.proposals.impact.corpus import cached, file_stamp, flow_files


def _text(path: Path) -> str | None:
    """A story or fixture file's text, read once per version of it."""
    def make() -> str | None:
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    return cached(path, make)  # type: ignore[return-value]


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
    signature = (str(model.path), tuple((f, file_stamp(Path(f))) for f in sorted(files)),
                 tuple((str(d), file_stamp(d)) for d in folders))
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
