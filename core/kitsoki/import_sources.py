"""Where an import's `source:` is, as kitsoki resolves it (internal/app/imports.go resolveImportSource,
cmd/kitsoki/main.go's --kitsoki-repo / $KITSOKI_REPO / ~/.kitsoki/repo).

`@kitsoki/<name>` resolves through `KITSOKI_REPO` (or the checkout kitsoki remembered in
`~/.kitsoki/repo`), then a kitsoki checkout found above the importer (a `.kitsoki-root` marker or a
go.mod of module kitsoki), then the library we carry (core/kitsoki/library). Every variable and path
looked at goes through core.kitsoki.probed, so what a load concluded is kept only while they answer the same.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from core.kitsoki import probed
from core.kitsoki.library import LIBRARY_DIR

KITSOKI_PREFIX = "@kitsoki/"


@dataclass(frozen=True)
class Sources:
    """Where `@kitsoki/<name>` can come from, in kitsoki's order."""

    kitsoki_repo: Path | None = None
    """The kitsoki checkout `@kitsoki/<name>` resolves against first (`repo_from` says why)."""
    library: Path | None = None
    """The stories we carry (summaries of kitsoki's own, at the commit noted in the library)."""
    repo_from: str = ""
    """Where `kitsoki_repo` came from: miner.flow_gate.kitsoki_repo, KITSOKI_REPO or ~/.kitsoki/repo."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, home: Path | None = None,
                 setting: Path | None = None) -> Sources:
        """kitsoki's order (cmd/kitsoki/main.go:77-95, imports.go:287-320): `--kitsoki-repo` (for
        us, `setting`: the `miner.flow_gate.kitsoki_repo` the kitsoki gate passes as that flag),
        else $KITSOKI_REPO, else the checkout recorded in ~/.kitsoki/repo, then (in resolve_source)
        a checkout around the importer, then the library. The loader and the kitsoki gate resolve
        through this one function, and the gate passes what it found as `--kitsoki-repo`, so the
        binary's own rewrite of ~/.kitsoki/repo never makes them read different dev-stories."""
        env = probed.ENV if env is None else env
        if setting is not None:
            return cls(kitsoki_repo=Path(setting), library=LIBRARY_DIR, repo_from="miner.flow_gate.kitsoki_repo")
        repo = (env.get("KITSOKI_REPO") or "").strip()
        source = "KITSOKI_REPO" if repo else ""
        if not repo:
            saved = Path(home or Path.home()) / ".kitsoki" / "repo"
            try:
                text = saved.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                text = ""
            repo = text if text and probed.isdir(text) else ""
            source = "~/.kitsoki/repo" if repo else ""
        return cls(kitsoki_repo=Path(repo) if repo else None, library=LIBRARY_DIR, repo_from=source)


@dataclass(frozen=True)
class Resolved:
    path: Path
    origin: str
    """"path" (a relative or absolute source), "kitsoki-repo", "checkout" or "library"."""


class SourceError(ValueError):
    pass


def find_repo_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` marked `.kitsoki-root` or holding go.mod of module kitsoki."""
    current = Path(os.path.abspath(start))
    while True:
        if probed.exists(current / ".kitsoki-root") or probed.kitsoki_go_module(current):
            return current
        if current.parent == current:
            return None
        current = current.parent


def resolve_source(source: str, importer_dir: Path, sources: Sources) -> Resolved:
    """The app.yaml a `source:` names (kitsoki's resolveImportSource); raises SourceError."""
    if source.startswith(KITSOKI_PREFIX):
        name = source[len(KITSOKI_PREFIX):]
        if not name or "/" in name or "\\" in name:
            raise SourceError(f'source "{source}": invalid @kitsoki name')
        if sources.kitsoki_repo is not None:
            candidate = sources.kitsoki_repo / "stories" / name / "app.yaml"
            if not probed.exists(candidate):
                raise SourceError(f'source "{source}": KITSOKI_REPO={sources.kitsoki_repo}: story "{name}" not found '
                                  f"(looked for {candidate})")
            return Resolved(candidate, "kitsoki-repo")
        root = find_repo_root(importer_dir)
        if root is not None:
            candidate = root / "stories" / name / "app.yaml"
            if not probed.exists(candidate):
                raise SourceError(f'source "{source}": stat {candidate}: no such file or directory')
            return Resolved(candidate, "checkout")
        if sources.library is not None:
            candidate = sources.library / f"{name}.json"
            if probed.exists(candidate):
                return Resolved(candidate, "library")
            raise SourceError(f'source "{source}": @kitsoki/{name}: not in the story library we carry '
                              f"(set KITSOKI_REPO to a kitsoki checkout)")
        raise SourceError(f'source "{source}": cannot resolve @kitsoki/<name>: no .kitsoki-root marker and no go.mod '
                          f"with module kitsoki (or */kitsoki) walking up from {importer_dir}")
    path = Path(source) if os.path.isabs(source) else importer_dir / source
    if probed.isdir(path):
        path = path / "app.yaml"
    return Resolved(Path(os.path.normpath(path)), "path")
