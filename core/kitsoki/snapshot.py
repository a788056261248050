"""Write the story library's entries from a kitsoki checkout (a maintenance command).

    python -m core.kitsoki.snapshot <kitsoki-checkout> [story ...]     (default: dev-story)

Each story is loaded with our loader (its own imports folded and phases expanded) and summarised
as core.kitsoki.library describes; tests/test_story.py keeps the carried entry equal to it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core.kitsoki.imports import Sources
from core.kitsoki.library import LIBRARY_DIR, library_path, summarise
from core.kitsoki.loader import LoadSession


def write_entry(checkout: Path, name: str) -> Path:
    """Load `<checkout>/stories/<name>/app.yaml` with our loader and write its library entry."""
    app = checkout / "stories" / name / "app.yaml"
    session = LoadSession(sources=Sources(kitsoki_repo=checkout, library=None))
    loaded = session.load_child(str(app), [])
    if loaded.issues or loaded.definition is None:
        raise SystemExit("\n".join(str(issue) for issue in loaded.issues) or f"{app} does not load")
    entry = summarise(loaded.definition, name=name, source=f"stories/{name}/app.yaml")
    LIBRARY_DIR.mkdir(parents=True, exist_ok=True)
    out = library_path(name)
    out.write_text(json.dumps(entry, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m core.kitsoki.snapshot <kitsoki-checkout> [story ...]")
    for story in sys.argv[2:] or ["dev-story"]:
        print(write_entry(Path(sys.argv[1]), story))
