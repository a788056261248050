"""What the impact replay replays: this workspace's past prompts and its apps' flow fixture inputs, each
read once per version of its file and kept in memory, indexed by stem."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from core.kitsoki.model import Workspace
from core.kitsoki.story import relative


@dataclass
class Input:
    text: str
    count: int
    source: str
    stems: frozenset[str]


@dataclass
class Corpus:
    inputs: list[Input] = field(default_factory=list)
    index: dict[str, list[int]] = field(default_factory=dict)

    def add(self, text: str, count: int, source: str) -> None:
        stems = stems_of(text)
        n = len(self.inputs)
        self.inputs.append(Input(text, count, source, stems))
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


def stems_of(text: str) -> frozenset[str]:
    """content_stems, remembered: the same fixture inputs and phrases are replayed for every draft."""
    hit = _STEMS.get(text)
    if hit is None:
        from core.kitsoki.routing import content_stems

        if len(_STEMS) > 200_000:
            _STEMS.clear()
        hit = _STEMS[text] = content_stems(text)
    return hit


_FILES: dict[str, tuple[tuple, object]] = {}


def file_stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def cached(path: Path, make: Callable[[], object], kind: str = "text") -> object:
    key, stamp = f"{kind}:{path}", file_stamp(path)
    hit = _FILES.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    value = make()
    if len(_FILES) > 4096:
        _FILES.clear()
    _FILES[key] = (stamp, value)
    return value


def past_prompts(workspace: Path) -> Corpus:
    """This workspace's own people's prompts, deduplicated on the normalized ask, with counts."""
    from core.mining.watermark import kitsoki_slug, load_state, state_path

    slug = kitsoki_slug(workspace)
    marks = state_path(workspace, slug)

    def make() -> Corpus:
        corpus = Corpus()
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

    return cached(marks, make, "prompts")  # type: ignore[return-value]


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

    return cached(path, make, "inputs")  # type: ignore[return-value]


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
    return list(cached(folder, listing, "listing"))  # type: ignore[arg-type]  (read again when the folder changes)
