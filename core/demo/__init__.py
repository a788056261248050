"""The embedded demo: example transcripts shipped as package data, used when a user has none yet."""

from pathlib import Path

_HERE = Path(__file__).parent


def demo_transcripts() -> Path:
    """Folder of bundled example transcripts (Claude Code and Pi)."""
    return _HERE / "transcripts"
