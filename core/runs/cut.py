"""Cutting the evidence stream into task snippets of at most 64 KiB of UTF-8, labels included.

A snippet is a sequence of (label, content): the label is one line naming the source session, file,
line and part, and the exact byte length of the content that follows, so stripping labels is exact
whatever the (untrusted) evidence contains. A piece that does not fit the room left starts the next
snippet; a piece bigger than a whole snippet is split across snippets on UTF-8 character boundaries.
Concatenating every snippet's contents reproduces the evidence stream byte for byte, in order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import orjson

SNIPPET_LIMIT = 64 * 1024
MIN_SPLIT = 4096
"""A long piece is begun in the current snippet only if at least this much room is left."""

LABEL = re.compile(
    rb'--- evidence session=("(?:[^"\\\n]|\\.)*") source=("(?:[^"\\\n]|\\.)*"):(\d+) '
    rb'part=(\d+) (continues|last) bytes=(\d+) ---\n')


def label(session: str, file: str, line: int, part: int, last: bool, size: int) -> bytes:
    return (f"--- evidence session={orjson.dumps(session).decode()} source={orjson.dumps(file).decode()}:{line} "
            f"part={part} {'last' if last else 'continues'} bytes={size} ---\n").encode()


def utf8_cut(data: bytes, start: int, limit: int) -> int:
    """The largest k <= limit with data[start:start + k] ending on a character boundary."""
    if start + limit >= len(data):
        return len(data) - start
    k = limit
    while k > 0 and (data[start + k] & 0xC0) == 0x80:
        k -= 1
    return k


@dataclass
class Snippet:
    index: int
    data: bytearray = field(default_factory=bytearray)
    first: str = ""
    last: str = ""
    sessions: list[str] = field(default_factory=list)


@dataclass
class CutStats:
    pieces: int = 0
    evidence_bytes: int = 0
    digest: object = field(default_factory=hashlib.sha256)


def cut(pieces: Iterable[tuple[str, str, int, str]], emit: Callable[[Snippet], None],
        limit: int = SNIPPET_LIMIT) -> CutStats:
    """Cut (session, file, line, text) pieces into snippets; `emit` gets each full snippet in order."""
    stats = CutStats()
    current = Snippet(1)

    def flush():
        nonlocal current
        if current.data:
            emit(current)
            current = Snippet(current.index + 1)

    for session, file, line, text in pieces:
        data = text.encode("utf-8")
        stats.pieces += 1
        stats.evidence_bytes += len(data)
        stats.digest.update(data)
        whole = len(label(session, file, line, 1, True, len(data))) + len(data)
        room = limit - len(current.data)
        if whole > room and whole <= limit:
            flush()
        elif whole > room and room < MIN_SPLIT:
            flush()
        pos, part = 0, 1
        while pos < len(data) or part == 1:
            room = limit - len(current.data)
            rest = len(data) - pos
            head = len(label(session, file, line, part, False, rest))
            if head + min(rest, 1) > room:
                flush()
                continue
            size = utf8_cut(data, pos, room - head) if rest > room - head else rest
            if size == 0 and rest:
                flush()
                continue
            last = pos + size == len(data)
            current.data += label(session, file, line, part, last, size) + data[pos:pos + size]
            source = f"{file}:{line}"
            current.first = current.first or source
            current.last = source
            if session not in current.sessions:
                current.sessions.append(session)
            pos += size
            part += 1
            if not last:
                flush()
            if last:
                break
    flush()
    return stats


def parse(snippet: bytes) -> Iterator[tuple[dict, bytes]]:
    """(label fields, content) of each part of a snippet; ValueError when it is not one."""
    pos = 0
    while pos < len(snippet):
        m = LABEL.match(snippet, pos)
        if m is None:
            raise ValueError(f"no evidence label at byte {pos}")
        size = int(m[6])
        start = m.end()
        if start + size > len(snippet):
            raise ValueError(f"the part at byte {pos} claims {size} bytes; only {len(snippet) - start} remain")
        fields = {"session": orjson.loads(m[1]), "file": orjson.loads(m[2]), "line": int(m[3]),
                  "part": int(m[4]), "last": m[5] == b"last", "bytes": size}
        yield fields, snippet[start:start + size]
        pos = start + size


def strip_labels(snippet: bytes) -> bytes:
    return b"".join(content for _, content in parse(snippet))
