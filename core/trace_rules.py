"""How kitsoki opens a trace (internal/store/jsonl.go, loadAndValidate and splitLines at 1f4abf0e):
the rules core.trace reads every trace by, so a trace kitsoki refuses is refused here too, with its
reason, and never read silently."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

HEADER_KIND = "session.header"
SCHEMA_VERSION = 1


class TraceCorrupt(ValueError):
    """The trace is one kitsoki refuses to open (internal/store/jsonl.go loadAndValidate and
    splitLines at 1f4abf0e): no trailing newline, a CRLF line, a NUL byte, no session header on
    line 1, a newer schema_version, a second header, a line that is not an event, a turn before an
    earlier one, a duplicate, out-of-order or gapped seq within a turn. The message is kitsoki's,
    naming the file and line; nothing is read from such a trace."""


_SKIP = object()
_INT_FIELDS = ("turn", "seq", "parent_turn", "match_idx")
_STRING_FIELDS = ("kind", "state_path", "call_id", "episode_id")
_GO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


class KitsokiReader:
    """kitsoki's rules for opening a trace, applied line by line as the file streams."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.physical = 0
        self.count = 0
        """Non-blank lines so far (kitsoki numbers events by them: the header is line 1)."""
        self.max_turn = 0
        self.seqs: dict[int, int] = {}

    def refuse(self, message: str) -> TraceCorrupt:
        return TraceCorrupt(f'store/jsonl: "{self.path}": {message}')

    def line(self, line: Any) -> Any:
        """Check one raw line (core.trace._RawLine: data, complete, oversized); the parsed object, or
        _SKIP for a blank line; TraceCorrupt where kitsoki refuses."""
        self.physical += 1
        if not line.complete:
            raise self.refuse("trace corrupted: missing trailing newline at EOF")
        if not line.data:
            return _SKIP  # kitsoki skips empty lines (a line of spaces is not empty: it is not JSON)
        if line.data.endswith(b"\r"):
            raise self.refuse(f"trace corrupted: CRLF line ending at line {self.physical} (JSONL requires LF-only)")
        if b"\0" in line.data:
            raise self.refuse(f"trace corrupted: NUL byte in line {self.physical}")
        self.count += 1
        number = self.count
        if line.oversized:
            return {}  # too long to hold; kitsoki reads it whole, we skip it (counted)
        try:
            obj = orjson.loads(line.data)
        except orjson.JSONDecodeError as exc:
            raise self.refuse(f"line {number} is not valid JSON: {exc}") from None
        if number == 1:
            kind = obj.get("kind") if type(obj) is dict else None
            if kind != HEADER_KIND:
                raise self.refuse(f'trace missing session.header on line 1 (got kind="{kind or ""}")')
            version = obj.get("schema_version")
            if type(version) is int and version > SCHEMA_VERSION:
                raise self.refuse(f"schema_version {version} on disk exceeds highest supported {SCHEMA_VERSION}")
            return obj
        if obj is None:
            obj = {}
        if type(obj) is not dict:
            raise self.refuse(f"line {number}: unmarshal event: json: cannot unmarshal {_json_kind(obj)} into Go value "
                              "of type store.Event")
        if obj.get("kind") == HEADER_KIND:
            raise self.refuse(f"duplicate session.header at line {number}")
        for name in _INT_FIELDS:
            value = obj.get(name)
            if value is not None and (type(value) is not int):
                raise self.refuse(f"line {number}: unmarshal event: json: cannot unmarshal {_json_kind(value)} into Go "
                                  f"struct field Event.{name}")
        for name in _STRING_FIELDS:
            value = obj.get(name)
            if value is not None and type(value) is not str:
                raise self.refuse(f"line {number}: unmarshal event: json: cannot unmarshal {_json_kind(value)} into Go "
                                  f"struct field Event.{name} of type string")
        ts = obj.get("ts")
        if ts is not None and (type(ts) is not str or not _GO_TIME.match(ts)):
            raise self.refuse(f"line {number}: unmarshal event: parsing time {orjson.dumps(ts).decode()} as "
                              '"2006-01-02T15:04:05Z07:00"')
        turn, seq = obj.get("turn") or 0, obj.get("seq") or 0
        if turn < self.max_turn:
            raise self.refuse(f"out-of-order turn at line {number}: turn={turn} arrives after turn={self.max_turn} "
                              "(cross-turn ordering violation)")
        self.max_turn = max(self.max_turn, turn)
        previous = self.seqs.get(turn)
        if previous is not None:
            if seq == previous:
                raise self.refuse(f"duplicate (turn,seq) at line {number}: turn={turn} seq={seq}")
            if seq < previous:
                raise self.refuse(f"out-of-order (turn,seq) at line {number}: turn={turn} seq={seq} (previous "
                                  f"seq={previous})")
            if seq != previous + 1:
                raise self.refuse(f"gap in seq within turn {turn} at line {number}: expected seq {previous + 1}, "
                                  f"got {seq}")
        elif seq != 0:
            raise self.refuse(f"gap in seq within turn {turn} at line {number}: expected seq 0, got {seq}")
        self.seqs[turn] = seq
        return obj


def _json_kind(value: Any) -> str:
    return {list: "array", str: "string", bool: "bool", float: "number", int: "number", dict: "object"}.get(
        type(value), "value")
