"""dev-story's intents, as `root.import: dev-story` brings them: the 102 it declares and the 192
it lifts from its own imports (179 alias-prefixed `bf__*`, `gitops__*`, ... and 13 lifted under
their bare names through `intents.import`), with their examples, synonyms and slots.

Read from the story library we carry (core/kitsoki/library_data/dev-story.json, summarised by our
loader from kitsoki's stories/dev-story at the commit it records). The mapper routes mined
phrasings against the root instance, which the loader folds from a kitsoki checkout when there is
one; this table is the fallback and the list of names a rung-1 synonym may target: kitsoki
appends `root.overrides.synonyms` to the instance intent of that name.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NamedTuple

import orjson

from core.kitsoki.library import library_path


class DevStoryIntent(NamedTuple):
    description: str
    examples: tuple[str, ...]
    synonyms: tuple[str, ...]
    slots: dict[str, Any] = {}
    """Slot name -> its declaration as plain data (type, values, synonyms, required ...)."""


def _load() -> dict[str, DevStoryIntent]:
    data = orjson.loads(library_path("dev-story").read_bytes())
    out = {}
    for name, spec in (data.get("intents") or {}).items():
        spec = spec or {}
        out[name] = DevStoryIntent(str(spec.get("description") or ""), tuple(str(e) for e in spec.get("examples") or ()),
                                   tuple(str(s) for s in spec.get("synonyms") or ()), dict(spec.get("slots") or {}))
    return out


DEV_STORY_INTENTS = MappingProxyType(_load())
