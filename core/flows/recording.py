"""Recordings: how kitsoki routes a machine-only flow's `input:` turns (`recording:`).

A `kind: recording` file (internal/harness/replay.go) maps (state, input) to an intent call:
the exact text first, then the text lowercased and trimmed. A miss, or an entry that records a
clarification, stops kitsoki's run. Without a recording kitsoki stops at the first `input:`
turn (`input "..." requires a recording but none was loaded`), and so does the built-in runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.flows.values import go_quote
from core.flows.yaml12 import Yaml12Loader
from core.safeio import read_regular

MAX_BYTES = 8 << 20


class RecordingError(Exception):
    """kitsoki would refuse the recording or miss in it (its run stops)."""


@dataclass
class Recording:
    exact: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    normalized: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def route(self, state: str, text: str) -> tuple[str, dict[str, Any]]:
        entry = self.exact.get((state, text)) or self.normalized.get((state, text.strip().lower()))
        if entry is None:
            raise RecordingError(f"recording miss for input {go_quote(text)} in state {go_quote(state)}")
        if entry.get("clarify"):
            raise RecordingError(f"recording for input {go_quote(text)} in state {go_quote(state)} asks to clarify")
        intent = entry.get("intent") or {}
        slots = intent.get("slots")
        return str(intent.get("name")), dict(slots) if isinstance(slots, dict) else {}


def load_recording(path: Path) -> Recording:
    try:
        data = yaml.load(read_regular(path, MAX_BYTES, what="recording").decode("utf-8"), Loader=Yaml12Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RecordingError(f"load recording {go_quote(str(path))}: {exc}") from None
    data = data if isinstance(data, dict) else {}
    if data.get("kind") != "recording":
        raise RecordingError(f"load recording {go_quote(str(path))}: unexpected kind {go_quote(str(data.get('kind') or ''))} "
                             '(want "recording")')
    entries = data.get("entries") or []
    if not entries:
        raise RecordingError(f"load recording {go_quote(str(path))}: has no entries")
    recording = Recording()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("state") or not entry.get("input"):
            raise RecordingError(f"load recording {go_quote(str(path))}: entry {index} has empty state or input")
        name = (entry.get("intent") or {}).get("name") if isinstance(entry.get("intent"), dict) else None
        if entry.get("clarify") and name:
            raise RecordingError(f"load recording {go_quote(str(path))}: entry {index} sets clarify:true and intent.name")
        if not entry.get("clarify") and not name:
            raise RecordingError(f"load recording {go_quote(str(path))}: entry {index} has empty intent name")
        state, text = str(entry["state"]), str(entry["input"])
        recording.exact.setdefault((state, text), entry)
        recording.normalized.setdefault((state, text.strip().lower()), entry)
    return recording
